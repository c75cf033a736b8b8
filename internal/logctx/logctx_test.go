package logctx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestHandlerAddsTheRequestID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(NewHandler(NewHandler(slog.NewJSONHandler(&buf, nil)))).With("app_id", "a1")
	ctx := WithRequestID(context.Background(), "req-1")
	log.InfoContext(ctx, "with")
	log.InfoContext(context.WithoutCancel(ctx), "detached")
	log.Info("without")
	Logger(ctx, slog.New(slog.NewJSONHandler(&buf, nil))).Info("through Logger")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"req-1", "req-1", "", "req-1"} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatal(err)
		}
		got, _ := m[Key].(string)
		if got != want || strings.Count(lines[i], Key) > 1 {
			t.Fatalf("line %d: %s", i, lines[i])
		}
	}
}

// BenchmarkHandleAccessLine is the cost the handler adds to the line every request logs: its
// request id, and the scan of its attributes for errors with details (none here).
func BenchmarkHandleAccessLine(b *testing.B) {
	log := slog.New(NewHandler(slog.NewJSONHandler(io.Discard, nil)))
	ctx := WithRequestID(context.Background(), "9b434b93-25b4-482a-9091-4710a2e545e6")
	b.ReportAllocs()
	for b.Loop() {
		log.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("method", "POST"), slog.String("route", "/v1/chat-messages"),
			slog.Int("status", 200), slog.Float64("duration_ms", 1.25))
	}
}
