package parleytest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the user and system CPU time this process has used: a benchmark reports its
// difference per operation as cpu-ns/op, the figure that counts the work of every goroutine
// (background jobs included), where ns/op is only the wall time of the loop.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
