package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

// childAttr makes the kernel kill the child when the parent dies: a server killed mid-indexing
// leaves no parser running. The signal follows the death of the OS thread that started the
// child, so Extract holds its goroutine on that thread until the child is gone.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// applyLimits holds this process to cpu of CPU time and memory bytes of memory (0: no limit).
//
// CPU: at the soft limit the kernel sends SIGXCPU, which a Go program ignores unless it asks for
// it, and a second later, at the hard limit, SIGKILL.
//
// Memory: RLIMIT_AS counts address space, and the Go runtime reserves a large amount of it
// before the first allocation (over 1 GB on amd64), so the limit is what is reserved now plus
// memory; past it the runtime cannot grow the heap and exits with "out of memory". The garbage
// collector is told the same budget, so it works harder before that happens.
func applyLimits(cpu time.Duration, memory int64) error {
	if cpu > 0 {
		secs := uint64((cpu + time.Second - 1) / time.Second)
		if err := lower(syscall.RLIMIT_CPU, secs, secs+1); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
	}
	if memory > 0 {
		debug.SetMemoryLimit(memory)
		reserved, err := addressSpace()
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		lim := uint64(reserved + memory)
		if err := lower(syscall.RLIMIT_AS, lim, lim); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	return nil
}

// lower sets a resource limit, never above the limits the process already has (raising a hard
// limit needs privileges).
func lower(resource int, cur, max uint64) error {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(resource, &old); err != nil {
		return err
	}
	max = min(max, old.Max)
	cur = min(cur, max, old.Cur)
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: cur, Max: max})
}

// addressSpace returns the process's current virtual memory size in bytes.
func addressSpace() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:"))
		if !ok {
			continue
		}
		kb, ok := bytes.CutSuffix(bytes.TrimSpace(rest), []byte(" kB"))
		if !ok {
			break
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(kb)), 10, 64)
		if err != nil {
			return 0, err
		}
		return n << 10, nil
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}
