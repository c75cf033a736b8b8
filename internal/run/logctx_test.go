package run

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/logctx"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// lockedBuffer is a log destination the run's goroutine and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunLogsCarryTheRequestID: a run outlives its request, in the engine's context, but what it
// logs carries the id of the request that started it.
func TestRunLogsCarryTheRequestID(t *testing.T) {
	logs := &lockedBuffer{}
	env := newEngineEnv(t, storetest.NewEngine(t, storetest.SQLite), func(o *Options) {
		o.Logger = slog.New(logctx.NewHandler(slog.NewJSONHandler(logs, nil)))
	})
	ctx := logctx.WithRequestID(context.Background(), "req-7")
	r, err := env.engine.Start(ctx, Request{App: env.chat, Query: "q", User: "u1", Inputs: map[string]any{"topic": "tides"}, Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	env.feedLater(t, step{end: true, err: errors.New("boom")})
	collectEvents(t, r)
	waitDone(t, r)
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"msg":"run failed"`) {
			if !strings.Contains(line, `"request_id":"req-7"`) {
				t.Fatalf("run failed without the request id: %s", line)
			}
			return
		}
	}
	t.Fatalf("no run failed line:\n%s", logs.String())
}
