package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// window is one fixed-duration run of blocking requests.
type window struct {
	n, errs   int
	firstErr  error
	elapsed   time.Duration
	p50, p99  time.Duration
	serverCPU time.Duration // Parley's CPU during the window and its settling
	selfCPU   time.Duration // this process's CPU (load generator + fake upstream)
}

func (w window) rate() float64 {
	if w.elapsed <= 0 {
		return 0
	}
	return float64(w.n) / w.elapsed.Seconds()
}

// blockingWindow runs workers that send requests back to back until d has passed. Every
// request that completes counts, including those that end after the deadline, and the rate is
// over the time until the last one ended.
func blockingWindow(ctx context.Context, workers int, d time.Duration, do func(ctx context.Context, worker int) error) window {
	var (
		mu       sync.Mutex
		lat      []time.Duration
		res      window
		wg       sync.WaitGroup
		start    = time.Now()
		deadline = start.Add(d)
	)
	for w := range workers {
		wg.Go(func() {
			var mine []time.Duration
			errs := 0
			var first error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := do(ctx, w); err != nil {
					errs++
					if first == nil {
						first = err
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			res.errs += errs
			if res.firstErr == nil {
				res.firstErr = first
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.n = len(lat)
	res.p50, res.p99 = percentile(lat, 50), percentile(lat, 99)
	return res
}

// selfCPU returns this process's user + system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// blockingVariant is one kind of blocking load.
type blockingVariant struct {
	name string
	// parley is false for the direct baseline.
	parley bool
	do     func(ctx context.Context, worker int) error
	rounds []window
}

// blockingResult is the throughput phase.
type blockingResult struct {
	workers  int
	variants []*blockingVariant
}

// blockingPhase measures blocking chats per second: interleaved windows of the direct baseline
// and each Parley variant, after a short unmeasured warm-up of each.
func blockingPhase(ctx context.Context, o options, p *parley, direct, through *target) (blockingResult, error) {
	res := blockingResult{workers: o.workers}
	directBody := upstreamBody(blockMarker+" Say hello.", false)
	newBodies := make([][]byte, o.workers)
	noNameBodies := make([][]byte, o.workers)
	no := false
	for w := range o.workers {
		newBodies[w] = chatBody(blockMarker+" Say hello.", fmt.Sprintf("block-new-%d", w), "blocking", "", nil)
		noNameBodies[w] = chatBody(blockMarker+" Say hello.", fmt.Sprintf("block-noname-%d", w), "blocking", "", &no)
	}
	// The continuing variant's conversations are started once, outside the measurement.
	contBodies := make([][]byte, o.workers)
	for w := range o.workers {
		user := fmt.Sprintf("block-cont-%d", w)
		var reply struct {
			ConversationID string `json:"conversation_id"`
			Answer         string `json:"answer"`
		}
		if err := blockingCall(ctx, through, chatBody(blockMarker+" Say hello.", user, "blocking", "", &no), &reply); err != nil {
			return res, fmt.Errorf("start conversation: %w", err)
		}
		if reply.ConversationID == "" {
			return res, errors.New("blocking reply without conversation_id")
		}
		contBodies[w] = chatBody(blockMarker+" Say hello again.", user, "blocking", reply.ConversationID, nil)
	}
	completion := &target{name: "parley", client: through.client, url: p.base + "/completion-messages", key: p.completionKey}
	completionBodies := make([][]byte, o.workers)
	for w := range o.workers {
		completionBodies[w] = completionBody(blockMarker+" Say hello.", fmt.Sprintf("block-completion-%d", w), "blocking")
	}
	var pc struct {
		Mode   string `json:"mode"`
		Answer string `json:"answer"`
	}
	if err := blockingCall(ctx, completion, completionBodies[0], &pc); err != nil || pc.Mode != "completion" || pc.Answer == "" {
		return res, fmt.Errorf("completion preflight: %+v, %v", pc, err)
	}
	res.variants = []*blockingVariant{
		{name: "direct to the fake (baseline)", do: func(ctx context.Context, _ int) error {
			return blockingCall(ctx, direct, directBody, nil)
		}},
		{name: "parley, new conversation each", parley: true, do: func(ctx context.Context, w int) error {
			return blockingCall(ctx, through, newBodies[w], nil)
		}},
		{name: "parley, new conv., auto_generate_name=false", parley: true, do: func(ctx context.Context, w int) error {
			return blockingCall(ctx, through, noNameBodies[w], nil)
		}},
		{name: "parley, continuing one conv. per worker", parley: true, do: func(ctx context.Context, w int) error {
			return blockingCall(ctx, through, contBodies[w], nil)
		}},
		{name: "parley, completion app", parley: true, do: func(ctx context.Context, w int) error {
			return blockingCall(ctx, completion, completionBodies[w], nil)
		}},
	}
	warm := min(o.duration, time.Second)
	for round := 0; round <= o.blockRounds; round++ {
		for _, v := range res.variants {
			d := o.duration
			if round == 0 {
				d = warm
			}
			p.settle(ctx)
			cpu0, _ := procCPU(p.pid)
			self0 := selfCPU()
			win := blockingWindow(ctx, o.workers, d, v.do)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if !p.alive() {
				return res, fmt.Errorf("parley exited during the blocking phase; log:\n%s", p.logTail())
			}
			win.selfCPU = selfCPU() - self0
			// Settling is part of the cost: conversation naming runs after the answer.
			p.settle(ctx)
			cpu1, _ := procCPU(p.pid)
			win.serverCPU = cpu1 - cpu0
			label := fmt.Sprintf("round %d/%d", round, o.blockRounds)
			if round == 0 {
				label = "warm-up"
			}
			logf("blocking %s %-45s %7.0f req/s  p50 %s p99 %s  errors %d", label, v.name, win.rate(),
				fmtUS(win.p50), fmtUS(win.p99), win.errs)
			if win.firstErr != nil {
				logf("  error: %v", win.firstErr)
			}
			if round > 0 {
				v.rounds = append(v.rounds, win)
			}
		}
	}
	return res, nil
}
