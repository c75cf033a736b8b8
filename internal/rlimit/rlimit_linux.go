//go:build linux

package rlimit

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

// Apply holds this process to l. Soft and hard limits are both lowered, never raised, so the
// process cannot raise them again.
//
// Memory: RLIMIT_AS counts address space, and the Go runtime reserves a large amount of it
// before the first allocation (over 1 GB on amd64), so the limit is what is reserved now plus
// the budget; past it the runtime cannot grow the heap and exits with "out of memory". The
// garbage collector is told the same budget, so it works harder before that happens.
func Apply(l Limits) error {
	if l.NoCore {
		if err := lower(syscall.RLIMIT_CORE, 0, 0); err != nil {
			return fmt.Errorf("core: %w", err)
		}
	}
	if l.CPU > 0 {
		secs := uint64((l.CPU + time.Second - 1) / time.Second)
		if err := lower(syscall.RLIMIT_CPU, secs, secs+1); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
	}
	if l.FileSize > 0 {
		if err := lower(syscall.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize)); err != nil {
			return fmt.Errorf("file size: %w", err)
		}
	}
	if l.OpenFiles > 0 {
		if err := lower(syscall.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)); err != nil {
			return fmt.Errorf("open files: %w", err)
		}
	}
	if l.Memory > 0 {
		debug.SetMemoryLimit(l.Memory)
		reserved, err := addressSpace()
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		lim := uint64(reserved + l.Memory)
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
