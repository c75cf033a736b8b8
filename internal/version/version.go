// Package version says which Parley this binary is: the version a release build sets with the
// linker, or the one the Go toolchain recorded from the version control system it was built in.
package version

import (
	"runtime/debug"
	"sync"
)

// version is set by a release build:
//
//	go build -ldflags "-X github.com/parleyhq/parley/internal/version.version=v1.2.3" ./cmd/parley
var version string

// Unknown is the version of a binary built with neither a linker setting nor version control
// information (a build from a copy of the sources without their .git directory, or go run).
const Unknown = "dev"

var resolved = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, bi)
})

// String is this binary's version: the linker's setting, else the main module's version as the
// toolchain recorded it (a tag, or a pseudo-version made of the commit's time and hash, with
// "+dirty" for uncommitted changes), else the commit it was built from, else Unknown.
func String() string { return resolved() }

func resolve(linked string, bi *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if bi == nil {
		return Unknown
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return Unknown
	}
	return "devel-" + rev[:min(12, len(rev))] + dirty
}
