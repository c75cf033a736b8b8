//go:build !linux

package filetools

import (
	"os"
	"syscall"
)

// procAttr is the default: prlimit, which the PDF tools run through, is Linux's.
func procAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the process.
func killGroup(p *os.Process) error { return p.Kill() }
