package eventlog

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Local is a Log in the process's memory.
type Local struct {
	lim  Limits
	mu   sync.Mutex
	runs map[string]*localRun
}

type localRun struct {
	// entries[i] has sequence number first+i; segStart is the sequence of the latest
	// segment's first event.
	entries  []Entry
	first    int
	segStart int
	segments int
	tag      string
	// waiters are the readers waiting in Next: a run that has none and never began is removed
	// when the last one leaves.
	waiters int
	ended   bool
	// changed is closed and replaced when an event arrives or a segment begins or ends.
	changed chan struct{}
	expiry  *time.Timer
}

// NewLocal returns an empty Local.
func NewLocal(lim Limits) *Local {
	return &Local{lim: lim.withDefaults(), runs: map[string]*localRun{}}
}

func (l *Local) run(id string) *localRun {
	r := l.runs[id]
	if r == nil {
		r = &localRun{changed: make(chan struct{})}
		l.runs[id] = r
	}
	return r
}

func (r *localRun) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Begin implements Log.
func (l *Local) Begin(_ context.Context, runID, tag string) (Writer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.run(runID)
	if r.expiry != nil {
		r.expiry.Stop()
		r.expiry = nil
	}
	r.segStart, r.ended = r.first+len(r.entries), false
	r.segments++
	r.tag = tag
	r.signal()
	return &localWriter{l: l, id: runID, r: r, start: r.segStart, seg: r.segments}, nil
}

// Start implements Log.
func (l *Local) Start(_ context.Context, runID string) (Start, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[runID]
	if r == nil || r.segments == 0 {
		return Start{Cursor: "0"}, nil
	}
	return Start{Cursor: Cursor(strconv.Itoa(r.segStart)), Found: true, Tag: r.tag}, nil
}

// Next implements Log.
func (l *Local) Next(ctx context.Context, runID string, cur Cursor, wait time.Duration) ([]Entry, Cursor, error) {
	n, err := strconv.Atoi(string(cur))
	if err != nil || n < 0 {
		n = 0
	}
	var timer *time.Timer
	for {
		l.mu.Lock()
		r := l.run(runID)
		if n < r.first {
			n = r.first // trimmed: from the oldest kept
		}
		if i := n - r.first; i < len(r.entries) {
			out := append([]Entry(nil), r.entries[i:]...)
			l.mu.Unlock()
			return out, Cursor(strconv.Itoa(n + len(out))), nil
		}
		changed := r.changed
		r.waiters++
		l.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		var err error
		ended := true
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-timer.C:
		case <-changed:
			ended = false
		}
		l.mu.Lock()
		if r.waiters--; r.waiters == 0 && r.segments == 0 && l.runs[runID] == r {
			delete(l.runs, runID)
		}
		l.mu.Unlock()
		if ended {
			return nil, Cursor(strconv.Itoa(n)), err
		}
	}
}

type localWriter struct {
	l       *Local
	id      string
	r       *localRun
	bytes   int64
	dropped bool
	// start and seg are the segment's first sequence number and its count among the run's.
	start, seg int
}

func (w *localWriter) Append(e Entry, final bool) {
	w.bytes += int64(len(e.Data))
	if w.bytes > w.l.lim.MaxBytes && !final {
		return
	}
	e.Data = append([]byte(nil), e.Data...)
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	r := w.r
	r.entries = append(r.entries, e)
	if over := len(r.entries) - w.l.lim.MaxEvents; over > 0 {
		r.entries = append(r.entries[:0:0], r.entries[over:]...)
		r.first += over
	}
	r.signal()
}

func (w *localWriter) End(keep bool) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	r := w.r
	if r.segments != w.seg {
		return // a newer segment began: it owns the run's events now
	}
	r.ended = true
	r.signal()
	if !keep {
		if w.l.runs[w.id] == r {
			delete(w.l.runs, w.id)
		}
		return
	}
	if r.expiry != nil {
		r.expiry.Stop()
	}
	r.expiry = time.AfterFunc(w.l.lim.Keep, func() {
		w.l.mu.Lock()
		defer w.l.mu.Unlock()
		if w.l.runs[w.id] == r && r.ended {
			delete(w.l.runs, w.id)
			r.signal()
		}
	})
}

// Runs is how many runs the log holds (for tests and metrics).
func (l *Local) Runs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}
