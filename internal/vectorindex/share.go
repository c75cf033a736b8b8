package vectorindex

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/pubsub"
)

// ChangedChannel is the pub/sub channel on which replicas announce that a dataset's
// searchable vectors changed.
const ChangedChannel = "vectors.changed"

// changed is a message on ChangedChannel.
type changed struct {
	DatasetID string `json:"dataset_id"`
}

// Shared connects a Memory to the other replicas' through pub/sub: [Shared.Changed] announces
// that a dataset changed here (call it after the change committed); on hearing an
// announcement, from any replica, the Memory catches up on that dataset at once, if it holds
// it, by applying the change (see [Memory.Refresh]). Announcements only save searches the
// catching up: every search still checks the dataset's index version (one indexed row) and
// catches up first when it is behind, so a lost announcement costs latency, never a stale
// answer.
type Shared struct {
	m     *Memory
	ps    pubsub.PubSub
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc
	unsub func()
}

// Share subscribes m to ChangedChannel on ps. Close unsubscribes.
func Share(ctx context.Context, m *Memory, ps pubsub.PubSub, log *slog.Logger) (*Shared, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Shared{m: m, ps: ps, log: log}
	s.ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	unsub, err := ps.Subscribe(ctx, ChangedChannel, s.heard)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("vectorindex: listen for changes: %w", err)
	}
	s.unsub = unsub
	return s, nil
}

func (s *Shared) heard(payload []byte) {
	var c changed
	if err := json.Unmarshal(payload, &c); err != nil || c.DatasetID == "" {
		s.log.Warn("ignored a malformed vector change", "payload_bytes", len(payload))
		return
	}
	s.m.Refresh(s.ctx, c.DatasetID)
}

// Changed announces that the dataset's searchable set changed. It does not wait: the
// announcement is published in the background, within 2 s or not at all (logged).
func (s *Shared) Changed(datasetID string) {
	payload, err := json.Marshal(changed{DatasetID: datasetID})
	if err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		defer cancel()
		if err := s.ps.Publish(ctx, ChangedChannel, payload); err != nil && s.ctx.Err() == nil {
			s.log.Warn("could not announce a vector change", "dataset_id", datasetID, "error", err)
		}
	}()
}

// Close unsubscribes and stops catching up.
func (s *Shared) Close() {
	s.unsub()
	s.stop()
}
