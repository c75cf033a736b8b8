// Package jobs runs background work (indexing documents, generating
// conversation names, …) on a bounded queue served by a worker pool.
//
// Contract, shared by every implementation:
//
//   - Enqueue never blocks: it fails at once with ErrQueueFull when the
//     queue is full, ErrUnknownKind when no handler is registered for the
//     job's kind, and ErrClosed once Stop has begun. A nil error means the
//     job was accepted.
//   - Each job runs at most once, in no guaranteed order. A handler error
//     is logged and the job is dropped; retries, if any, are the handler's
//     business (a PostgreSQL-backed queue may add attempts later).
//   - A handler panic is recovered and logged with its stack; the worker
//     carries on.
//   - Handlers receive a context derived from the one given to Start. It is
//     cancelled when Start's context ends or when Stop's deadline passes;
//     after that the workers run no further jobs.
//   - Stop stops intake, lets workers finish the jobs already queued and
//     returns nil once they are done. If its context ends first, it cancels
//     the running handlers and returns an error naming the jobs left
//     undone; it does not wait for handlers that ignore cancellation.
//
// [Local] is the in-process implementation: jobs live in memory and are
// lost if the process dies.
package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Errors returned by Enqueue.
var (
	// ErrQueueFull means the queue holds its maximum number of jobs.
	ErrQueueFull = errors.New("job queue is full")
	// ErrUnknownKind means no handler is registered for the job's kind.
	ErrUnknownKind = errors.New("no handler for job kind")
	// ErrClosed means the queue is stopping or stopped.
	ErrClosed = errors.New("job queue is closed")
)

// Job is one unit of background work.
type Job struct {
	// ID names a durable job (Durable); empty for Local. Set by Durable when the handler runs,
	// or by the caller of EnqueueAt to give the job a known id.
	ID string
	// Attempt counts the runs of a durable job, this one included (0 for Local).
	Attempt int
	// Kind selects the handler.
	Kind string
	// Payload is the handler's input, typically JSON.
	Payload []byte
}

// Handler processes one job. It should return promptly when ctx is done.
type Handler func(ctx context.Context, job Job) error

// Queue accepts jobs.
type Queue interface {
	// Enqueue accepts job for later processing or fails at once.
	Enqueue(ctx context.Context, job Job) error
}

// Defaults used by NewLocal for zero Options fields.
const (
	DefaultWorkers   = 4
	DefaultQueueSize = 1024
)

// Options configure a Local queue.
type Options struct {
	// Workers is the number of concurrent handlers (DefaultWorkers if <= 0).
	Workers int
	// QueueSize is the number of jobs that may wait (DefaultQueueSize if
	// <= 0).
	QueueSize int
	// Logger receives handler errors and panics (discarded if nil).
	Logger *slog.Logger
}

// Local is the in-process Queue with a worker pool. Register handlers with
// Handle, then Start; Enqueue may be called before Start, and jobs wait
// until the workers run.
type Local struct {
	workers int
	log     *slog.Logger
	queue   chan Job
	done    chan struct{} // closed when every worker has returned

	mu       sync.RWMutex
	handlers map[string]Handler
	started  bool
	closed   bool // queue channel closed; guarded by mu so no send races it
	cancel   context.CancelFunc
}

var _ Queue = (*Local)(nil)

// NewLocal returns a stopped queue configured by opts.
func NewLocal(opts Options) *Local {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Local{
		workers:  opts.Workers,
		log:      opts.Logger,
		queue:    make(chan Job, opts.QueueSize),
		done:     make(chan struct{}),
		handlers: make(map[string]Handler),
	}
}

// Handle registers the handler for kind. Like http.ServeMux, it panics on
// an empty kind, a nil handler or a second handler for the same kind:
// those are wiring mistakes.
func (q *Local) Handle(kind string, h Handler) {
	if kind == "" || h == nil {
		panic("jobs: Handle needs a kind and a handler")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, dup := q.handlers[kind]; dup {
		panic(fmt.Sprintf("jobs: handler for %q registered twice", kind))
	}
	q.handlers[kind] = h
}

// Enqueue implements Queue. The payload is copied, so the caller may reuse
// its buffer.
func (q *Local) Enqueue(ctx context.Context, job Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrClosed
	}
	if _, ok := q.handlers[job.Kind]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownKind, job.Kind)
	}
	job.Payload = bytes.Clone(job.Payload)
	select {
	case q.queue <- job:
		return nil
	default:
		return ErrQueueFull
	}
}

// Len reports the number of jobs waiting (not running).
func (q *Local) Len() int { return len(q.queue) }

// Start launches the workers. Handlers run with a context derived from ctx;
// pass one that outlives Stop's drain, not the signal context, or shutdown
// cancels background work instead of finishing it. Start fails if called
// twice or after Stop.
func (q *Local) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return ErrClosed
	case q.started:
		return errors.New("jobs: already started")
	}
	q.started = true
	ctx, q.cancel = context.WithCancel(ctx)
	startWorkers(q.workers, func() { q.work(ctx) }, q.done)
	return nil
}

// startWorkers runs n copies of work and closes done once every one has returned.
func startWorkers(n int, work func(), done chan struct{}) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(work)
	}
	go func() {
		wg.Wait()
		close(done)
	}()
}

// Stop closes intake and waits for the queued jobs to finish, at most until
// ctx ends; see the package documentation. It may be called more than once.
func (q *Local) Stop(ctx context.Context) error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.queue)
	}
	started, cancel := q.started, q.cancel
	q.mu.Unlock()

	if !started {
		if n := len(q.queue); n > 0 {
			return fmt.Errorf("jobs: stopped before start, %d queued jobs discarded", n)
		}
		return nil
	}
	select {
	case <-q.done:
		cancel()
		if n := len(q.queue); n > 0 {
			// The workers ended early because Start's context was
			// cancelled.
			return fmt.Errorf("jobs: workers ended with %d jobs still queued", n)
		}
		return nil
	case <-ctx.Done():
		// Count before cancelling: once cancelled, workers may take and
		// discard a job each, which would blur the snapshot.
		left := len(q.queue)
		cancel()
		return fmt.Errorf("jobs: drain interrupted with %d jobs still queued: %w", left, context.Cause(ctx))
	}
}

func (q *Local) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job, ok := <-q.queue:
			if !ok {
				return
			}
			if ctx.Err() != nil {
				q.log.Warn("job discarded: queue cancelled", "kind", job.Kind)
				return
			}
			q.run(ctx, job)
		}
	}
}

// run calls the job's handler, logging its error or panic.
func (q *Local) run(ctx context.Context, job Job) {
	q.mu.RLock()
	h := q.handlers[job.Kind]
	q.mu.RUnlock()
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			q.log.Error("job panicked", "kind", job.Kind, "panic", fmt.Sprint(r),
				"stack", string(debug.Stack()), "duration_ms", time.Since(start).Milliseconds())
		}
	}()
	if err := h(ctx, job); err != nil {
		q.log.Error("job failed", "kind", job.Kind, "error", err,
			"duration_ms", time.Since(start).Milliseconds())
	}
}
