package conformance

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/metrics/metricstest"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// otlpReceiver is an OTLP/HTTP trace endpoint in the test process, built on OpenTelemetry's own
// protobuf types: it decodes each ExportTraceServiceRequest the server sends and keeps its spans.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*span
	services map[string]bool
}

// span is an exported span, its ids as hex and its attributes as plain values.
type span struct {
	TraceID, ID, Parent string
	Name                string
	Kind                tracepb.Span_SpanKind
	Attrs               map[string]any
	Links               []string // the span ids linked to
	Error               bool
	Start               uint64 // Unix nanoseconds
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{services: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		export := &collectortrace.ExportTraceServiceRequest{}
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(raw, export) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf export", 400)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.services[a.Value.GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, decodeSpan(s))
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func decodeSpan(s *tracepb.Span) *span {
	out := &span{TraceID: hex.EncodeToString(s.TraceId), ID: hex.EncodeToString(s.SpanId), Parent: hex.EncodeToString(s.ParentSpanId),
		Name: s.Name, Kind: s.Kind, Attrs: map[string]any{}, Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
		Start: s.StartTimeUnixNano}
	for _, a := range s.Attributes {
		out.Attrs[a.Key] = anyValue(a.Value)
	}
	for _, l := range s.Links {
		out.Links = append(out.Links, hex.EncodeToString(l.SpanId))
	}
	return out
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, anyValue(e))
		}
		return out
	}
	return nil
}

func (r *otlpReceiver) hasService(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.services[name]
}

// trace waits until the spans of trace id satisfy done, and returns them.
func (r *otlpReceiver) trace(t *testing.T, id string, done func([]*span) bool) []*span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		var got []*span
		for _, s := range r.spans {
			if s.TraceID == id {
				got = append(got, s)
			}
		}
		r.mu.Unlock()
		if done(got) {
			return got
		}
		if time.Now().After(deadline) {
			for _, s := range got {
				t.Logf("span %s %q parent %s %v", s.ID, s.Name, s.Parent, s.Attrs)
			}
			t.Fatalf("the spans of trace %s did not all arrive in 20s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// linkedTo waits for a span linked to span id.
func (r *otlpReceiver) linkedTo(t *testing.T, id string) *span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, s := range r.spans {
			for _, l := range s.Links {
				if l == id {
					r.mu.Unlock()
					return s
				}
			}
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no span linked to %s in 20s", id)
	return nil
}

// named is the spans named name.
func named(spans []*span, name string) []*span {
	var out []*span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one is the single span named name, a child of parent when parent is not nil.
func one(t *testing.T, spans []*span, name string, parent *span) *span {
	t.Helper()
	got := named(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q", len(got), name)
	}
	if parent != nil && got[0].Parent != parent.ID {
		t.Fatalf("span %q is a child of %s, not of %q (%s)", name, got[0].Parent, parent.Name, parent.ID)
	}
	return got[0]
}

// childrenOf is the names of parent's children, in the order they started.
func childrenOf(spans []*span, parent *span) []string {
	var children []*span
	for _, s := range spans {
		if s.Parent == parent.ID {
			children = append(children, s)
		}
	}
	slices.SortStableFunc(children, func(a, b *span) int { return cmp.Compare(a.Start, b.Start) })
	out := make([]string, len(children))
	for i, s := range children {
		out[i] = s.Name
	}
	return out
}

// wantAttrs checks attributes of s.
func wantAttrs(t *testing.T, s *span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got := s.Attrs[k]; fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("span %q: %s = %v, want %v", s.Name, k, got, v)
		}
	}
}

// clientTrace is a traceparent a client sends: its trace and its span.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

func traceparent(traceID string) string { return "00-" + traceID + "-" + clientSpanID + "-01" }

// streamTraced sends a streaming message with a traceparent and reads it to its end.
func streamTraced(t *testing.T, c *client.ClientWithResponses, body client.SendChatMessageJSONRequestBody, tp string) []client.ChatStreamEvent {
	t.Helper()
	return streamEventsCtx(context.Background(), t, c, body, func(_ context.Context, r *http.Request) error {
		r.Header.Set("traceparent", tp)
		return nil
	})
}

// TestObservability runs a server that exports its traces to an OTLP receiver in the test and
// serves metrics on its admin listener. A Chatflow run and a Legacy Agent turn give the span
// trees docs/observability.md describes, continuing the client's trace and carrying it to the
// model provider; a conversation's naming job links to the run that queued it; /metrics, parsed
// with Prometheus's own parser, moved by what a chat did, with no id among its labels.
func TestObservability(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	t.Parallel()
	recv := newOTLPReceiver(t)
	p := startParley(t, storetest.SQLite)
	p.Restart(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=parley-conformance", "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_TRACES_SAMPLER=parentbased_always_on",
		"PARLEY_OTEL_CAPTURE_CONTENT=true", "PARLEY_DEBUG_ADDR=127.0.0.1:0")

	t.Run("chatflow", func(t *testing.T) {
		name := "Traced Flow"
		p.CLI(t, "apps", "import", "--publish", chatflowDSL(t, name))
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", name))
		q := marker(t, "what is a trace")
		upstream.On(q, openaitest.Reply{Chunks: []string{"A tree", " of spans."}, Usage: &providers.Usage{PromptTokens: 31, CompletionTokens: 5}})
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"name": "Ada"},
			ResponseMode: ptr(client.Streaming)}
		var conversation, message, taskID, runID string
		for _, ev := range streamTraced(t, c, body, traceparent(clientTraceID)) {
			if eventName(t, ev) == "message_end" {
				end, _ := ev.AsMessageEndEvent()
				conversation, message, taskID = end.ConversationId.String(), end.MessageId.String(), end.TaskId.String()
			}
			if eventName(t, ev) == "workflow_started" {
				ws, _ := ev.AsWorkflowStartedEvent()
				runID = ws.WorkflowRunId.String()
			}
		}
		spans := recv.trace(t, clientTraceID, func(s []*span) bool {
			return len(named(s, "POST /v1/chat-messages")) == 1 && len(named(s, "chat gpt-4o-mini")) == 1 && len(named(s, "invoke_workflow "+name)) == 1
		})
		req := one(t, spans, "POST /v1/chat-messages", nil)
		if req.Parent != clientSpanID || req.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("the request span's parent is %s (kind %v), not the client's span", req.Parent, req.Kind)
		}
		wantAttrs(t, req, map[string]any{"http.request.method": "POST", "http.route": "/v1/chat-messages", "http.response.status_code": 200})
		if !recv.hasService("parley-conformance") {
			t.Error("the spans' resource is not the service OTEL_SERVICE_NAME names")
		}
		run := one(t, spans, "invoke_workflow "+name, req)
		wantAttrs(t, run, map[string]any{"gen_ai.operation.name": "invoke_workflow", "parley.app.name": name,
			"parley.app.mode": "advanced-chat", "parley.conversation.id": conversation, "parley.message.id": message,
			"parley.task.id": taskID, "parley.workflow_run.id": runID, "parley.run.status": "normal", "session.id": conversation})
		if got := strings.Join(childrenOf(spans, run), ", "); got != "Start, Count the turn, LLM, Answer" {
			t.Errorf("the run's children: %s", got)
		}
		llmNode := one(t, spans, "LLM", run)
		wantAttrs(t, llmNode, map[string]any{"parley.node.type": "llm", "parley.node.title": "LLM", "parley.node.status": "succeeded",
			"parley.node.retries": 0})
		call := one(t, spans, "chat gpt-4o-mini", llmNode)
		if call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("the model call's kind %v", call.Kind)
		}
		wantAttrs(t, call, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 31, "gen_ai.usage.output_tokens": 5,
			"gen_ai.response.finish_reasons": []any{"stop"}, "gen_ai.request.stream": true})
		if out, _ := call.Attrs["gen_ai.output.messages"].(string); !strings.Contains(out, `"content":"A tree of spans."`) {
			t.Errorf("captured output %q", out)
		}
		if in, _ := call.Attrs["gen_ai.input.messages"].(string); !strings.Contains(in, q) {
			t.Errorf("captured input %q", in)
		}
		// The provider was sent the model call's span as its parent.
		sent := ""
		for _, r := range upstream.Requests() {
			if strings.Contains(r.LastUserMessage(), q) {
				sent = r.Header.Get("traceparent")
			}
		}
		if want := "00-" + clientTraceID + "-" + call.ID + "-01"; sent != want {
			t.Errorf("the provider got traceparent %q, want %q", sent, want)
		}
	})

	t.Run("legacy agent", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "agent.yml")
		if err := os.WriteFile(path, []byte(strings.Replace(importedAgent, "name: Maths Agent", "name: Traced Agent", 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		p.CLI(t, "apps", "import", path)
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", "Traced Agent"))
		q := marker(t, "what is six times seven")
		upstream.OnEach(q, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{ID: "call_67", Name: "eval_expression", Arguments: `{"expression":"6*7"}`}},
			Usage:     &providers.Usage{PromptTokens: 40, CompletionTokens: 9},
		}, openaitest.Reply{Chunks: []string{"It is ", "42."}, Usage: &providers.Usage{PromptTokens: 60, CompletionTokens: 4}})
		const traceID = "5bf92f3577b34da6a3ce929d0e0e4737"
		streamTraced(t, c, client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"who": "Ada"},
			ResponseMode: ptr(client.Streaming)}, traceparent(traceID))
		spans := recv.trace(t, traceID, func(s []*span) bool {
			return len(named(s, "chat gpt-4o-mini")) == 2 && len(named(s, "invoke_agent Traced Agent")) == 1 && len(named(s, "POST /v1/chat-messages")) == 1
		})
		req := one(t, spans, "POST /v1/chat-messages", nil)
		if req.Parent != clientSpanID {
			t.Errorf("the request span's parent is %s, not the client's span", req.Parent)
		}
		run := one(t, spans, "invoke_agent Traced Agent", req)
		wantAttrs(t, run, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Traced Agent",
			"parley.app.mode": "agent-chat", "parley.run.status": "normal"})
		if got := strings.Join(childrenOf(spans, run), ", "); got != "chat gpt-4o-mini, execute_tool eval_expression, chat gpt-4o-mini" {
			t.Errorf("the turn's children: %s", got)
		}
		tool := one(t, spans, "execute_tool eval_expression", run)
		wantAttrs(t, tool, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "eval_expression",
			"gen_ai.tool.call.id": "call_67", "parley.tool.provider": "maths", "parley.tool.error": false,
			"gen_ai.tool.call.arguments": `{"expression":"6*7"}`, "gen_ai.tool.call.result": "42"})
		calls := named(spans, "chat gpt-4o-mini")
		wantAttrs(t, calls[0], map[string]any{"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9,
			"gen_ai.response.finish_reasons": []any{"tool_calls"}})
		wantAttrs(t, calls[1], map[string]any{"gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 4,
			"gen_ai.response.finish_reasons": []any{"stop"}})

		// Naming the new conversation is a job of its own trace, linked to the turn, and its
		// model call is the job's child.
		job := recv.linkedTo(t, run.ID)
		if job.TraceID == traceID || job.Parent != "" || job.Name != "job conversation.name" || job.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
			t.Errorf("naming job span %+v", job)
		}
		wantAttrs(t, job, map[string]any{"parley.job.kind": "conversation.name", "parley.job.outcome": "completed", "parley.job.attempt": 1})
		naming := recv.trace(t, job.TraceID, func(s []*span) bool { return len(named(s, "chat gpt-4o-mini")) == 1 })
		one(t, naming, "chat gpt-4o-mini", job)
	})

	t.Run("metrics", func(t *testing.T) {
		admin := debugURL(t, p)
		// Metrics are the admin listener's, never the API's.
		if resp, _ := rawDo(t, mustRequest(t, "GET", strings.TrimSuffix(p.URL, "/v1")+"/metrics")); resp.StatusCode != 404 {
			t.Errorf("the API listener serves /metrics: %d", resp.StatusCode)
		}
		before := scrapeMetrics(t, admin)
		q := marker(t, "count me")
		upstream.On(q, openaitest.Reply{Chunks: []string{"Counted."}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 4}})
		c := newClient(t, p, p.AppKey)
		var conversation, message string
		for _, ev := range streamEvents(t, c, client.SendChatMessageJSONRequestBody{Query: q, User: "metrics-user",
			Inputs: map[string]any{"tone": "warm", "name": "Ada"}, ResponseMode: ptr(client.Streaming), AutoGenerateName: ptr(false)}) {
			if eventName(t, ev) == "message_end" {
				end, _ := ev.AsMessageEndEvent()
				conversation, message = end.ConversationId.String(), end.MessageId.String()
			}
		}
		// A path no route matches, holding what looks like an id; the MCP endpoint, whose path
		// holds a server's secret code.
		rawDo(t, mustRequest(t, "GET", p.URL+"/no-such-route/"+message))
		// A method HTTP does not define, which a client may name anything.
		rawDo(t, mustRequest(t, "BREW-"+message, p.URL+"/chat-messages"))
		const code = "not-a-real-server-code"
		mcp, _ := http.NewRequest("POST", strings.TrimSuffix(p.URL, "/v1")+"/mcp/server/"+code+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		mcp.Header.Set("Content-Type", "application/json")
		mcp.Header.Set("Accept", "application/json, text/event-stream")
		// (The MCP endpoint answers JSON-RPC, outside the contract the suite's client checks.)
		mcpResp, err := http.DefaultClient.Do(mcp)
		if err != nil {
			t.Fatal(err)
		}
		mcpResp.Body.Close()
		after := scrapeMetrics(t, admin)
		if got := metricValue(after, "parley_http_request_duration_seconds", map[string]string{"method": "POST",
			"route": "/mcp/server/:server_code/mcp", "status": statusText(mcpResp.StatusCode)}); got < 1 {
			t.Errorf("the MCP request is not counted under its route template")
		}

		chatbot := map[string]string{"app": "chatbot", "provider": "openai", "model": "gpt-4o-mini"}
		with := func(extra map[string]string) map[string]string {
			out := map[string]string{}
			for k, v := range chatbot {
				out[k] = v
			}
			for k, v := range extra {
				out[k] = v
			}
			return out
		}
		for _, c := range []struct {
			name   string
			labels map[string]string
			delta  float64
		}{
			{"parley_http_request_duration_seconds", map[string]string{"method": "POST", "route": "/v1/chat-messages", "status": "200"}, 1},
			{"parley_http_request_duration_seconds", map[string]string{"method": "GET", "route": "unmatched", "status": "404"}, 1},
			{"parley_run_duration_seconds", map[string]string{"app": "chatbot", "mode": "chat", "status": "normal"}, 1},
			{"parley_run_time_to_first_token_seconds", map[string]string{"app": "chatbot", "mode": "chat"}, 1},
			{"parley_model_call_duration_seconds", map[string]string{"provider": "openai", "model": "gpt-4o-mini", "operation": "chat", "outcome": "ok"}, 1},
			{"parley_model_tokens_total", with(map[string]string{"type": "input"}), 20},
			{"parley_model_tokens_total", with(map[string]string{"type": "output"}), 4},
			// gpt-4o-mini costs 0.15 and 0.60 per million tokens in the suite's config.
			{"parley_model_cost_total", with(map[string]string{"currency": "USD"}), (20*0.15 + 4*0.60) / 1e6},
		} {
			got := metricValue(after, c.name, c.labels) - metricValue(before, c.name, c.labels)
			if got < c.delta*0.999 || got > c.delta*1.001 {
				t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.delta)
			}
		}
		for _, gauge := range []struct {
			name   string
			labels map[string]string
		}{{"parley_open_streams", map[string]string{}}, {"parley_app_active_runs", map[string]string{"app": "chatbot"}}} {
			if v := metricValue(after, gauge.name, gauge.labels); v != 0 {
				t.Errorf("%s = %v after the streams ended", gauge.name, v)
			}
		}
		// The earlier subtests' naming job ran, and the database's and the runtime's collectors report.
		if metricValue(after, "parley_job_duration_seconds", map[string]string{"kind": "conversation.name", "outcome": "completed"}) < 1 {
			t.Error("no completed naming job counted")
		}
		for _, name := range []string{"go_sql_open_connections", "go_goroutines", "process_resident_memory_bytes"} {
			if after[name] == nil {
				t.Errorf("no %s", name)
			}
		}
		// Bounded labels: no id, no user value, no query among them.
		uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
		for name, f := range after {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					v := l.GetValue()
					if uuid.MatchString(v) || strings.Contains(v, "metrics-user") || strings.Contains(v, q) || v == conversation ||
						strings.Contains(v, code) {
						t.Errorf("%s has the label %s=%q", name, l.GetName(), v)
					}
				}
			}
		}
	})
}

func statusText(code int) string { return fmt.Sprint(code) }

// debugURL is the admin listener's address, from the server's log.
func debugURL(t *testing.T, p *Parley) string {
	t.Helper()
	url := ""
	for _, line := range strings.Split(p.logs.String(), "\n") {
		var rec struct{ Msg, URL string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "debug listener" {
			url = strings.TrimSuffix(rec.URL, "/debug/pprof/")
		}
	}
	if url == "" {
		t.Fatal("the server did not log its debug listener")
	}
	return url
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// scrapeMetrics fetches /metrics as Prometheus does and parses it with Prometheus's own parser.
func scrapeMetrics(t *testing.T, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	fams, err := metricstest.Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// metricValue is the value of the sample of name with exactly labels (a histogram's count), 0
// when there is none yet.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	v, _ := metricstest.Value(fams, name, labels)
	return v
}
