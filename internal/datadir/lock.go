// Package datadir guards the data directory of a server on SQLite: one `parley serve` owns it
// for as long as it runs. A server that starts on it therefore knows that no other server is
// alive there, and that the runs it finds running were cut by the end of its predecessor.
//
// The guard is an advisory lock (flock) on a file in the directory, held through an open file
// descriptor: the kernel releases it when the process ends, however it ends (kill -9
// included), so a crash never leaves a stale lock behind. The file is never removed, since a
// process that removed it could leave two others each holding a lock on a different file. It
// holds the pid of the server that last took it, for the message of the one refused.
// Descriptors are opened close-on-exec, so child processes (document extraction, code
// workers) never hold the lock after their parent is gone.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFileName is the file of the lock in the data directory.
const LockFileName = "serve.lock"

// errInUse is the cause of Acquire's failure when another process holds the lock.
var errInUse = errors.New("in use")

// Lock is a data directory held by this process.
type Lock struct{ f *os.File }

// Acquire takes the data directory dir, which must exist, for this process until Release, or
// fails at once, naming dir and the pid of the holder, if another process holds it.
func Acquire(dir string) (*Lock, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("lock the data directory %s: %w", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the data directory %s: %w", dir, err)
	}
	if !held {
		holder := ""
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		return nil, fmt.Errorf("data directory %s is %w by another parley serve%s: on SQLite one server owns a data "+
			"directory; stop that server first, or give this one its own PARLEY_DATA_DIR", dir, errInUse, holder)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the data directory up. It may be called more than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	// The pid goes first, while the lock is still held.
	_ = l.f.Truncate(0)
	err := l.f.Close()
	l.f = nil
	return err
}
