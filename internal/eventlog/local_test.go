package eventlog_test

import (
	"context"
	"fmt"
	"time"

	"testing"

	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/eventlog/eventlogtest"
)

func TestLocalContract(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T, lim eventlog.Limits) (eventlog.Log, eventlog.Log) {
		l := eventlog.NewLocal(lim)
		return l, l
	})
}

// TestLocalForgetsRunsNobodyWaitsFor: a reader of a run that never began leaves nothing behind.
func TestLocalForgetsRunsNobodyWaitsFor(t *testing.T) {
	l := eventlog.NewLocal(eventlog.DefaultLimits)
	for i := range 100 {
		if _, _, err := l.Next(context.Background(), fmt.Sprint("run-", i), "0", time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Runs(); n != 0 {
		t.Fatalf("%d runs kept after their readers left; want 0", n)
	}
}
