package sandbox_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
)

// A code run is a span saying its language and how it ended: ok, or the kind of its failure.
func TestCodeSpan(t *testing.T) {
	r := newRunner(t, sandbox.Options{})
	rec := tracetest.NewSpanRecorder()
	tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test"), false)
	t.Cleanup(func() { tracing.Use(nil, false) })
	ctx, parent := tracing.Start(context.Background(), "node", trace.SpanKindInternal)
	for _, code := range []string{"def main():\n    return {'x': 1}\n", "def main():\n    return {'r': 1 / 0}\n"} {
		_, _ = r.Run(ctx, sandbox.Request{Language: sandbox.Python3, Code: code})
	}
	parent.End()
	var outcomes []string
	for _, s := range rec.Ended() {
		if s.Name() != "code python3" || s.Parent().SpanID() != parent.SpanContext().SpanID() {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == tracing.CodeOutcome {
				outcomes = append(outcomes, a.Value.AsString())
			}
		}
		if failed := s.Status().Code == codes.Error; failed != (len(outcomes) == 2) {
			t.Errorf("run %d: status %v", len(outcomes), s.Status())
		}
	}
	if len(outcomes) != 2 || outcomes[0] != "ok" || outcomes[1] != sandbox.KindRuntime {
		t.Errorf("outcomes %v", outcomes)
	}
}
