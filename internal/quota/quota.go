// Package quota counts what keys and apps use against their rate limits: requests per minute,
// tokens and workflow runs per day, in fixed windows (the minute, the UTC day). A count that
// must not pass its limit is taken in one atomic step (Take), so a limit holds exactly however
// many requests race for it; what a run spent is added after the fact (Add).
//
// Local counts in the process (a single server, SQLite); redisquota counts in a Redis that
// replicas share, so a limit holds across all of them.
package quota

import (
	"context"
	"sync"
	"time"
)

// Window is a fixed counting window.
type Window int

// Windows.
const (
	Minute Window = iota
	Day
)

// Bounds is the window of w that holds now: its start and its end (when the count resets).
func (w Window) Bounds(now time.Time) (start, end time.Time) {
	now = now.UTC()
	if w == Day {
		start = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	}
	start = now.Truncate(time.Minute)
	return start, start.Add(time.Minute)
}

// Result is the state of a count after Take.
type Result struct {
	// Allowed says the count was taken: it stays within the limit.
	Allowed bool
	// Limit is the limit; Remaining what is left of it in the window (never below 0).
	Limit, Remaining int64
	// Reset is when the window ends and the count starts again.
	Reset time.Time
}

// Counter counts against limits. Keys are the caller's ("rpm:key:<id>"); a counter keeps each
// key's count per window and forgets past windows.
type Counter interface {
	// Take adds n to key's count in the current window of w if the count stays within limit,
	// and says what is left either way.
	Take(ctx context.Context, key string, w Window, limit, n int64) (Result, error)
	// Add adds n to key's count in the current window of w, whatever the limit: what a run
	// spent, known when it ended.
	Add(ctx context.Context, key string, w Window, n int64) error
	// Used is key's count in the current window of w, and when the window ends.
	Used(ctx context.Context, key string, w Window) (int64, time.Time, error)
}

// result is the Result of a count after a take of n against limit.
func result(count, limit int64, allowed bool, reset time.Time) Result {
	return Result{Allowed: allowed, Limit: limit, Remaining: max(0, limit-count), Reset: reset}
}

// Local is the Counter of one process. It is safe for concurrent use.
type Local struct {
	mu     sync.Mutex
	counts map[localKey]int64
	now    func() time.Time
	// swept is the start of the latest day window swept of past windows.
	swept time.Time
}

type localKey struct {
	key   string
	w     Window
	start int64 // the window's start, Unix seconds
}

var _ Counter = (*Local)(nil)

// NewLocal returns an empty Local counter.
func NewLocal() *Local { return &Local{counts: map[localKey]int64{}, now: time.Now} }

// Take implements Counter.
func (l *Local) Take(_ context.Context, key string, w Window, limit, n int64) (Result, error) {
	start, end := w.Bounds(l.now())
	k := localKey{key, w, start.Unix()}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	c := l.counts[k]
	if c+n > limit {
		return result(c, limit, false, end), nil
	}
	l.counts[k] = c + n
	return result(c+n, limit, true, end), nil
}

// Add implements Counter.
func (l *Local) Add(_ context.Context, key string, w Window, n int64) error {
	start, _ := w.Bounds(l.now())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep()
	l.counts[localKey{key, w, start.Unix()}] += n
	return nil
}

// Used implements Counter.
func (l *Local) Used(_ context.Context, key string, w Window) (int64, time.Time, error) {
	start, end := w.Bounds(l.now())
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[localKey{key, w, start.Unix()}], end, nil
}

// sweep drops the counts of windows that ended, once a minute at most: a minute's counts are
// dropped when the next minute starts being counted, a day's when the next day does.
func (l *Local) sweep() {
	now := l.now()
	minute, _ := Minute.Bounds(now)
	if !minute.After(l.swept) {
		return
	}
	l.swept = minute
	day, _ := Day.Bounds(now)
	for k := range l.counts {
		if k.w == Minute && k.start < minute.Unix() || k.w == Day && k.start < day.Unix() {
			delete(l.counts, k)
		}
	}
}
