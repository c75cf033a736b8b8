package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// latencySide is one side's figures for one round.
type latencySide struct {
	ttftP50, ttftP99, totalP50, totalP99 time.Duration
	n, errs                              int
	firstErr                             error
}

// latencyResult is the streaming phase: per side, the per-round figures.
type latencyResult struct {
	streams        int
	direct, parley []latencySide
	parleyCPU      time.Duration // server CPU over the measured parley rounds
	parleyReqs     int
}

// streamRound runs one round on one side: streams workers, each sending per+2 requests back to
// back, starts staggered over one answer's duration so that about streams requests are always
// open. The first and last request of each worker (ramp-up and ramp-down) are not measured.
func streamRound(ctx context.Context, streams, per int, stagger time.Duration, do func(ctx context.Context, worker, i int) (streamResult, error)) latencySide {
	var (
		mu         sync.Mutex
		ttft, tot  []time.Duration
		errs       int
		firstErr   error
		wg         sync.WaitGroup
		start      = time.Now()
		perRequest = per + 2
	)
	for w := range streams {
		wg.Go(func() {
			offset := time.Duration(int64(stagger) * int64(w) / int64(streams))
			if d := time.Until(start.Add(offset)); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				}
			}
			var myT, myTot []time.Duration
			myErrs := 0
			var myErr error
			for i := range perRequest {
				if ctx.Err() != nil {
					break
				}
				res, err := do(ctx, w, i)
				if i == 0 || i == perRequest-1 {
					if err != nil {
						myErrs++
						myErr = err
					}
					continue
				}
				if err != nil {
					myErrs++
					myErr = err
					continue
				}
				myT = append(myT, res.ttft)
				myTot = append(myTot, res.total)
			}
			mu.Lock()
			ttft = append(ttft, myT...)
			tot = append(tot, myTot...)
			errs += myErrs
			if firstErr == nil {
				firstErr = myErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return latencySide{
		ttftP50: percentile(ttft, 50), ttftP99: percentile(ttft, 99),
		totalP50: percentile(tot, 50), totalP99: percentile(tot, 99),
		n: len(ttft), errs: errs, firstErr: firstErr,
	}
}

// latencyPhase measures added TTFT and total latency: interleaved rounds of the same load sent
// straight to the fake and through Parley, after one unmeasured warm-up round of each.
func latencyPhase(ctx context.Context, o options, streams int, p *parley, direct, through *target) (latencyResult, error) {
	res := latencyResult{streams: streams}
	stagger := o.firstByte + time.Duration(o.chunks)*o.chunkDelay
	directBody := upstreamBody(streamMarker+" How are you?", true)
	doDirect := func(ctx context.Context, _, _ int) (streamResult, error) {
		r, err := streamDirect(ctx, direct, directBody, false)
		if err == nil && r.chunks != o.chunks {
			err = fmt.Errorf("direct stream: %d chunks, want %d", r.chunks, o.chunks)
		}
		return r, err
	}
	bodies := make([][]byte, streams)
	for w := range bodies {
		bodies[w] = chatBody(streamMarker+" How are you?", fmt.Sprintf("stream-user-%d", w), "streaming", "", nil)
	}
	doParley := func(ctx context.Context, w, _ int) (streamResult, error) {
		r, err := streamParley(ctx, through, bodies[w], false, nil)
		if err == nil && r.chunks != o.chunks {
			err = fmt.Errorf("parley stream: %d chunks, want %d", r.chunks, o.chunks)
		}
		return r, err
	}
	for round := 0; round <= o.rounds; round++ {
		warm := round == 0
		d := streamRound(ctx, streams, o.per, stagger, doDirect)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		p.settle(ctx)
		cpu0, _ := procCPU(p.pid)
		q := streamRound(ctx, streams, o.per, stagger, doParley)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if !p.alive() {
			return res, fmt.Errorf("parley exited during the streaming phase; log:\n%s", p.logTail())
		}
		p.settle(ctx)
		cpu1, _ := procCPU(p.pid)
		label := fmt.Sprintf("round %d/%d", round, o.rounds)
		if warm {
			label = "warm-up"
		}
		logf("%d streams %s: TTFT p50/p99 direct %s/%s parley %s/%s; total p99 direct %s parley %s; errors %d/%d",
			streams, label, fmtUS(d.ttftP50), fmtUS(d.ttftP99), fmtUS(q.ttftP50), fmtUS(q.ttftP99),
			fmtUS(d.totalP99), fmtUS(q.totalP99), d.errs, q.errs)
		if d.firstErr != nil {
			logf("  direct error: %v", d.firstErr)
		}
		if q.firstErr != nil {
			logf("  parley error: %v", q.firstErr)
		}
		if warm {
			continue
		}
		res.direct = append(res.direct, d)
		res.parley = append(res.parley, q)
		// The settle time after the round is included: it is the background work (naming the
		// new conversations) the round caused.
		res.parleyCPU += cpu1 - cpu0
		res.parleyReqs += streams * (o.per + 2)
	}
	return res, nil
}

func fmtUS(d time.Duration) string { return fmt.Sprintf("%.0fµs", us(d)) }
