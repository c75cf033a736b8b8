package humaninput

import (
	"context"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/run"
)

// keepFinished is how long the events of a resumed segment stay readable after it ended, for a
// client that connects to the events operation late.
const keepFinished = 5 * time.Minute

// Hub holds the events of the segment of a run that runs (or last ran) in this process, for the
// events operation: a subscriber reads them from the first, then live.
type Hub struct {
	mu     sync.Mutex
	run    *run.Run
	events []run.Event
	done   bool
	// changed is closed and replaced whenever an event arrives or the segment ends.
	changed chan struct{}
}

// Run is the segment's run (its ids make the events' envelope).
func (h *Hub) Run() *run.Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run
}

// Next returns the events from index i on, whether the segment ended after them, and a channel
// closed when there is more.
func (h *Hub) Next(i int) ([]run.Event, bool, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i > len(h.events) {
		i = len(h.events)
	}
	return h.events[i:], h.done, h.changed
}

func (h *Hub) pump(r *run.Run) {
	for ev := range r.Events() {
		h.mu.Lock()
		h.events = append(h.events, ev)
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.done = true
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// hub installs a new hub for a segment of runID.
func (s *Service) hub(runID string, r *run.Run) *Hub {
	h := &Hub{run: r, changed: make(chan struct{})}
	s.hubMu.Lock()
	s.hubs[runID] = h
	close(s.created)
	s.created = make(chan struct{})
	s.hubMu.Unlock()
	time.AfterFunc(keepFinished, func() {
		<-r.Done()
		s.hubMu.Lock()
		if s.hubs[runID] == h {
			delete(s.hubs, runID)
		}
		s.hubMu.Unlock()
	})
	return h
}

// Hub returns the hub of a run's latest segment in this process, or nil and a channel closed
// when a hub is created.
func (s *Service) Hub(runID string) (*Hub, <-chan struct{}) {
	s.hubMu.Lock()
	defer s.hubMu.Unlock()
	return s.hubs[runID], s.created
}

// WaitHub waits for a hub of runID until ctx ends.
func (s *Service) WaitHub(ctx context.Context, runID string, tick <-chan time.Time, onTick func() error) (*Hub, error) {
	for {
		h, created := s.Hub(runID)
		if h != nil {
			return h, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-created:
		case <-tick:
			if err := onTick(); err != nil {
				return nil, err
			}
		}
	}
}
