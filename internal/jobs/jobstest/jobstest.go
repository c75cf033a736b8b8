// Package jobstest runs durable jobs one at a time through a real queue on SQLite, for the
// benchmarks and budget tests that measure what the queue itself costs.
package jobstest

import (
	"context"
	"errors"
	"sync"

	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/store"
)

// Kind is the job kind the pool's handler takes.
const Kind = "bench"

// Payload is a conversation-naming job's size.
var Payload = []byte(`{"app_id":"a","end_user_id":"u","conversation_id":"c","query":"hello"}`)

// Pool is a started durable queue on a fresh SQLite store whose Kind handler does nothing.
type Pool struct {
	Store *store.Store
	Queue *jobs.Durable
	wg    sync.WaitGroup
}

// Open migrates a SQLite store in dir and starts the pool's queue on it. Close stops both.
func Open(ctx context.Context, dir string) (*Pool, error) {
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	p := &Pool{Store: s, Queue: jobs.NewDurable(jobs.DurableOptions{Store: s})}
	p.Queue.Handle(Kind, func(context.Context, jobs.Job) error {
		p.wg.Done()
		return nil
	})
	if err := p.Queue.Start(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return p, nil
}

// One enqueues one job and waits for its handler; its completion is recorded just after, and by
// the time Stop returns.
func (p *Pool) One(ctx context.Context) error {
	p.wg.Add(1)
	if err := p.Queue.Enqueue(ctx, jobs.Job{Kind: Kind, Payload: Payload}); err != nil {
		p.wg.Done()
		return err
	}
	p.wg.Wait()
	return nil
}

// Close stops the queue and closes the store.
func (p *Pool) Close() error {
	return errors.Join(p.Queue.Stop(context.Background()), p.Store.Close())
}
