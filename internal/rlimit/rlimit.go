// Package rlimit holds a child process (a document parser, a code-node worker) to kernel resource
// limits it cannot raise again.
package rlimit

import "time"

// Limits are the limits of a process; a zero field sets no limit.
type Limits struct {
	// CPU is the CPU time; rounded up to whole seconds. At the soft limit the kernel sends
	// SIGXCPU, which a Go program ignores unless it asks for it, and a second later, at the hard
	// limit, SIGKILL.
	CPU time.Duration
	// Memory is the memory budget in bytes: the garbage collector's limit, and the address
	// space the process may add to what it has reserved already.
	Memory int64
	// FileSize caps the size of a file the process writes.
	FileSize int64
	// OpenFiles caps the open file descriptors.
	OpenFiles int
	// NoCore forbids core dumps.
	NoCore bool
}
