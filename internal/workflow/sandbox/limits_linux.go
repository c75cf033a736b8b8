//go:build linux

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
)

// applyLimits holds the worker process to its limits; the hard limits are lowered too, so the
// code cannot raise them again.
//
// Memory: RLIMIT_AS counts address space, and the Go runtime reserves a good deal before the
// first allocation, so the limit is what is reserved now plus the budget. The garbage collector
// is told the same budget. Past it the runtime cannot grow the heap and dies with "out of
// memory", which the parent reports as the memory limit.
//
// CPU: at the soft limit the kernel sends SIGXCPU, which a Go program ignores, and at the hard
// limit a second later SIGKILL.
func applyLimits(memory, cpuSecs, fsize int64, nofile int) error {
	if err := setLimit(syscall.RLIMIT_CORE, 0, 0); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	if cpuSecs > 0 {
		if err := setLimit(syscall.RLIMIT_CPU, uint64(cpuSecs), uint64(cpuSecs)+1); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
	}
	if fsize > 0 {
		if err := setLimit(syscall.RLIMIT_FSIZE, uint64(fsize), uint64(fsize)); err != nil {
			return fmt.Errorf("file size: %w", err)
		}
	}
	if nofile > 0 {
		if err := setLimit(syscall.RLIMIT_NOFILE, uint64(nofile), uint64(nofile)); err != nil {
			return fmt.Errorf("open files: %w", err)
		}
	}
	if memory > 0 {
		debug.SetMemoryLimit(memory)
		reserved, err := addressSpace()
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		lim := uint64(reserved + memory)
		if err := setLimit(syscall.RLIMIT_AS, lim, lim); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	return nil
}

// setLimit sets a resource limit, never above the limits the process already has.
func setLimit(resource int, cur, max uint64) error {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(resource, &old); err != nil {
		return err
	}
	max = min(max, old.Max)
	cur = min(cur, max)
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
