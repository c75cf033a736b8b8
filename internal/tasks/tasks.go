// Package tasks tracks running generation tasks so that a stop request can
// cancel them (Dify's POST /chat-messages/{task_id}/stop and friends).
//
// Contract, shared by every implementation:
//
//   - Register announces a task and returns a context derived from the
//     caller's context plus a done function. The context is cancelled, with
//     cause ErrStopped, when Stop is called with the task's id, app id and
//     user. The generator watches it and ends the answer the way Dify does
//     for a stopped task.
//   - Stop never reports whether anything was stopped: an unknown task, a
//     finished task, or a task owned by another app or user is silently
//     ignored and Stop returns nil, matching Dify, which answers
//     {"result": "success"} in every case. Errors are reserved for
//     infrastructure failures (a multi-replica implementation that cannot
//     reach its backend).
//   - done deregisters the task and releases the context's resources; it is
//     idempotent. Call it when the task ends, typically with defer.
//
// [Local] is the in-process implementation. [Shared] is the one of replicas:
// tasks register locally, Stop publishes on a pubsub.PubSub (Redis in
// production), and the replica that owns the task cancels it.
package tasks

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped is the cancellation cause of a task context cancelled by Stop.
// Use context.Cause(ctx) to tell a user stop from a client disconnect or a
// shutdown.
var ErrStopped = errors.New("task stopped by user")

// Task identifies a running task and its owner.
type Task struct {
	// ID is the task id given to the client (Dify's task_id).
	ID string
	// AppID is the app the task runs in.
	AppID string
	// User is the end-user id that started the task.
	User string
}

// Registry registers running tasks and stops them on request.
type Registry interface {
	// Register announces t and returns a context that is cancelled with
	// cause ErrStopped when Stop matches t, and a done function that
	// deregisters t.
	Register(ctx context.Context, t Task) (context.Context, func())
	// Stop cancels the task with this id if it belongs to appID and user;
	// otherwise it does nothing. It returns nil in both cases.
	Stop(ctx context.Context, taskID, appID, user string) error
}

// Local is the in-process Registry. The zero value is not usable; call
// NewLocal.
type Local struct {
	mu sync.Mutex
	// Task ids are random, but a duplicate must not let one registration
	// clobber another, so each id maps to a set of entries.
	tasks map[string]map[*entry]struct{}
}

type entry struct {
	task   Task
	cancel context.CancelCauseFunc
}

var _ Registry = (*Local)(nil)

// NewLocal returns an empty in-process registry.
func NewLocal() *Local {
	return &Local{tasks: make(map[string]map[*entry]struct{})}
}

// Register implements Registry.
func (r *Local) Register(ctx context.Context, t Task) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	e := &entry{task: t, cancel: cancel}
	r.mu.Lock()
	set := r.tasks[t.ID]
	if set == nil {
		set = make(map[*entry]struct{})
		r.tasks[t.ID] = set
	}
	set[e] = struct{}{}
	r.mu.Unlock()

	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			r.mu.Lock()
			delete(set, e)
			if len(set) == 0 {
				// An id's set is removed only once empty, so it is
				// still the one in the map.
				delete(r.tasks, t.ID)
			}
			r.mu.Unlock()
			cancel(context.Canceled)
		})
	}
}

// Stop implements Registry. The in-process registry has no failure modes,
// so it always returns nil; ctx matters only to remote implementations.
func (r *Local) Stop(_ context.Context, taskID, appID, user string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := range r.tasks[taskID] {
		if e.task.AppID == appID && e.task.User == user {
			e.cancel(ErrStopped)
		}
	}
	return nil
}

// Len reports how many tasks are registered (for tests and metrics).
func (r *Local) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, set := range r.tasks {
		n += len(set)
	}
	return n
}
