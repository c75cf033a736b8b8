package jobs_test

import (
	"context"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/parleytest"
	"github.com/parleyhq/parley/internal/store"
)

// BenchmarkDurableJob measures a durable job's whole life on SQLite, one at a time, as a
// conversation-naming job lives after a chat: enqueued, claimed, run (a handler that does
// nothing) and completed. It is the queue's cost over the work itself; cpu-ns/op counts the
// workers' CPU too.
func BenchmarkDurableJob(b *testing.B) {
	s, err := store.Open(b.Context(), "", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	q := jobs.NewDurable(jobs.DurableOptions{Store: s})
	q.Handle("bench", func(context.Context, jobs.Job) error {
		wg.Done()
		return nil
	})
	if err := q.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer q.Stop(context.Background())
	payload := []byte(`{"app_id":"a","end_user_id":"u","conversation_id":"c","query":"hello"}`)
	b.ReportAllocs()
	cpu := parleytest.ProcessCPU(b)
	for b.Loop() {
		wg.Add(1)
		if err := q.Enqueue(b.Context(), jobs.Job{Kind: "bench", Payload: payload}); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
	}
	// The last job's completion is recorded after its handler returned.
	if err := q.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(parleytest.ProcessCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}
