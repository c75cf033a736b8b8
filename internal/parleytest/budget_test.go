package parleytest

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// errorsTB is a testing.TB that keeps the errors reported to it instead of failing.
type errorsTB struct {
	testing.TB
	errors []string
}

func (tb *errorsTB) Helper()             {}
func (tb *errorsTB) Logf(string, ...any) {}
func (tb *errorsTB) Errorf(format string, a ...any) {
	tb.errors = append(tb.errors, fmt.Sprintf(format, a...))
}

// checkStatements runs CheckBudget on an op that sends perRun statements, with one statement
// more sent during the call numbered stray (none for 0), and returns the errors it reported.
func checkStatements(t *testing.T, perRun uint64, stray int) []string {
	var n atomic.Uint64
	calls := 0
	tb := &errorsTB{TB: t}
	CheckBudget(tb, Budget{Allocs: 1e9, Statements: 2}, 10, n.Load, func() {
		calls++
		n.Add(perRun)
		if calls == stray {
			n.Add(1)
		}
	})
	return tb.errors
}

func TestCheckBudgetStatements(t *testing.T) {
	// A statement that belongs to no run (the 5th call is in the first window) fails nothing.
	if errs := checkStatements(t, 2, 5); len(errs) != 0 {
		t.Errorf("a stray statement in one window: %q", errs)
	}
	// A statement every run adds fails the budget.
	if errs := checkStatements(t, 3, 0); len(errs) != 1 {
		t.Errorf("3 statements per run against a budget of 2: errors %q, want one", errs)
	}
}
