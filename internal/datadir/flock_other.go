//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package datadir

import "os"

// tryLock takes no lock on systems without flock: there the data directory is not guarded,
// and nothing stops a second server on it. Parley is built for Linux.
func tryLock(*os.File) (bool, error) { return true, nil }
