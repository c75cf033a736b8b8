package filetools

import (
	"os"
	"syscall"
)

// procAttr puts a poppler program in a process group of its own, and has the kernel kill it
// when the thread that started it (the server) dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process and the group it leads.
func killGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
