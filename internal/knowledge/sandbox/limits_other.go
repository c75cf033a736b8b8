//go:build !linux

package sandbox

import (
	"syscall"
)

// childAttr sets nothing outside Linux.
func childAttr() *syscall.SysProcAttr { return nil }
