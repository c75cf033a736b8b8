//go:build !linux

package rlimit

import "runtime/debug"

// Apply gives the garbage collector the memory budget. Kernel limits are applied on Linux only;
// elsewhere the parent's wall-clock deadline is what stops a runaway child.
func Apply(l Limits) error {
	if l.Memory > 0 {
		debug.SetMemoryLimit(l.Memory)
	}
	return nil
}
