// Package redislog is an eventlog.Log in Redis, shared by every replica: one stream per run
// (`<prefix>events:<run id>`, bounded by XADD MAXLEN) holds its events and segment marks, and
// `<prefix>events:<run id>:seg` the id of the latest segment's mark and its tag. Readers tail the stream
// with XREAD BLOCK from the segment's start. Both keys expire a while after a segment ends.
package redislog

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/redisx"
)

// runningTTL is how long a run's keys live while a segment runs; every write renews it, so only
// a replica that died mid-segment leaves keys that expire this way.
const runningTTL = time.Hour

// maxBlock bounds one XREAD BLOCK: a reader whose client went away gives its connection back
// within it (a blocked read does not see its context end).
const maxBlock = time.Second

// maxBatch is how many events a writer sends per round trip, and a reader reads per XREAD.
const maxBatch = 256

// Log is an eventlog.Log in Redis.
type Log struct {
	c      redis.UniversalClient
	prefix string
	lim    eventlog.Limits
	log    *slog.Logger
}

// New returns a Log on c with keys under prefix. Readers block on c for up to their wait, one
// connection each: give it a pool of its own, sized for the streams a replica serves at once.
func New(c redis.UniversalClient, prefix string, lim eventlog.Limits, log *slog.Logger) *Log {
	if log == nil {
		log = slog.Default()
	}
	return &Log{c: c, prefix: prefix, lim: lim.WithDefaults(), log: log}
}

func (l *Log) stream(runID string) string { return l.prefix + "events:" + runID }
func (l *Log) seg(runID string) string    { return l.prefix + "events:" + runID + ":seg" }

// Begin implements eventlog.Log.
func (l *Log) Begin(ctx context.Context, runID, tag string) (eventlog.Writer, error) {
	id, err := l.c.XAdd(ctx, &redis.XAddArgs{Stream: l.stream(runID), MaxLen: int64(l.lim.MaxEvents), Approx: true,
		Values: []any{"m", "begin"}}).Result()
	if err != nil {
		return nil, redisx.Classify(err)
	}
	p := l.c.TxPipeline()
	p.Set(ctx, l.seg(runID), id+" "+tag, runningTTL)
	p.Expire(ctx, l.stream(runID), runningTTL)
	if _, err := p.Exec(ctx); err != nil {
		return nil, redisx.Classify(err)
	}
	w := &writer{l: l, runID: runID, begin: id, in: make(chan item, maxBatch), done: make(chan struct{})}
	go w.loop()
	return w, nil
}

// Start implements eventlog.Log.
func (l *Log) Start(ctx context.Context, runID string) (eventlog.Start, error) {
	v, err := l.c.Get(ctx, l.seg(runID)).Result()
	if errors.Is(err, redis.Nil) {
		return eventlog.Start{Cursor: "0-0 "}, nil
	}
	if err != nil {
		return eventlog.Start{}, redisx.Classify(err)
	}
	id, tag, _ := strings.Cut(v, " ")
	return eventlog.Start{Cursor: eventlog.Cursor(id + " " + id), Found: true, Tag: tag}, nil
}

// Next implements eventlog.Log.
func (l *Log) Next(ctx context.Context, runID string, cur eventlog.Cursor, wait time.Duration) ([]eventlog.Entry, eventlog.Cursor, error) {
	wait = min(max(wait, time.Millisecond), maxBlock)
	// A cursor is the id of the last entry read and the id of the segment being read: the events
	// of an older segment's writer that reach Redis after a newer segment began are skipped.
	last, seg, _ := strings.Cut(string(cur), " ")
	res, err := l.c.XRead(ctx, &redis.XReadArgs{Streams: []string{l.stream(runID), last}, Count: maxBatch, Block: wait}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, cur, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, cur, ctx.Err()
		}
		return nil, cur, redisx.Classify(err)
	}
	var out []eventlog.Entry
	for _, s := range res {
		for _, m := range s.Messages {
			last = m.ID
			if mark, _ := m.Values["m"].(string); mark == "begin" {
				seg = m.ID
				continue
			}
			ev, _ := m.Values["e"].(string)
			from, _ := m.Values["s"].(string)
			if ev == "" || seg != "" && from != seg {
				continue // an end mark, or a late event of an older segment
			}
			seg = from
			data, _ := m.Values["d"].(string)
			out = append(out, eventlog.Entry{Event: ev, Data: []byte(data)})
		}
	}
	return out, eventlog.Cursor(last + " " + seg), nil
}

type item struct {
	e   eventlog.Entry
	end bool
}

// writer sends a segment's events from one goroutine, in batches of what is waiting: the run
// never waits for Redis unless maxBatch events are queued.
type writer struct {
	l       *Log
	runID   string
	begin   string // the id of the segment's mark
	in      chan item
	done    chan struct{}
	bytes   int64
	dropped bool
}

func (w *writer) Append(e eventlog.Entry, final bool) {
	w.bytes += int64(len(e.Data))
	if w.bytes > w.l.lim.MaxBytes && !final {
		if !w.dropped {
			w.dropped = true
			w.l.log.Warn("workflow run events past the byte bound are not kept for the events operation",
				"workflow_run_id", w.runID, "max_bytes", w.l.lim.MaxBytes)
		}
		return
	}
	e.Data = append([]byte(nil), e.Data...)
	w.in <- item{e: e}
}

func (w *writer) End(keep bool) {
	w.in <- item{end: true}
	close(w.in)
	<-w.done
	if keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := dropSegment.Run(ctx, w.l.c, []string{w.l.stream(w.runID), w.l.seg(w.runID)}, w.begin+" ").Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		w.l.log.Error("drop workflow run events from redis", "workflow_run_id", w.runID, "error", redisx.Classify(err))
	}
}

// dropSegment deletes a run's keys if its latest segment is still the one ARGV[1] begins: a
// newer segment (a resumption that began meanwhile) keeps them.
var dropSegment = redis.NewScript(`
local v = redis.call('GET', KEYS[2])
if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0`)

func (w *writer) loop() {
	defer close(w.done)
	batch := make([]item, 0, maxBatch)
	for it := range w.in {
		batch = append(batch[:0], it)
	more:
		for len(batch) < maxBatch {
			select {
			case it, ok := <-w.in:
				if !ok {
					break more
				}
				batch = append(batch, it)
			default:
				break more
			}
		}
		w.send(batch)
	}
}

func (w *writer) send(batch []item) {
	l := w.l
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key, ttl := l.stream(w.runID), runningTTL
	p := l.c.Pipeline()
	for _, it := range batch {
		vals := []any{"e", it.e.Event, "d", it.e.Data, "s", w.begin}
		if it.end {
			vals, ttl = []any{"m", "end", "s", w.begin}, l.lim.Keep
		}
		p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: int64(l.lim.MaxEvents), Approx: true, Values: vals})
	}
	p.Expire(ctx, key, ttl)
	p.Expire(ctx, l.seg(w.runID), ttl)
	if _, err := p.Exec(ctx); err != nil {
		l.log.Error("write workflow run events to redis", "workflow_run_id", w.runID, "events", len(batch), "error", redisx.Classify(err))
	}
}
