package sandbox

import (
	"syscall"
)

// childAttr makes the kernel kill the child when the parent dies: a server killed mid-indexing
// leaves no parser running. The signal follows the death of the OS thread that started the
// child, so Extract holds its goroutine on that thread until the child is gone.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
