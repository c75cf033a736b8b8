package parleytest

import (
	"testing"
	"time"
)

// Budget is what one operation of a hot path (a request, a run, an agent step) may cost, in
// counts that do not depend on the machine: heap allocations and SQL statements. A change that
// adds work fails the test that pins a budget; raise it on purpose, in its own commit, saying
// why.
type Budget struct {
	Allocs     float64
	Statements float64
}

// CheckBudget runs op runs times and fails tb when, per run, it allocated more than b.Allocs
// (every goroutine of the process counts: the server's and an in-process fake upstream's
// alike) or sent more than b.Statements statements, as statements reports them. Work op leaves
// running (a stored outcome after a response) is waited for: the count is read once it has not
// moved for a moment. Allocations are not checked under the race detector, which adds its own.
// It logs the measured figures, for the comments beside the budgets.
func CheckBudget(tb testing.TB, b Budget, runs int, statements func() uint64, op func()) {
	tb.Helper()
	op() // warm-up: caches, prepared statements, pools
	stmts := min(countStatements(runs, statements, op), countStatements(runs, statements, op))
	allocs := testing.AllocsPerRun(runs, op)
	settle(statements)
	tb.Logf("per run: %.1f allocations (budget %.0f), %.2f statements (budget %.0f)", allocs, b.Allocs, stmts, b.Statements)
	if stmts > b.Statements {
		tb.Errorf("%.2f SQL statements per run, over the budget of %.0f: remove the new statements, or raise the budget on purpose, in its own commit, saying why", stmts, b.Statements)
	}
	if !RaceEnabled && allocs > b.Allocs {
		tb.Errorf("%.1f allocations per run, over the budget of %.0f: remove the new allocations, or raise the budget on purpose, in its own commit, saying why", allocs, b.Allocs)
	}
}

// countStatements is the statements per run of op over runs runs.
//
// CheckBudget takes the lower of two such counts: a statement that belongs to no run, but
// lands in a window now and then (a worker's poll, a retry of a write SQLite found busy, on a
// machine loaded enough to stall for a second), then fails no test, while a statement op adds
// shows in both windows.
func countStatements(runs int, statements func() uint64, op func()) float64 {
	before := settle(statements)
	for range runs {
		op()
	}
	return float64(settle(statements)-before) / float64(runs)
}

// settle waits until the statement count has not moved for 50 ms (at most 5 s) and returns it.
func settle(statements func() uint64) uint64 {
	last, still := statements(), time.Now()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		if n := statements(); n != last {
			last, still = n, time.Now()
		} else if time.Since(still) >= 50*time.Millisecond {
			break
		}
	}
	return last
}
