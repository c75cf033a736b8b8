// Package tracing is Parley's OpenTelemetry traces: the spans of requests, runs, workflow
// nodes, model and tool calls, knowledge retrievals, code runs and background jobs, exported
// over OTLP when the standard OTEL_EXPORTER_OTLP_* variables name an endpoint
// (docs/observability.md lists the spans and their attributes).
//
// Off, the default, nothing is set up: Start returns its context as it is and a span that
// records nothing, without allocating, so a request, a run or a stream costs what it cost
// without tracing. Callers compute attributes only when span.IsRecording().
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// state is tracing when it is on: the tracer every span starts from, and whether the text of
// prompts, answers, tool arguments and retrieval queries goes on spans.
type state struct {
	tracer  trace.Tracer
	capture bool
}

var current atomic.Pointer[state]

// noop is the span Start returns when tracing is off; it records nothing and ends nothing.
var noop = trace.SpanFromContext(context.Background())

// w3c is the only propagation Parley speaks: the traceparent header, in from clients and out to
// model providers. Baggage is not forwarded: it could carry a client's data to a provider.
var w3c = propagation.TraceContext{}

// Settings are what Setup reads beside the OpenTelemetry variables.
type Settings struct {
	// CaptureContent puts prompts, answers, tool arguments and results, and retrieval queries
	// on spans (PARLEY_OTEL_CAPTURE_CONTENT); off, spans carry sizes and counts only.
	CaptureContent bool
	// Version is the server's version, for the service.version resource attribute.
	Version string
	Logger  *slog.Logger
}

// Setup turns tracing on when getenv names an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_SDK_DISABLED is not true, and returns the
// function that flushes the spans still buffered and stops exporting; with no endpoint it does
// nothing and returns a shutdown that does nothing. The exporter itself reads the rest of the
// standard variables (headers, timeouts, TLS, compression) from the process's environment, and
// the SDK reads OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
func Setup(ctx context.Context, getenv func(string) string, s Settings) (shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return off, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: Parley exports traces over OTLP only (otlp, or none)", exp)
	}
	if strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) == "" && strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) == "" {
		return off, nil
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	protocol := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	var exporter sdktrace.SpanExporter
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: Parley exports traces as http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// service.name is parley unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise:
	// the detectors that come later win.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "parley"), attribute.String("service.version", s.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	// Libraries that trace through the global provider (none on the hot paths today) join the
	// same traces; the SDK's own failures (an unreachable collector) go to the log, not stderr.
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(w3c)
	log := s.Logger
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: export failed", "error", err) }))
	current.Store(&state{tracer: tp.Tracer("github.com/parleyhq/parley", trace.WithInstrumentationVersion(s.Version)),
		capture: s.CaptureContent})
	log.Info("tracing on", "protocol", protocol, "capture_content", s.CaptureContent)
	return func(ctx context.Context) error {
		current.Store(nil)
		return tp.Shutdown(ctx)
	}, nil
}

// Use makes t the tracer every span starts from, for tests that record spans in the process;
// nil turns tracing off again.
func Use(t trace.Tracer, captureContent bool) {
	if t == nil {
		current.Store(nil)
		return
	}
	current.Store(&state{tracer: t, capture: captureContent})
}

// On reports whether spans are recorded.
func On() bool { return current.Load() != nil }

// CaptureContent reports whether prompts, answers, tool arguments and results and retrieval
// queries go on spans.
func CaptureContent() bool {
	s := current.Load()
	return s != nil && s.capture
}

// Start starts a span as a child of ctx's. Off, it returns ctx as it is and a span that records
// nothing, and allocates nothing. Name it for what it is, never after an id.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	s := current.Load()
	if s == nil {
		return ctx, noop
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(kind))
}

// StartRequest starts the span of an HTTP request to the server, named after its method until
// it is routed. A valid traceparent header continues the client's trace.
func StartRequest(r *http.Request) (context.Context, trace.Span) {
	s := current.Load()
	if s == nil {
		return r.Context(), noop
	}
	ctx := w3c.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
}

// Inject adds the traceparent of ctx's span to the headers of a request the server sends, so
// that the server called (a model provider, a tool's API, an MCP server, the target of an
// http-request node) continues the trace. A traceparent the headers already have (one a
// workflow's author set on an http-request node) is kept.
func Inject(ctx context.Context, h http.Header) {
	if current.Load() == nil || h.Get("traceparent") != "" {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// Transport wraps rt (nil: http.DefaultTransport) so that every request it sends carries the
// traceparent of its context's span, for clients whose requests are built by a library (the
// MCP SDK) or by each tool. Off, a request goes through as it is.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return injecting{rt}
}

type injecting struct{ next http.RoundTripper }

func (t injecting) RoundTrip(r *http.Request) (*http.Response, error) {
	if current.Load() == nil || r.Header.Get("traceparent") != "" || !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.next.RoundTrip(r)
	}
	// A RoundTripper must not change the request it is given.
	r = r.Clone(r.Context())
	w3c.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes through, so that a client closing its idle connections at
// shutdown reaches the transport underneath.
func (t injecting) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// TraceParent is the W3C traceparent of ctx's span: what a background job stores to link its
// span to the work that queued it. It is "" when tracing is off or ctx has no span.
func TraceParent(ctx context.Context) string {
	if current.Load() == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c.Get("traceparent")
}

// StartLinked starts the root span of work queued earlier (a background job), linked to the
// span traceparent names when it is valid: a job runs later, maybe on another replica, maybe
// more than once, so it gets a trace of its own rather than growing the one that queued it.
func StartLinked(ctx context.Context, name, traceparent string) (context.Context, trace.Span) {
	s := current.Load()
	if s == nil {
		return ctx, noop
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer)}
	if traceparent != "" {
		queued := trace.SpanContextFromContext(w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent}))
		if queued.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: queued}))
		}
	}
	return s.tracer.Start(ctx, name, opts...)
}

// Fail marks span failed with err, whose text becomes the span's status description.
func Fail(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// StartTool starts the span of a call of tool name (an execute_tool span in the GenAI
// conventions); callID is the model's id of the call, "" for a workflow's tool node. The caller
// adds the tool's provider (ToolProvider).
func StartTool(ctx context.Context, name, callID string) (context.Context, trace.Span) {
	ctx, span := Start(ctx, "execute_tool", trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetName("execute_tool " + name)
		span.SetAttributes(GenAIOperation.String("execute_tool"), GenAIToolName.String(name), GenAIToolType.String("function"))
		if callID != "" {
			span.SetAttributes(GenAIToolCallID.String(callID))
		}
	}
	return ctx, span
}

// EndTool ends a tool call's span: failed is why the call failed (the tool reported an error,
// timed out, or could not run), nil when it succeeded. The arguments and the result go on the
// span only when content is captured.
func EndTool(span trace.Span, arguments, result string, failed error) {
	if span.IsRecording() {
		if CaptureContent() {
			span.SetAttributes(GenAIToolArguments.String(arguments), GenAIToolResult.String(result))
		}
		span.SetAttributes(ToolError.Bool(failed != nil))
		Fail(span, failed)
	}
	span.End()
}
