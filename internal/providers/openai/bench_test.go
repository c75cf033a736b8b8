package openai_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

func benchSetup(b *testing.B) (*openaitest.Server, *openai.Client) {
	b.Helper()
	s := openaitest.NewServer(openaitest.WithoutRequestLog())
	b.Cleanup(s.Close)
	c := openai.New(openai.Config{BaseURL: s.URL(), APIKey: openaitest.DefaultAPIKey, Timeout: 30 * time.Second})
	b.Cleanup(c.CloseIdleConnections)
	return s, c
}

// drain reads a stream to its end and returns the number of chunks.
func drain(ctx context.Context, c *openai.Client, req providers.ChatRequest) (int, error) {
	st, err := c.ChatStream(ctx, req)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	n := 0
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// benchReq streams a 64-word answer (66 chunks with the final one).
var benchReq = userReq("gpt-4o", "the quick brown fox jumps over the lazy dog and keeps running through the forest until it reaches "+
	"a small river where it stops to drink some water before it continues on its long journey home to the den where its "+
	"family waits for dinner tonight")

// BenchmarkStreamRoundTrip is one streamed answer through the real client
// and the fake over loopback HTTP (a reused connection).
func BenchmarkStreamRoundTrip(b *testing.B) {
	_, c := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := drain(b.Context(), c, benchReq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamRoundTripParallel runs round trips from GOMAXPROCS×4
// goroutines.
func BenchmarkStreamRoundTripParallel(b *testing.B) {
	_, c := benchSetup(b)
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := drain(b.Context(), c, benchReq); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Benchmark1000ConcurrentStreams opens 1000 streams at once per iteration
// and waits for all of them: the fake must sustain this load.
func Benchmark1000ConcurrentStreams(b *testing.B) {
	_, c := benchSetup(b)
	const n = 1000
	req := userReq("gpt-4o", "short concurrent answer of ten words in total here")
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				if _, err := drain(b.Context(), c, req); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
}
