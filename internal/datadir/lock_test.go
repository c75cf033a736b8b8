//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAcquire: a held data directory is refused at once, naming it and the holder's pid, and
// can be taken again once released; the lock file stays, emptied.
func TestAcquire(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, LockFileName)
	if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q, %v; want this pid", b, err)
	}

	// flock locks belong to an open file, so a second open in this process is refused as
	// another process's would be.
	second, err := Acquire(dir)
	if err == nil {
		second.Release()
		t.Fatal("a held data directory was taken again")
	}
	msg := err.Error()
	if !errors.Is(err, errInUse) || !strings.Contains(msg, dir) || !strings.Contains(msg, "another parley serve") ||
		!strings.Contains(msg, "(pid "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("refusal: %v", err)
	}

	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) != 0 {
		t.Fatalf("lock file after release: %q, %v", b, err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
}

// TestAcquireMissingDir: a directory that does not exist is an error, not a lock.
func TestAcquireMissingDir(t *testing.T) {
	if l, err := Acquire(filepath.Join(t.TempDir(), "nope")); err == nil {
		l.Release()
		t.Fatal("locked a missing directory")
	}
}
