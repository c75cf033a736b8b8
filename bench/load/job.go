package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/jobs/jobstest"
)

// jobResult is the job phase: durable jobs run one at a time through the queue on SQLite.
type jobResult struct {
	jobs int
	cpu  time.Duration // this process's CPU over them
	wall time.Duration
}

// jobPhase measures a durable job's whole life on a fresh SQLite database in this process, as a
// conversation-naming job lives after a chat: enqueued while a worker waits, claimed, run by a
// handler that does nothing, and completed, one at a time for o.duration after a warm-up. The
// figure is the queue's cost over the work itself; the rest of this process is idle meanwhile.
func jobPhase(ctx context.Context, o options, dir string) (jobResult, error) {
	var res jobResult
	p, err := jobstest.Open(ctx, dir)
	if err != nil {
		return res, err
	}
	defer p.Close()
	one := func() error { return p.One(ctx) }
	for end := time.Now().Add(min(o.duration, time.Second)); time.Now().Before(end); {
		if err := one(); err != nil {
			return res, fmt.Errorf("warm-up job: %w", err)
		}
	}
	cpu0, start := selfCPU(), time.Now()
	for time.Since(start) < o.duration {
		if err := one(); err != nil {
			return res, err
		}
		res.jobs++
	}
	// The last job's completion is recorded after its handler returned.
	if err := p.Queue.Stop(ctx); err != nil {
		return res, err
	}
	res.cpu, res.wall = selfCPU()-cpu0, time.Since(start)
	return res, nil
}

func (r *report) writeJobs(b *strings.Builder) {
	j := r.jobs
	fmt.Fprintf(b, "\n2d. Durable jobs on SQLite: enqueue, claim, run, finish\n")
	fmt.Fprintf(b, "   a fresh database in this process; one job at a time, enqueued while a worker waits, as a\n")
	fmt.Fprintf(b, "   conversation's naming job after a chat; the handler does nothing, so the figure is the queue's\n")
	fmt.Fprintf(b, "   cost over the work itself (CPU: this process over the window, otherwise idle)\n\n")
	if j.jobs == 0 {
		fmt.Fprintf(b, "   (no job measured)\n")
		return
	}
	fmt.Fprintf(b, "   %d jobs in %s: %.0f jobs/s, %.0f µs CPU per job\n", j.jobs, j.wall.Round(time.Millisecond),
		float64(j.jobs)/j.wall.Seconds(), j.perJob())
}

// perJob is the CPU per job in µs.
func (j *jobResult) perJob() float64 {
	if j.jobs == 0 {
		return 0
	}
	return us(j.cpu) / float64(j.jobs)
}
