package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// memoryResult is the open-streams phase.
type memoryResult struct {
	open                        int
	idle, held, stopped, later  procStat
	openTime, stopTime          time.Duration
	upstreamOpen, upstreamAfter int
	streamErrs                  int
	firstErr                    error
}

// memoryPhase opens o.open streams whose upstream answer hangs after its first chunk, reads the
// server's RSS once every stream has had its first message event, then stops every run through
// the stop operation and checks that the server returns to idle.
func memoryPhase(ctx context.Context, o options, p *parley, fake *openaitest.Server, through *target) (memoryResult, error) {
	res := memoryResult{open: o.open}

	// Warm-up: the code paths, pools and caches a stream uses, with a round of ordinary streams
	// and some blocking chats.
	var wg sync.WaitGroup
	var warmErr atomic.Value
	for i := range min(o.streams, 100) {
		wg.Go(func() {
			body := chatBody(streamMarker+" Warm up.", fmt.Sprintf("mem-warm-%d", i), "streaming", "", nil)
			if _, err := streamParley(ctx, through, body, false, nil); err != nil {
				warmErr.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	if err, ok := warmErr.Load().(error); ok {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	p.settle(ctx)
	time.Sleep(time.Second)
	idle, err := readProc(p.pid)
	if err != nil {
		return res, err
	}
	res.idle = idle
	logf("memory: idle RSS %s, %d fds, %d threads", mb(idle.RSS), idle.FDs, idle.Threads)

	// Open the streams. Each is read on after its first message, until the stop makes Parley
	// end it with message_end.
	streamCtx, cancelStreams := context.WithCancel(ctx)
	defer cancelStreams()
	type open struct {
		user   string
		taskID string
	}
	opened := make([]open, o.open)
	firstSeen := make(chan int, o.open)
	var (
		errMu    sync.Mutex
		firstErr error
		errs     int
		ended    sync.WaitGroup
	)
	t0 := time.Now()
	for i := range o.open {
		user := fmt.Sprintf("mem-user-%d", i)
		opened[i].user = user
		body := chatBody(hangMarker+" Keep going.", user, "streaming", "", nil)
		ended.Go(func() {
			_, err := streamParley(streamCtx, through, body, false, func(taskID string) {
				opened[i].taskID = taskID
				firstSeen <- i
			})
			if err != nil && streamCtx.Err() == nil {
				errMu.Lock()
				errs++
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		})
	}
	allEnded := make(chan struct{})
	go func() { ended.Wait(); close(allEnded) }()
	cleanup := func() {
		cancelStreams()
		select {
		case <-allEnded:
		case <-time.After(30 * time.Second):
		}
	}

	// Wait for every first message event (or a failure, or 60 s).
	seen := 0
	timeout := time.After(60 * time.Second)
	for seen < o.open {
		select {
		case <-firstSeen:
			seen++
		case <-allEnded:
			for len(firstSeen) > 0 {
				<-firstSeen
				seen++
			}
			return res, fmt.Errorf("every stream ended before the measurement (%d of %d had a message event); first error: %v", seen, o.open, firstErr)
		case <-timeout:
			cleanup()
			return res, fmt.Errorf("only %d of %d streams got a message event in 60s; first error: %v", seen, o.open, firstErr)
		case <-ctx.Done():
			cleanup()
			return res, ctx.Err()
		}
	}
	res.openTime = time.Since(t0)
	// Let the last frames and goroutines settle, then read the figures.
	time.Sleep(o.hold)
	res.upstreamOpen = fake.ActiveStreams()
	held, err := readProc(p.pid)
	if err != nil {
		cleanup()
		return res, err
	}
	res.held = held
	logf("memory: %d streams open after %s: RSS %s (+%s), %d fds, %d threads, %d upstream streams hanging",
		o.open, res.openTime.Round(time.Millisecond), mb(held.RSS), mb(held.RSS-idle.RSS), held.FDs, held.Threads, res.upstreamOpen)

	// Stop every run through the API, 32 at a time; Parley cancels its upstream request, so the
	// fake's hung handler returns, and ends the stream with message_end.
	t1 := time.Now()
	jobs := make(chan int)
	var stopErr atomic.Value
	var stoppers sync.WaitGroup
	for range 32 {
		stoppers.Go(func() {
			for i := range jobs {
				if err := stopTask(ctx, through, p.base, opened[i].taskID, opened[i].user); err != nil {
					stopErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	for i := range o.open {
		jobs <- i
	}
	close(jobs)
	stoppers.Wait()
	select {
	case <-allEnded:
	case <-time.After(30 * time.Second):
		cleanup()
		return res, errors.New("streams did not end within 30s of being stopped")
	}
	res.stopTime = time.Since(t1)
	if err, ok := stopErr.Load().(error); ok {
		return res, fmt.Errorf("stop: %w", err)
	}
	res.streamErrs, res.firstErr = errs, firstErr
	// Close the client's connections, as clients that went away would.
	through.client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for fake.ActiveStreams() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	res.upstreamAfter = fake.ActiveStreams()
	p.settle(ctx)
	time.Sleep(time.Second)
	if res.stopped, err = readProc(p.pid); err != nil {
		return res, err
	}
	logf("memory: stopped in %s: RSS %s, %d fds, %d threads, %d upstream streams left",
		res.stopTime.Round(time.Millisecond), mb(res.stopped.RSS), res.stopped.FDs, res.stopped.Threads, res.upstreamAfter)
	// Go returns freed memory to the OS gradually; look again a little later.
	select {
	case <-time.After(o.releaseWait):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if res.later, err = readProc(p.pid); err != nil {
		return res, err
	}
	logf("memory: %s later: RSS %s, %d fds", o.releaseWait, mb(res.later.RSS), res.later.FDs)
	return res, nil
}
