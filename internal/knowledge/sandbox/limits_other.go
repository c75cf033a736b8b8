//go:build !linux

package sandbox

import (
	"runtime/debug"
	"syscall"
	"time"
)

// childAttr sets nothing outside Linux.
func childAttr() *syscall.SysProcAttr { return nil }

// applyLimits gives the garbage collector the memory budget. Kernel limits are applied on Linux
// only; elsewhere the parent's wall-clock deadline is what stops a runaway child.
func applyLimits(_ time.Duration, memory int64) error {
	if memory > 0 {
		debug.SetMemoryLimit(memory)
	}
	return nil
}
