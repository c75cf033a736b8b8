package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// record turns tracing on for the test with an in-memory recorder.
func record(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	Use(tp.Tracer("test"), false)
	t.Cleanup(func() { Use(nil, false) })
	return rec
}

// Off, a span costs nothing: the hot paths start spans whether tracing is on or not.
func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	r := httptest.NewRequest("POST", "/v1/chat-messages", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	allocs := testing.AllocsPerRun(100, func() {
		c, span := Start(ctx, "run", trace.SpanKindInternal)
		if span.IsRecording() || c != ctx {
			t.Fatal("a span recorded with tracing off")
		}
		span.End()
		_, span = StartRequest(r)
		span.End()
		Inject(ctx, r.Header)
		if TraceParent(ctx) != "" {
			t.Fatal("a traceparent with tracing off")
		}
	})
	if allocs != 0 {
		t.Errorf("%.0f allocations per span with tracing off", allocs)
	}
}

func TestRequestContinuesTheClientsTrace(t *testing.T) {
	rec := record(t)
	r := httptest.NewRequest("POST", "/v1/chat-messages", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx, span := StartRequest(r)
	_, child := Start(ctx, "run", trace.SpanKindInternal)
	out := http.Header{}
	Inject(trace.ContextWithSpan(ctx, child), out)
	child.End()
	span.End()
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	req, run := spans[1], spans[0]
	if got := req.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace %s, not the client's", got)
	}
	if req.Parent().SpanID().String() != "00f067aa0ba902b7" || !req.Parent().IsRemote() {
		t.Errorf("parent %v, not the client's span", req.Parent())
	}
	if run.Parent().SpanID() != req.SpanContext().SpanID() {
		t.Error("the run is not the request's child")
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + run.SpanContext().SpanID().String() + "-01"
	if got := out.Get("traceparent"); got != want {
		t.Errorf("sent traceparent %q, want %q", got, want)
	}
}

// A job's span starts a trace of its own, linked to the span that queued it.
func TestJobLinksToWhatQueuedIt(t *testing.T) {
	rec := record(t)
	ctx, queuing := Start(context.Background(), "run", trace.SpanKindInternal)
	tp := TraceParent(ctx)
	queuing.End()
	if tp == "" {
		t.Fatal("no traceparent")
	}
	_, job := StartLinked(context.Background(), "job", tp)
	job.End()
	_, orphan := StartLinked(context.Background(), "job", "not a traceparent")
	orphan.End()
	spans := rec.Ended()
	j := spans[1]
	if j.SpanContext().TraceID() == queuing.SpanContext().TraceID() || j.Parent().IsValid() {
		t.Error("the job's span is not a root of its own")
	}
	if len(j.Links()) != 1 || j.Links()[0].SpanContext.SpanID() != queuing.SpanContext().SpanID() {
		t.Errorf("links %v", j.Links())
	}
	if len(spans[2].Links()) != 0 {
		t.Error("a link from a malformed traceparent")
	}
}

func TestSetup(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	// Without an endpoint, or disabled, nothing starts.
	for _, kv := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		stop, err := Setup(t.Context(), env(kv), Settings{})
		if err != nil || On() {
			t.Errorf("%v: on %v, %v", kv, On(), err)
		}
		_ = stop(t.Context())
	}
	for _, kv := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		if _, err := Setup(t.Context(), env(kv), Settings{}); err == nil || On() {
			t.Errorf("%v: no error", kv)
		}
	}

	// With one, spans go there over OTLP/HTTP, and shutdown flushes them.
	var (
		mu  sync.Mutex
		got []*collectortrace.ExportTraceServiceRequest
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", 400)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "parley-test")
	stop, err := Setup(t.Context(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL}), Settings{CaptureContent: true, Version: "v9"})
	if err != nil || !On() || !CaptureContent() {
		t.Fatalf("on %v, %v", On(), err)
	}
	_, span := Start(context.Background(), "run", trace.SpanKindInternal)
	span.End()
	if err := stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if On() {
		t.Error("still on after shutdown")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || len(got[0].ResourceSpans) != 1 {
		t.Fatalf("exports %v", got)
	}
	rs := got[0].ResourceSpans[0]
	service := ""
	for _, a := range rs.Resource.Attributes {
		if a.Key == "service.name" {
			service = a.Value.GetStringValue()
		}
	}
	if service != "parley-test" || rs.ScopeSpans[0].Spans[0].Name != "run" {
		t.Errorf("service %q, spans %v", service, rs.ScopeSpans)
	}
}

// traceService is an OTLP/gRPC trace endpoint: it keeps the names of the spans exported to it.
type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (s *traceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				s.names = append(s.names, sp.Name)
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports over gRPC.
func TestSetupGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &traceService{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, svc)
	go srv.Serve(ln)
	defer srv.Stop()
	kv := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + ln.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
	for k, v := range kv {
		t.Setenv(k, v)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	stop, err := Setup(t.Context(), func(k string) string { return kv[k] }, Settings{})
	if err != nil || !On() {
		t.Fatalf("on %v, %v", On(), err)
	}
	_, span := Start(context.Background(), "over grpc", trace.SpanKindInternal)
	span.End()
	if err := stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if len(svc.names) != 1 || svc.names[0] != "over grpc" {
		t.Errorf("exported %v", svc.names)
	}
}

// A tool's API, an MCP server or an http-request node's target gets the traceparent of the span
// that called it; a traceparent the request already has is kept, and the request handed to the
// transport is left as it was.
func TestTransportSendsTheTraceparent(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(nil)}
	send := func(ctx context.Context, preset string) *http.Request {
		t.Helper()
		r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		if preset != "" {
			r.Header.Set("traceparent", preset)
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return r
	}
	send(context.Background(), "") // off: nothing sent
	record(t)
	ctx, span := Start(context.Background(), "tool", trace.SpanKindClient)
	defer span.End()
	r := send(ctx, "")
	send(ctx, "00-11111111111111111111111111111111-2222222222222222-01")
	send(context.Background(), "") // on, but no span: nothing sent
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if len(got) != 4 || got[0] != "" || got[1] != want ||
		got[2] != "00-11111111111111111111111111111111-2222222222222222-01" || got[3] != "" {
		t.Errorf("traceparents sent %q, want [\"\" %q preset \"\"]", got, want)
	}
	if r.Header.Get("traceparent") != "" {
		t.Error("the transport changed the caller's request")
	}
}
