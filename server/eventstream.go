package server

import (
	"context"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/run"
)

// This file keeps the events of every workflow run (Chatflow and Workflow apps) in the event log,
// encoded as their stream sends them, so that the events operation can serve a run from any
// replica: the engine's tap sees each event whether a client reads the run's own stream or not.

// tapEvents installs the event log's tap on the engine (an in-process log when none is given).
func (s *Server) tapEvents() {
	if s.events == nil {
		s.events = eventlog.NewLocal(eventlog.DefaultLimits)
	}
	if s.runs == nil {
		return
	}
	s.runs.SetTap(func(r *run.Run) (func(run.Event), func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tag := segmentFirst
		if r.Resumed {
			tag = segmentResumed
		}
		w, err := s.events.Begin(ctx, r.WorkflowRunID, tag)
		if err != nil {
			// The run goes on; the events operation will not see this segment.
			s.log.Error("start the event log of a workflow run", "workflow_run_id", r.WorkflowRunID, "error", err)
			return nil, nil
		}
		var mu sync.Mutex
		enc := newEventEncoder(r)
		return func(ev run.Event) {
				if ev.Kind == run.EventPing {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				data, err := enc.encode(ev)
				if err != nil {
					return // the run's own stream logs it
				}
				w.Append(eventlog.Entry{Event: ev.Kind.String(), Data: data}, endsStream(ev.Kind))
			}, func() {
				mu.Lock()
				defer mu.Unlock()
				// A resumption is kept a while for clients that connect after submitting a
				// form; a run's first segment is not replayed after it ended (catchUp), so it
				// goes at once.
				w.End(r.Resumed)
			}
	})
}

// The tags of a run's segments in the event log: the run as started, or a resumption.
const (
	segmentFirst   = "first"
	segmentResumed = "resumed"
)

// endsStream says whether an event of kind k ends an events stream (at least without
// continue_on_pause): the log keeps these past its byte bound.
func endsStream(k run.EventKind) bool {
	return k == run.EventWorkflowFinished || k == run.EventError || k == run.EventWorkflowPaused ||
		k == run.EventMessageEnd
}
