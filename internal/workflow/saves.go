package workflow

import (
	"context"
	"sync"
)

// BatchStore is an ExecutionStore that also stores many node executions at once.
type BatchStore interface {
	SaveNodeExecutions(ctx context.Context, recs []NodeExecution) error
}

// maxPendingSaves bounds the node executions a run holds before it stores them.
const maxPendingSaves = 32

// nodeSaves are the node executions of a run not stored yet. With a BatchStore, a run stores
// the executions of its quick nodes together: when a node has been running for
// runningSaveDelay (its running state goes out with them, so that what a snapshot reads is
// the run so far), when maxPendingSaves have gathered, and when the run ends or pauses. Without
// one, each is stored at once.
type nodeSaves struct {
	e       *Engine
	mu      sync.Mutex
	pending []NodeExecution
}

// add stores rec, or keeps it for the next write; now writes it and what is kept at once.
func (s *nodeSaves) add(ctx context.Context, rec NodeExecution, now bool) {
	if s.e.store == nil {
		return
	}
	if _, ok := s.e.store.(BatchStore); !ok {
		s.e.save(ctx, rec)
		return
	}
	s.mu.Lock()
	replaced := false
	for i := range s.pending {
		if s.pending[i].ID == rec.ID {
			s.pending[i], replaced = rec, true
			break
		}
	}
	if !replaced {
		s.pending = append(s.pending, rec)
	}
	var out []NodeExecution
	if now || len(s.pending) >= maxPendingSaves {
		out, s.pending = s.pending, nil
	}
	s.mu.Unlock()
	s.write(ctx, out)
}

// flush stores what is kept.
func (s *nodeSaves) flush(ctx context.Context) {
	s.mu.Lock()
	out := s.pending
	s.pending = nil
	s.mu.Unlock()
	s.write(ctx, out)
}

func (s *nodeSaves) write(ctx context.Context, recs []NodeExecution) {
	if len(recs) == 0 {
		return
	}
	if err := s.e.store.(BatchStore).SaveNodeExecutions(context.WithoutCancel(ctx), recs); err != nil {
		s.e.log.ErrorContext(ctx, "persist node executions", "workflow_run_id", recs[0].RunID, "count", len(recs), "error", err)
	}
}
