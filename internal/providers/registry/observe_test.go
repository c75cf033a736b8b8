package registry

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/tracing"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes() {
		m[a.Key] = a.Value
	}
	return m
}

// Off, the set hands out its clients as they are: nothing stands between a call and its
// provider.
func TestUnobservedWhenOff(t *testing.T) {
	ps := New(func(string) string { return "" })
	m, err := ps.ChatModel(models.ModelSpec{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1", Name: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*openai.Client); !ok {
		t.Errorf("client %T with tracing and metrics off", m)
	}
}

// A model call is a span after the GenAI conventions, the provider continues its trace, and
// its tokens, cost and failures are counted under the app of the run that made it.
func TestObservedCalls(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test"), true)
	t.Cleanup(func() { tracing.Use(nil, false) })
	up := openaitest.NewServer()
	t.Cleanup(up.Close)
	up.On("hello", openaitest.Reply{Chunks: []string{"Hi", " there"}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 5}})
	up.On("broke", openaitest.Reply{Status: 429, ErrorMessage: "slow down", ErrorCode: "rate_limit_exceeded"})
	m := metrics.New()
	ps := New(func(string) string { return up.APIKey() }).WithMetrics(m)
	spec := models.ModelSpec{Provider: "openai", BaseURL: up.URL(), Name: "gpt-4o",
		Pricing: &models.Pricing{Input: "2.5", Output: "10", Unit: "0.000001", Currency: "USD"}}
	cm, err := ps.ChatModel(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tracing.Start(metrics.WithApp(context.Background(), "bot"), "run", trace.SpanKindInternal)
	req := providers.ChatRequest{Model: "gpt-4o", Messages: []providers.Message{{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: "hello"}}, Parameters: map[string]any{"temperature": 0.2, "max_tokens": 64}}
	s, err := cm.ChatStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := s.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	req.Messages[1].Content = "broke"
	if _, err := cm.Chat(ctx, req); err == nil {
		t.Fatal("no error from a 429")
	}
	parent.End()

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	ok, failed := spans[0], spans[1]
	a := attrs(ok)
	if ok.Name() != "chat gpt-4o" || ok.SpanKind() != trace.SpanKindClient || ok.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span %q %v, parent %v", ok.Name(), ok.SpanKind(), ok.Parent())
	}
	for k, want := range map[attribute.Key]any{
		tracing.GenAIOperation: "chat", tracing.GenAIProvider: "openai", tracing.GenAIRequestModel: "gpt-4o",
		tracing.GenAIInputTokens: int64(20), tracing.GenAIOutputTokens: int64(5), tracing.GenAIRequestStream: true,
		tracing.GenAITemperature: 0.2, tracing.GenAIMaxTokens: int64(64),
	} {
		if got := a[k].AsInterface(); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if got := a[tracing.GenAIFinishReasons].AsStringSlice(); len(got) != 1 || got[0] != "stop" {
		t.Errorf("finish reasons %v", got)
	}
	var in, out []map[string]any
	if json.Unmarshal([]byte(a[tracing.GenAIInputMessages].AsString()), &in) != nil || len(in) != 2 || in[1]["role"] != "user" {
		t.Errorf("input messages %s", a[tracing.GenAIInputMessages].AsString())
	}
	if json.Unmarshal([]byte(a[tracing.GenAIOutputMessages].AsString()), &out) != nil || !strings.Contains(a[tracing.GenAIOutputMessages].AsString(), `"content":"Hi there"`) {
		t.Errorf("output messages %s", a[tracing.GenAIOutputMessages].AsString())
	}
	if failed.Status().Code != codes.Error {
		t.Errorf("failed call's status %v", failed.Status())
	}
	want := "00-" + ok.SpanContext().TraceID().String() + "-" + ok.SpanContext().SpanID().String() + "-01"
	if got := up.Requests()[0].Header.Get("traceparent"); got != want {
		t.Errorf("the provider got traceparent %q, want %q", got, want)
	}

	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"parley_model_tokens_total", `app="bot",model="gpt-4o",provider="openai",type="input"`, 20},
		{"parley_model_tokens_total", `app="bot",model="gpt-4o",provider="openai",type="output"`, 5},
		{"parley_model_cost_total", `app="bot",currency="USD",model="gpt-4o",provider="openai"`, 0.0001},
		{"parley_provider_errors_total", `kind="quota",provider="openai",status="429"`, 1},
		{"parley_model_call_duration_seconds_count", `model="gpt-4o",operation="chat",outcome="ok",provider="openai"`, 1},
	} {
		if got := sample(t, m, c.name, c.labels); got < c.want*0.999 || got > c.want*1.001 {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// sample is the value of one sample of m's metrics, as the text format writes it.
func sample(t *testing.T, m *metrics.Metrics, name, labels string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	prefix := name + "{" + labels + "} "
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in\n%s", prefix, rec.Body)
	return 0
}

// scripted is a stream that gives its chunks, then io.EOF.
type scripted struct{ chunks []providers.Chunk }

func (s *scripted) Recv() (providers.Chunk, error) {
	if len(s.chunks) == 0 {
		return providers.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *scripted) Close() error { return nil }

// An observed stream gives its caller what the stream gives, its end included.
func TestObservedStreamPassesThrough(t *testing.T) {
	m := metrics.New()
	_, c := model{spec: models.ModelSpec{Provider: "p", Name: "m"}, metrics: m}.start(context.Background(), "chat", "m")
	s := &observedStream{Stream: &scripted{chunks: []providers.Chunk{{Delta: "a"}, {Delta: "b", FinishReason: "stop",
		Usage: &providers.Usage{PromptTokens: 3, CompletionTokens: 2}}}}, c: c}
	var got string
	for {
		ch, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil || ch.Delta == "" {
			t.Fatalf("chunk %+v, %v", ch, err)
		}
		got += ch.Delta
	}
	if _, err := s.Recv(); err != io.EOF || got != "ab" {
		t.Fatalf("after the end: %v; text %q", err, got)
	}
	s.Close()
	if v := sample(t, m, "parley_model_tokens_total", `app="",model="m",provider="p",type="output"`); v != 2 {
		t.Errorf("output tokens %v", v)
	}
	if v := sample(t, m, "parley_model_call_duration_seconds_count", `model="m",operation="chat",outcome="ok",provider="p"`); v != 1 {
		t.Errorf("calls %v: the call was counted more than once or not at all", v)
	}
}
