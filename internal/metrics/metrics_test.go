package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/metrics/metricstest"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// scrape fetches m's metrics as a scraper would and parses them with Prometheus's own parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	fams, err := metricstest.Parse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the value of the sample of family name whose labels are labels (a histogram's
// count).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	if fams[name] == nil {
		t.Fatalf("no %s", name)
	}
	v, ok := metricstest.Value(fams, name, labels)
	if !ok {
		t.Fatalf("no %s%v", name, labels)
	}
	return v
}

func TestRecords(t *testing.T) {
	m := New()
	m.Request("POST", "/v1/chat-messages", 200, 30*time.Millisecond)
	m.Request("POST", "/v1/chat-messages", 429, time.Millisecond)
	m.StreamOpened()
	m.StreamOpened()
	m.StreamClosed()
	m.RunAdmitted("bot", 4)
	m.RunAdmitted("bot", 4)
	m.RunReleased("bot")
	m.RunRejected("bot")
	m.RunFinished("bot", "chat", "normal", time.Second)
	m.FirstToken("bot", "chat", 200*time.Millisecond)
	m.ModelCalled(ModelCall{App: "bot", Provider: "openai", Model: "gpt-4o", Operation: "chat", Duration: time.Second,
		FirstToken: 100 * time.Millisecond, InputTokens: 20, OutputTokens: 5, Cost: 0.0001, Currency: "USD", Outcome: "ok"})
	m.ModelCalled(ModelCall{Provider: "openai", Model: "gpt-4o", Operation: "chat", Outcome: "error", ErrorKind: "quota", ErrorStatus: 429})
	m.JobRan("chat.name", "completed", time.Millisecond, 10*time.Millisecond)
	fams := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"parley_http_request_duration_seconds", map[string]string{"method": "POST", "route": "/v1/chat-messages", "status": "200"}, 1},
		{"parley_http_request_duration_seconds", map[string]string{"method": "POST", "route": "/v1/chat-messages", "status": "429"}, 1},
		{"parley_open_streams", map[string]string{}, 1},
		{"parley_app_active_runs", map[string]string{"app": "bot"}, 1},
		{"parley_app_max_active_runs", map[string]string{"app": "bot"}, 4},
		{"parley_app_rejected_runs_total", map[string]string{"app": "bot"}, 1},
		{"parley_run_duration_seconds", map[string]string{"app": "bot", "mode": "chat", "status": "normal"}, 1},
		{"parley_run_time_to_first_token_seconds", map[string]string{"app": "bot", "mode": "chat"}, 1},
		{"parley_model_call_duration_seconds", map[string]string{"provider": "openai", "model": "gpt-4o", "operation": "chat", "outcome": "ok"}, 1},
		{"parley_model_call_duration_seconds", map[string]string{"provider": "openai", "model": "gpt-4o", "operation": "chat", "outcome": "error"}, 1},
		{"parley_model_time_to_first_token_seconds", map[string]string{"provider": "openai", "model": "gpt-4o"}, 1},
		{"parley_model_tokens_total", map[string]string{"app": "bot", "provider": "openai", "model": "gpt-4o", "type": "input"}, 20},
		{"parley_model_tokens_total", map[string]string{"app": "bot", "provider": "openai", "model": "gpt-4o", "type": "output"}, 5},
		{"parley_model_cost_total", map[string]string{"app": "bot", "provider": "openai", "model": "gpt-4o", "currency": "USD"}, 0.0001},
		{"parley_provider_errors_total", map[string]string{"provider": "openai", "kind": "quota", "status": "429"}, 1},
		{"parley_job_wait_seconds", map[string]string{"kind": "chat.name"}, 1},
		{"parley_job_duration_seconds", map[string]string{"kind": "chat.name", "outcome": "completed"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// Off (nil), recording costs nothing.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	allocs := testing.AllocsPerRun(100, func() {
		m.Request("GET", "/v1/parameters", 200, time.Millisecond)
		m.StreamOpened()
		m.StreamClosed()
		m.RunAdmitted("bot", 1)
		m.RunReleased("bot")
		m.RunFinished("bot", "chat", "normal", time.Second)
		m.FirstToken("bot", "chat", time.Second)
		m.ModelCalled(ModelCall{Provider: "openai"})
		m.JobRan("k", "completed", 0, 0)
	})
	if allocs != 0 {
		t.Errorf("%.0f allocations with metrics off", allocs)
	}
}

// Recording a request, the one metric of every request, allocates nothing once its series
// exists.
func TestRequestAllocatesNothing(t *testing.T) {
	m := New()
	m.Request("GET", "/v1/parameters", 200, time.Millisecond)
	if allocs := testing.AllocsPerRun(100, func() { m.Request("GET", "/v1/parameters", 200, time.Millisecond) }); allocs != 0 {
		t.Errorf("%.0f allocations per request", allocs)
	}
}

type fakePool struct{ s redis.PoolStats }

func (p fakePool) PoolStats() *redis.PoolStats { return &p.s }

func TestCollectors(t *testing.T) {
	m := New()
	failing := false
	due := time.Now().Add(-90 * time.Second)
	err := m.Register(
		RedisPools(map[string]interface{ PoolStats() *redis.PoolStats }{"main": fakePool{redis.PoolStats{Hits: 7, TotalConns: 5, IdleConns: 2}}}),
		JobQueue(func(context.Context) ([]QueueCount, error) {
			if failing {
				return nil, errors.New("database down")
			}
			return []QueueCount{{Kind: "knowledge.index", State: "queued", Jobs: 3, OldestDue: due},
				{Kind: "knowledge.index", State: "failed", Jobs: 1}, {Kind: "chat.name", State: "running", Jobs: 2}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	if v := value(t, fams, "parley_redis_pool_connections", map[string]string{"pool": "main", "state": "in_use"}); v != 3 {
		t.Errorf("in use %v", v)
	}
	if v := value(t, fams, "parley_redis_pool_hits_total", map[string]string{"pool": "main"}); v != 7 {
		t.Errorf("hits %v", v)
	}
	if v := value(t, fams, "parley_jobs", map[string]string{"kind": "knowledge.index", "state": "queued"}); v != 3 {
		t.Errorf("queued %v", v)
	}
	if v := value(t, fams, "parley_jobs_oldest_due_seconds", map[string]string{"kind": "knowledge.index"}); v < 89 || v > 120 {
		t.Errorf("lag %v", v)
	}
	if v := value(t, fams, "parley_jobs_oldest_due_seconds", map[string]string{"kind": "chat.name"}); v != 0 {
		t.Errorf("lag without a due job %v", v)
	}
	// A database that does not answer leaves the queue out of the scrape, not the scrape out.
	failing = true
	fams = scrape(t, m)
	if fams["parley_jobs"] != nil || fams["go_goroutines"] == nil {
		t.Errorf("with the database down: %d families, jobs %v", len(fams), fams["parley_jobs"])
	}
}
