// Package eventlog keeps the events of each workflow run's latest segments for the events
// operation, so that a client can attach to a run's stream after it started: it reads the
// current segment from its first event, then follows it live, then the segments after it. Log
// is the interface; Local keeps the events in the process (one server), redislog in a Redis
// stream per run that every replica reads. docs/replicas.md describes both.
package eventlog

import (
	"context"
	"time"
)

// Entry is one event of a run, encoded as its stream sends it.
type Entry struct {
	// Event is the event's name (workflow_finished, message, …).
	Event string
	// Data is the event's JSON, as written after `data: `.
	Data []byte
}

// Log stores and serves the events of runs.
type Log interface {
	// Begin starts a new segment of runID's events (a run, or the resumption of a paused one),
	// with a tag its readers get from Start.
	Begin(ctx context.Context, runID, tag string) (Writer, error)
	// Start returns where a new reader of runID starts: before the first event of its latest
	// segment, or (Found false) before the first event of a segment yet to come.
	Start(ctx context.Context, runID string) (Start, error)
	// Next returns the events after cur and the cursor after them, waiting up to wait for one
	// when there is none (then it returns none and cur).
	Next(ctx context.Context, runID string, cur Cursor, wait time.Duration) ([]Entry, Cursor, error)
}

// Writer appends the events of one segment. Its methods are called from one goroutine.
type Writer interface {
	// Append adds an event. Past the log's bounds, events are dropped, except those with final
	// set (the ones that end a stream).
	Append(e Entry, final bool)
	// End marks the segment over. With keep its events stay readable for the log's keep time;
	// without, the run's events go at once, unless a newer segment began meanwhile.
	End(keep bool)
}

// Start is where a reader starts.
type Start struct {
	Cursor Cursor
	// Found says whether the run has a segment; Tag is the one it began with.
	Found bool
	Tag   string
}

// Cursor is a position in a run's log, opaque to readers.
type Cursor string

// Limits bound what a log keeps per run.
type Limits struct {
	// MaxEvents is how many events of a run are kept (the oldest go first).
	MaxEvents int
	// MaxBytes is how many bytes of event data a segment may add; later events are dropped,
	// except the final ones.
	MaxBytes int64
	// Keep is how long a run's events stay after its segment ended.
	Keep time.Duration
}

// Defaults: 10 000 events, 16 MiB per segment, 5 minutes after the end.
var DefaultLimits = Limits{MaxEvents: 10000, MaxBytes: 16 << 20, Keep: 5 * time.Minute}

func (l Limits) withDefaults() Limits {
	if l.MaxEvents <= 0 {
		l.MaxEvents = DefaultLimits.MaxEvents
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.Keep <= 0 {
		l.Keep = DefaultLimits.Keep
	}
	return l
}

// WithDefaults is l with its zero members set from DefaultLimits.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }
