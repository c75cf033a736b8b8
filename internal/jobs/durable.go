package jobs

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tracing"
)

// Defaults of a Durable queue for zero DurableOptions fields.
const (
	DefaultLease       = 30 * time.Second
	DefaultPoll        = time.Second
	DefaultMaxAttempts = 5
)

// errLeaseLost is the cause of a handler context whose lease was lost.
var errLeaseLost = errors.New("jobs: lease lost")

// JobStore is what a Durable queue needs from the database (implemented by *store.Store).
type JobStore interface {
	InsertJob(ctx context.Context, j store.JobRow) error
	ClaimJob(ctx context.Context, kinds []string, owner string, now time.Time, lease time.Duration) (*store.JobRow, error)
	RenewJobLease(ctx context.Context, id, owner string, attempt int, until time.Time) error
	CompleteJob(ctx context.Context, id, owner string, attempt int) error
	RetryJob(ctx context.Context, id, owner string, attempt int, runAfter time.Time, lastError string) error
	FailJob(ctx context.Context, id, owner string, attempt int, lastError string) error
	ReleaseJob(ctx context.Context, id, owner string, attempt int) error
}

// DurableOptions configure a Durable queue.
type DurableOptions struct {
	// Store holds the jobs.
	Store JobStore
	// Owner names this worker pool in the leases it takes (a random name if empty). Two
	// pools must not share a name.
	Owner string
	// Workers is the number of concurrent handlers (DefaultWorkers if <= 0).
	Workers int
	// Lease is how long a claim lasts without renewal (DefaultLease if <= 0). A running
	// handler's lease is renewed every third of it; a crashed worker's jobs are claimable
	// again once it has passed.
	Lease time.Duration
	// Poll bounds how long an idle worker waits before looking for due jobs again (DefaultPoll
	// if <= 0): jobs queued by another process, or whose run_after or lease has passed. A job
	// queued through this pool wakes a worker at once.
	Poll time.Duration
	// MaxAttempts is how many times a job is tried, crashes included, before it is marked
	// failed (DefaultMaxAttempts if <= 0).
	MaxAttempts int
	// Backoff is the wait before retry number attempt (1, 2, …) of a job whose handler
	// failed; by default 2^attempt seconds, at most five minutes.
	Backoff func(attempt int) time.Duration
	// Logger receives handler errors and panics (discarded if nil).
	Logger *slog.Logger
	// Metrics records each run of a job: its wait, its duration and how it ended; nil: none.
	Metrics *metrics.Metrics
}

// Durable is the Queue kept in the database: jobs survive the process that queued them, any
// pool on the same database may run them, and a job runs on one worker at a time, held by a
// lease the worker renews while it runs. A handler error retries the job with backoff until
// MaxAttempts; a worker that dies leaves its job to be claimed again when the lease expires,
// so a handler must be safe to run again after a crash (it is never run twice at once while
// its lease is renewed).
type Durable struct {
	o    DurableOptions
	wake chan struct{}
	done chan struct{}
	// handoff carries jobs this pool queued already claimed to its idle workers (EnqueueAt);
	// idle counts the workers waiting on it.
	handoff chan *store.JobRow
	idle    atomic.Int32

	mu       sync.RWMutex
	handlers map[string]Handler
	kinds    []string
	started  bool
	closed   bool
	stop     context.CancelFunc // ends the claim loops
	cancel   context.CancelFunc // ends the handlers
}

var _ Queue = (*Durable)(nil)

// NewDurable returns a stopped queue configured by opts.
func NewDurable(opts DurableOptions) *Durable {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration {
			return min(time.Duration(1<<min(attempt, 9))*time.Second, 5*time.Minute)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Owner == "" {
		opts.Owner = "pool-" + rand.Text()
	}
	return &Durable{o: opts, wake: make(chan struct{}, opts.Workers), done: make(chan struct{}),
		handoff: make(chan *store.JobRow, opts.Workers), handlers: make(map[string]Handler)}
}

// Idle reports whether a worker of the pool is waiting for work, so that a job queued now is
// handed to it.
func (q *Durable) Idle() bool { return q.idle.Load() > 0 }

// Owner is the name this pool takes leases under.
func (q *Durable) Owner() string { return q.o.Owner }

// Handle registers the handler for kind; it panics on wiring mistakes, as Local.Handle does.
// Register every handler before Start.
func (q *Durable) Handle(kind string, h Handler) {
	if kind == "" || h == nil {
		panic("jobs: Handle needs a kind and a handler")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, dup := q.handlers[kind]; dup {
		panic(fmt.Sprintf("jobs: handler for %q registered twice", kind))
	}
	q.handlers[kind] = h
	q.kinds = append(q.kinds, kind)
}

// Enqueue implements Queue: the job is stored, due at once, and a local worker is woken.
func (q *Durable) Enqueue(ctx context.Context, job Job) error {
	_, err := q.EnqueueAt(ctx, job, time.Time{})
	return err
}

// EnqueueAt stores job to run once at has passed (at once for the zero time) and returns its
// id: job.ID if set (a second job with the same id fails), a new one otherwise.
//
// A job due now while one of this pool's workers is idle is stored already claimed by this
// pool and handed to that worker: one write instead of an insert, a claim and the empty claim
// that follows, with the same lease and attempt counting as a claimed job.
func (q *Durable) EnqueueAt(ctx context.Context, job Job, at time.Time) (string, error) {
	q.mu.RLock()
	closed, started, known := q.closed, q.started, q.handlers[job.Kind] != nil
	q.mu.RUnlock()
	if closed {
		return "", ErrClosed
	}
	if !known {
		return "", fmt.Errorf("%w %q", ErrUnknownKind, job.Kind)
	}
	id := job.ID
	if id == "" {
		id = store.NewID()
	}
	now := time.Now()
	if at.IsZero() {
		at = now
	}
	// The job's span will link to the span queuing it (tracing.StartLinked).
	row := store.JobRow{ID: id, Kind: job.Kind, Payload: bytes.Clone(job.Payload), MaxAttempts: q.o.MaxAttempts, RunAfter: at,
		TraceParent: tracing.TraceParent(ctx)}
	if started && !at.After(now) && int(q.idle.Load()) > len(q.handoff) {
		row.State, row.Attempts, row.LeaseOwner, row.LeaseUntil = store.JobRunning, 1, q.o.Owner, now.Add(q.o.Lease)
		if err := q.o.Store.InsertJob(ctx, row); err != nil {
			return "", err
		}
		select {
		case q.handoff <- &row:
		default:
			// Every worker took other work meanwhile: the job goes back to the queue.
			if err := q.o.Store.ReleaseJob(context.WithoutCancel(ctx), id, q.o.Owner, 1); err != nil {
				q.o.Logger.WarnContext(ctx, "jobs: release a job no worker took; it runs once its lease expires", "job_id", id, "error", err)
			}
			q.nudge()
		}
		return id, nil
	}
	if err := q.o.Store.InsertJob(ctx, row); err != nil {
		return "", err
	}
	if !at.After(time.Now()) {
		q.nudge()
	}
	return id, nil
}

// Wake wakes an idle worker to look for due jobs at once: for jobs this process wrote to the
// database itself (with the write that required them) rather than through EnqueueAt.
func (q *Durable) Wake() { q.nudge() }

// nudge wakes an idle worker to look for due jobs.
func (q *Durable) nudge() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Start launches the workers. Handlers run with a context derived from ctx. Start fails if
// called twice or after Stop.
func (q *Durable) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return ErrClosed
	case q.started:
		return errors.New("jobs: already started")
	}
	q.started = true
	hctx, cancel := context.WithCancel(ctx)
	lctx, stop := context.WithCancel(hctx)
	q.cancel, q.stop = cancel, stop
	kinds := append([]string(nil), q.kinds...)
	startWorkers(q.o.Workers, func() { q.loop(lctx, hctx, kinds) }, q.done)
	return nil
}

// Stop stops claiming jobs and waits for the running handlers, at most until ctx ends; then
// it cancels them, and their jobs go back to the queue. Jobs not yet claimed stay in the
// database for the next start or another pool.
func (q *Durable) Stop(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	started, stop, cancel := q.started, q.stop, q.cancel
	q.mu.Unlock()
	if !started {
		return nil
	}
	stop()
	var err error
	select {
	case <-q.done:
	case <-ctx.Done():
		cancel()
		<-q.done
		err = fmt.Errorf("jobs: stop: %w", ctx.Err())
	}
	cancel()
	q.releaseHandoffs()
	return err
}

// releaseHandoffs puts the jobs handed to workers that stopped before taking them back in the
// queue, for the next start or another pool, rather than leaving them until their leases
// expire.
func (q *Durable) releaseHandoffs() {
	for {
		select {
		case j := <-q.handoff:
			if err := q.o.Store.ReleaseJob(context.Background(), j.ID, q.o.Owner, j.Attempts); err != nil {
				q.o.Logger.Warn("jobs: release a job at stop", "job_id", j.ID, "error", err)
			}
		default:
			return
		}
	}
}

// loop claims and runs jobs until lctx ends; handlers run with hctx. A worker claims again
// after each job it claimed, to drain the due jobs, and waits after one handed to it (whose
// queue had no backlog when it was handed over), for a job handed over, a wake-up or the poll.
func (q *Durable) loop(lctx, hctx context.Context, kinds []string) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	claim := true
	for {
		if claim {
			j, err := q.o.Store.ClaimJob(lctx, kinds, q.o.Owner, time.Now(), q.o.Lease)
			if lctx.Err() != nil {
				if j != nil { // claimed as we stopped: give it back
					_ = q.o.Store.ReleaseJob(context.WithoutCancel(lctx), j.ID, q.o.Owner, j.Attempts)
				}
				return
			}
			if err != nil {
				q.o.Logger.ErrorContext(lctx, "jobs: claim", "error", err)
			}
			if j != nil {
				q.run(hctx, j)
				continue
			}
		}
		timer.Reset(q.o.Poll)
		q.idle.Add(1)
		var handed *store.JobRow
		select {
		case <-lctx.Done():
		case handed = <-q.handoff:
		case <-q.wake:
		case <-timer.C:
		}
		q.idle.Add(-1)
		if lctx.Err() != nil {
			if handed != nil {
				_ = q.o.Store.ReleaseJob(context.WithoutCancel(lctx), handed.ID, q.o.Owner, handed.Attempts)
			}
			return
		}
		claim = handed == nil
		if handed != nil && q.take(hctx, handed) {
			q.run(hctx, handed)
		}
	}
}

// take readies a job handed over for its run: one that waited long for its worker has its
// lease renewed first, and is left alone if the lease was lost meanwhile.
func (q *Durable) take(ctx context.Context, j *store.JobRow) bool {
	if time.Until(j.LeaseUntil) > q.o.Lease*2/3 {
		return true
	}
	until := time.Now().Add(q.o.Lease)
	if err := q.o.Store.RenewJobLease(ctx, j.ID, q.o.Owner, j.Attempts, until); err != nil {
		q.o.Logger.WarnContext(ctx, "jobs: a job handed over lost its lease before it ran", "job_id", j.ID, "error", err)
		return false
	}
	j.LeaseUntil = until
	return true
}

// Outcomes of a job's run, for its span and metrics.
const (
	outcomeCompleted = "completed"
	outcomeRetried   = "retried"
	outcomeFailed    = "failed"
	outcomeReleased  = "released"
	outcomeLeaseLost = "lease_lost"
)

// run runs one claimed job, renewing its lease until the handler returns, and records the
// outcome. The run is a span of its own trace, linked to the span that queued the job.
func (q *Durable) run(ctx context.Context, j *store.JobRow) {
	started := time.Now()
	ctx, span := tracing.StartLinked(ctx, "job", j.TraceParent)
	if span.IsRecording() {
		span.SetName("job " + j.Kind)
		span.SetAttributes(tracing.JobKind.String(j.Kind), tracing.JobID.String(j.ID), tracing.JobAttempt.Int(j.Attempts))
	}
	outcome, failure := outcomeFailed, error(nil)
	defer func() {
		q.o.Metrics.JobRan(j.Kind, outcome, started.Sub(j.RunAfter), time.Since(started))
		if span.IsRecording() {
			span.SetAttributes(tracing.JobOutcome.String(outcome))
			tracing.Fail(span, failure)
		}
		span.End()
	}()
	bg := context.WithoutCancel(ctx)
	log := q.o.Logger.With("job_id", j.ID, "kind", j.Kind, "attempt", j.Attempts)
	if j.Attempts > j.MaxAttempts {
		// Every attempt ended with its lease expiring: the handler crashes or wedges its worker.
		msg := fmt.Sprintf("the job was claimed %d times and never finished", j.MaxAttempts)
		log.ErrorContext(ctx, "jobs: giving up", "reason", msg)
		failure = errors.New(msg)
		if err := q.o.Store.FailJob(bg, j.ID, q.o.Owner, j.Attempts, msg); err != nil {
			log.ErrorContext(ctx, "jobs: record failure", "error", err)
		}
		return
	}
	q.mu.RLock()
	h := q.handlers[j.Kind]
	q.mu.RUnlock()

	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(q.o.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				err := q.o.Store.RenewJobLease(hctx, j.ID, q.o.Owner, j.Attempts, time.Now().Add(q.o.Lease))
				if errors.Is(err, store.ErrLeaseLost) {
					log.WarnContext(hctx, "jobs: lease lost; stopping the handler")
					cancel(errLeaseLost)
					return
				}
				if err != nil && hctx.Err() == nil {
					log.WarnContext(hctx, "jobs: renew lease", "error", err)
				}
			}
		}
	}()
	err := q.call(hctx, h, Job{ID: j.ID, Kind: j.Kind, Payload: j.Payload, Attempt: j.Attempts}, log)
	lost := errors.Is(context.Cause(hctx), errLeaseLost)
	cancel(nil)
	<-renewed
	var rerr error
	failure = err
	switch {
	case lost:
		outcome = outcomeLeaseLost
		return // another worker holds the job now
	case ctx.Err() != nil:
		outcome = outcomeReleased
		rerr = q.o.Store.ReleaseJob(bg, j.ID, q.o.Owner, j.Attempts) // shutting down
	case err == nil:
		outcome = outcomeCompleted
		rerr = q.o.Store.CompleteJob(bg, j.ID, q.o.Owner, j.Attempts)
	case j.Attempts >= j.MaxAttempts:
		log.ErrorContext(ctx, "jobs: job failed for good", "error", err)
		rerr = q.o.Store.FailJob(bg, j.ID, q.o.Owner, j.Attempts, err.Error())
	default:
		outcome = outcomeRetried
		wait := q.o.Backoff(j.Attempts)
		log.WarnContext(ctx, "jobs: job failed; retrying", "error", err, "retry_in", wait)
		rerr = q.o.Store.RetryJob(bg, j.ID, q.o.Owner, j.Attempts, time.Now().Add(wait), err.Error())
	}
	if rerr != nil {
		log.ErrorContext(ctx, "jobs: record outcome", "error", rerr)
	}
}

// call runs h, turning a panic into an error logged with its stack.
func (q *Durable) call(ctx context.Context, h Handler, job Job, log *slog.Logger) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "jobs: handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("jobs: handler panicked: %v", p)
		}
	}()
	return h(ctx, job)
}
