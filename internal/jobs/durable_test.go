package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

func openStore(t *testing.T, e storetest.Engine) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), e.DatabaseURL, e.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJobClaimLeaseExpireRetry(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openStore(t, e)
		now := time.Now()
		const lease = time.Minute
		kinds := []string{"k"}
		if err := s.InsertJob(ctx, store.JobRow{ID: "j1", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, RunAfter: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertJob(ctx, store.JobRow{ID: "later", Kind: "k", MaxAttempts: 3, RunAfter: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if j, err := s.ClaimJob(ctx, []string{"other"}, "a", now, lease); err != nil || j != nil {
			t.Fatalf("a claim of another kind = %v, %v", j, err)
		}
		a, err := s.ClaimJob(ctx, kinds, "a", now, lease)
		if err != nil || a == nil || a.ID != "j1" || a.Attempts != 1 || string(a.Payload) != "p" {
			t.Fatalf("claim = %+v, %v", a, err)
		}
		if j, err := s.ClaimJob(ctx, kinds, "b", now.Add(lease/2), lease); err != nil || j != nil {
			t.Fatalf("a leased job (or one not yet due) was claimed again: %+v, %v", j, err)
		}
		if err := s.RenewJobLease(ctx, "j1", "a", 1, now.Add(2*lease)); err != nil {
			t.Fatal(err)
		}
		if j, err := s.ClaimJob(ctx, kinds, "b", now.Add(lease+time.Second), lease); err != nil || j != nil {
			t.Fatalf("a renewed lease was taken: %+v, %v", j, err)
		}
		// a's lease expires: b takes the job over, and a can no longer renew or finish it.
		b, err := s.ClaimJob(ctx, kinds, "b", now.Add(2*lease+time.Second), lease)
		if err != nil || b == nil || b.ID != "j1" || b.Attempts != 2 {
			t.Fatalf("takeover = %+v, %v", b, err)
		}
		if err := s.RenewJobLease(ctx, "j1", "a", 1, now.Add(3*lease)); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("renewal of a lost lease = %v", err)
		}
		if err := s.CompleteJob(ctx, "j1", "a", 1); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("completion by the old owner = %v", err)
		}
		// b fails: the job waits for its backoff, then runs a third time, then fails for good.
		t2 := now.Add(2*lease + time.Second)
		if err := s.RetryJob(ctx, "j1", "b", 2, t2.Add(10*time.Second), "boom"); err != nil {
			t.Fatal(err)
		}
		if j, err := s.ClaimJob(ctx, kinds, "c", t2.Add(5*time.Second), lease); err != nil || j != nil {
			t.Fatalf("claimed during its backoff: %+v, %v", j, err)
		}
		c, err := s.ClaimJob(ctx, kinds, "c", t2.Add(11*time.Second), lease)
		if err != nil || c == nil || c.ID != "j1" || c.Attempts != 3 {
			t.Fatalf("retry claim = %+v, %v", c, err)
		}
		if err := s.FailJob(ctx, "j1", "c", 3, "boom again"); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetJob(ctx, "j1")
		if err != nil || got.State != store.JobFailed || got.LastError != "boom again" || got.Attempts != 3 {
			t.Fatalf("failed job = %+v, %v", got, err)
		}
		if j, err := s.ClaimJob(ctx, kinds, "d", t2.Add(time.Minute), lease); err != nil || j != nil {
			t.Fatalf("a failed job was claimed: %+v, %v", j, err)
		}
		// The later job is due in an hour; completing it removes it.
		l, err := s.ClaimJob(ctx, kinds, "d", now.Add(time.Hour), lease)
		if err != nil || l == nil || l.ID != "later" {
			t.Fatalf("due job = %+v, %v", l, err)
		}
		if err := s.CompleteJob(ctx, "later", "d", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetJob(ctx, "later"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("completed job still there: %v", err)
		}
	})
}

// TestJobClaimsAreExclusive has many claimers race over the same jobs: each claim takes a
// different job.
func TestJobClaimsAreExclusive(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		a, b := openStore(t, e), openStore(t, e)
		const n = 60
		for i := range n {
			if err := a.InsertJob(ctx, store.JobRow{ID: fmt.Sprint("j", i), Kind: "k", MaxAttempts: 1, RunAfter: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for w := range 8 {
			st := a
			if w%2 == 1 {
				st = b
			}
			wg.Go(func() {
				for {
					j, err := st.ClaimJob(ctx, []string{"k"}, fmt.Sprint("w", w), time.Now(), time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					if j == nil {
						return
					}
					mu.Lock()
					seen[j.ID]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("%d jobs claimed, want %d", len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("job %s claimed %d times", id, c)
			}
		}
	})
}

// renewSpy signals each lease renewal of the store it wraps.
type renewSpy struct {
	*store.Store
	renewed chan error
}

func (r renewSpy) RenewJobLease(ctx context.Context, id, owner string, attempt int, until time.Time) error {
	err := r.Store.RenewJobLease(ctx, id, owner, attempt, until)
	select {
	case r.renewed <- err:
	default:
	}
	return err
}

func startPool(t *testing.T, q *jobs.Durable) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = q.Stop(context.Background())
		cancel()
	})
}

// TestDurableRetriesThenFails runs a handler that fails: it is retried up to MaxAttempts, then
// the job stays failed with the handler's error; a handler that succeeds on its second
// attempt leaves nothing behind.
func TestDurableRetriesThenFails(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openStore(t, e)
		q := jobs.NewDurable(jobs.DurableOptions{Store: s, Workers: 2, MaxAttempts: 3,
			Backoff: func(int) time.Duration { return 0 }, Poll: 10 * time.Millisecond})
		attempts := make(chan int, 16)
		q.Handle("bad", func(_ context.Context, j jobs.Job) error {
			attempts <- j.Attempt
			return fmt.Errorf("attempt %d failed", j.Attempt)
		})
		flaky := make(chan int, 16)
		q.Handle("flaky", func(_ context.Context, j jobs.Job) error {
			flaky <- j.Attempt
			if j.Attempt < 2 {
				return errors.New("not yet")
			}
			return nil
		})
		startPool(t, q)
		id, err := q.EnqueueAt(ctx, jobs.Job{Kind: "bad"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for want := 1; want <= 3; want++ {
			if got := <-attempts; got != want {
				t.Fatalf("attempt %d, want %d", got, want)
			}
		}
		fid, err := q.EnqueueAt(ctx, jobs.Job{Kind: "flaky"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		<-flaky
		<-flaky
		// Stop waits for the handlers and records their outcomes.
		if err := q.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		j, err := s.GetJob(ctx, id)
		if err != nil || j.State != store.JobFailed || j.LastError != "attempt 3 failed" {
			t.Fatalf("job = %+v, %v", j, err)
		}
		if len(attempts) != 0 {
			t.Fatalf("a failed job ran again (attempt %d)", <-attempts)
		}
		if _, err := s.GetJob(ctx, fid); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a job that succeeded is still stored: %v", err)
		}
		if err := q.Enqueue(ctx, jobs.Job{Kind: "bad"}); !errors.Is(err, jobs.ErrClosed) {
			t.Fatalf("Enqueue after Stop = %v", err)
		}
	})
}

// TestDurableTakesOverAnExpiredLease: a job claimed by a worker that died (its lease has run
// out) is run by another pool, as its second attempt.
func TestDurableTakesOverAnExpiredLease(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openStore(t, e)
		if err := s.InsertJob(ctx, store.JobRow{ID: "j", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, RunAfter: time.Now()}); err != nil {
			t.Fatal(err)
		}
		// The dead worker claimed it with a lease that has run out.
		if j, err := s.ClaimJob(ctx, []string{"k"}, "dead", time.Now(), -time.Minute); err != nil || j == nil {
			t.Fatalf("claim = %v, %v", j, err)
		}
		q := jobs.NewDurable(jobs.DurableOptions{Store: s, Workers: 1, Poll: 10 * time.Millisecond})
		ran := make(chan jobs.Job, 2)
		q.Handle("k", func(_ context.Context, j jobs.Job) error { ran <- j; return nil })
		startPool(t, q)
		got := <-ran
		if got.ID != "j" || got.Attempt != 2 || string(got.Payload) != "x" {
			t.Fatalf("took over %+v", got)
		}
	})
}

// TestDurableRenewsItsLease: a running handler's lease is renewed, so nobody else claims the
// job; when another worker has taken it over anyway (the lease ran out), the handler's context
// is cancelled and its owner records nothing.
func TestDurableRenewsItsLease(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openStore(t, e)
		spy := renewSpy{Store: s, renewed: make(chan error, 1)}
		const lease = 300 * time.Millisecond
		q := jobs.NewDurable(jobs.DurableOptions{Store: spy, Workers: 1, Lease: lease, Owner: "a"})
		started := make(chan struct{})
		cause := make(chan error, 1)
		q.Handle("k", func(ctx context.Context, _ jobs.Job) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
		startPool(t, q)
		if err := q.Enqueue(ctx, jobs.Job{Kind: "k", ID: "j"}); err != nil {
			t.Fatal(err)
		}
		<-started
		if err := <-spy.renewed; err != nil {
			t.Fatalf("renewal: %v", err)
		}
		j, err := s.GetJob(ctx, "j")
		if err != nil || j.LeaseOwner != "a" || j.State != store.JobRunning {
			t.Fatalf("job = %+v, %v", j, err)
		}
		if c, err := s.ClaimJob(ctx, []string{"k"}, "b", j.LeaseUntil.Add(-time.Millisecond), lease); err != nil || c != nil {
			t.Fatalf("claimed within a renewed lease: %+v, %v", c, err)
		}
		c, err := s.ClaimJob(ctx, []string{"k"}, "b", j.LeaseUntil.Add(time.Hour), time.Hour)
		if err != nil || c == nil {
			t.Fatalf("takeover after expiry = %+v, %v", c, err)
		}
		for err := range spy.renewed {
			if errors.Is(err, store.ErrLeaseLost) {
				break
			}
		}
		if got := <-cause; got == nil || got.Error() != "jobs: lease lost" {
			t.Fatalf("handler context ended with %v", got)
		}
		if err := q.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		j, err = s.GetJob(ctx, "j")
		if err != nil || j.LeaseOwner != "b" || j.State != store.JobRunning || j.Attempts != 2 {
			t.Fatalf("after the lost lease: %+v, %v", j, err)
		}
	})
}

// TestDurableTwoPoolsRunEachJobOnce has two pools on separate connections race over the same
// jobs, queued through both: each job runs exactly once.
func TestDurableTwoPoolsRunEachJobOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		const n = 120
		var runs sync.Map
		var total atomic.Int64
		all := make(chan struct{})
		var pools []*jobs.Durable
		var perPool [2]atomic.Int64
		for p := range 2 {
			q := jobs.NewDurable(jobs.DurableOptions{Store: openStore(t, e), Workers: 3, Poll: 5 * time.Millisecond})
			q.Handle("k", func(_ context.Context, j jobs.Job) error {
				c, _ := runs.LoadOrStore(j.ID, new(atomic.Int64))
				c.(*atomic.Int64).Add(1)
				perPool[p].Add(1)
				if total.Add(1) == n {
					close(all)
				}
				return nil
			})
			pools = append(pools, q)
		}
		for _, q := range pools {
			startPool(t, q)
		}
		for i := range n {
			if err := pools[i%2].Enqueue(ctx, jobs.Job{Kind: "k", ID: fmt.Sprint("j", i)}); err != nil {
				t.Fatal(err)
			}
		}
		<-all
		for _, q := range pools {
			if err := q.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := total.Load(); got != n {
			t.Fatalf("%d runs, want %d", got, n)
		}
		runs.Range(func(k, v any) bool {
			if c := v.(*atomic.Int64).Load(); c != 1 {
				t.Errorf("job %v ran %d times", k, c)
			}
			return true
		})
		t.Logf("runs per pool: %d, %d", perPool[0].Load(), perPool[1].Load())
	})
}

// TestDurableHandsOverToAnIdleWorker: a job due now, queued while a worker of the pool is idle,
// is stored already claimed by the pool (running, its first attempt counted, leased) and runs
// at once, without a claim query; it is deleted when it succeeds. A job queued while every
// worker is busy waits in the queue and is claimed after.
func TestDurableHandsOverToAnIdleWorker(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openStore(t, e)
		cs := &countingStore{Store: s}
		// The poll is an hour: only the handover or a wake-up can start a job in time.
		q := jobs.NewDurable(jobs.DurableOptions{Store: cs, Workers: 1, Poll: time.Hour})
		seen := make(chan store.JobRow, 2)
		release := make(chan struct{})
		q.Handle("k", func(ctx context.Context, j jobs.Job) error {
			row, err := s.GetJob(ctx, j.ID)
			if err != nil {
				return err
			}
			seen <- row
			<-release
			return nil
		})
		startPool(t, q)
		waitIdle := func() {
			// The worker's first claim finds nothing; then it waits, idle.
			deadline := time.Now().Add(5 * time.Second)
			for !q.Idle() {
				if time.Now().After(deadline) {
					t.Fatal("the worker never became idle")
				}
				time.Sleep(time.Millisecond)
			}
		}
		waitIdle()
		first, err := q.EnqueueAt(ctx, jobs.Job{Kind: "k"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		row := <-seen
		if row.ID != first || row.State != store.JobRunning || row.LeaseOwner != q.Owner() || row.Attempts != 1 ||
			!row.LeaseUntil.After(time.Now()) {
			t.Fatalf("the job handed over is %+v", row)
		}
		// The only worker is busy: the next job is queued, and runs once the first is done.
		second, err := q.EnqueueAt(ctx, jobs.Job{Kind: "k"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if row, err := s.GetJob(ctx, second); err != nil || row.State != store.JobQueued {
			t.Fatalf("a job queued while every worker is busy is %+v, %v", row, err)
		}
		release <- struct{}{}
		if row := <-seen; row.ID != second || row.Attempts != 1 {
			t.Fatalf("the queued job ran as %+v", row)
		}
		release <- struct{}{}
		if err := q.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{first, second} {
			if _, err := s.GetJob(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("job %s is still stored after it succeeded: %v", id, err)
			}
		}
		// The claims: the worker's first (empty), the second job's and the empty one after it.
		// The job handed over took none.
		if n := cs.claims.Load(); n != 3 {
			t.Fatalf("%d claim queries, want 3", n)
		}
	})
}

// countingStore counts the claim queries of a pool.
type countingStore struct {
	*store.Store
	claims atomic.Int64
}

func (c *countingStore) ClaimJob(ctx context.Context, kinds []string, owner string, now time.Time, lease time.Duration) (*store.JobRow, error) {
	c.claims.Add(1)
	return c.Store.ClaimJob(ctx, kinds, owner, now, lease)
}
