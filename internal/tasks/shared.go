package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/parleyhq/parley/internal/pubsub"
)

// StopChannel is the pub/sub channel stop requests travel on between replicas.
const StopChannel = "tasks.stop"

// stopRequest is a stop request on StopChannel.
type stopRequest struct {
	TaskID string `json:"task_id"`
	AppID  string `json:"app_id"`
	User   string `json:"user"`
}

// Shared is the Registry of replicas: tasks run and register on the replica that started
// them (a Local), and a stop request on any replica is published on StopChannel; every
// replica, the one that asked included, hears it and stops the matching task if it runs it.
// The owner checks stay those of Local: a task stops only for its app and its user.
type Shared struct {
	local *Local
	ps    pubsub.PubSub
	log   *slog.Logger
	unsub func()
}

var _ Registry = (*Shared)(nil)

// NewShared subscribes to StopChannel on ps and returns the registry; Close unsubscribes.
// Stop requests published once NewShared has returned reach this replica.
func NewShared(ctx context.Context, ps pubsub.PubSub, log *slog.Logger) (*Shared, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Shared{local: NewLocal(), ps: ps, log: log}
	unsub, err := ps.Subscribe(ctx, StopChannel, s.heard)
	if err != nil {
		return nil, fmt.Errorf("tasks: listen for stop requests: %w", err)
	}
	s.unsub = unsub
	return s, nil
}

func (s *Shared) heard(payload []byte) {
	var r stopRequest
	if err := json.Unmarshal(payload, &r); err != nil || r.TaskID == "" {
		s.log.Warn("ignored a malformed stop request", "payload_bytes", len(payload))
		return
	}
	_ = s.local.Stop(context.Background(), r.TaskID, r.AppID, r.User)
}

// Register implements Registry: the task is this replica's.
func (s *Shared) Register(ctx context.Context, t Task) (context.Context, func()) {
	return s.local.Register(ctx, t)
}

// Stop implements Registry. A task of this replica stops at once; the request is then
// published for the others. It fails only when the request could not be published (the
// bus is unreachable), in which case tasks of other replicas were not stopped.
func (s *Shared) Stop(ctx context.Context, taskID, appID, user string) error {
	_ = s.local.Stop(ctx, taskID, appID, user)
	payload, err := json.Marshal(stopRequest{TaskID: taskID, AppID: appID, User: user})
	if err != nil {
		return err
	}
	if err := s.ps.Publish(ctx, StopChannel, payload); err != nil {
		return fmt.Errorf("tasks: publish a stop request: %w", err)
	}
	return nil
}

// Len reports how many tasks this replica runs.
func (s *Shared) Len() int { return s.local.Len() }

// Close stops listening for stop requests.
func (s *Shared) Close() { s.unsub() }
