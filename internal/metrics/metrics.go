// Package metrics is Parley's Prometheus metrics, served as /metrics on the admin listener
// (PARLEY_DEBUG_ADDR, internal/debugsrv), never on the API's. Every metric is declared here,
// with its labels, so that docs/observability.md and the Grafana dashboard have one place to
// read them from.
//
// A nil *Metrics is metrics off (no admin listener: nobody could scrape them): every method
// returns at once, so the hot paths pay a nil check and nothing else.
//
// Labels are bounded: routes are templates, apps are named by the operator, providers, models,
// job kinds and statuses come from the configuration or the code. No id and no value a client
// sends is ever a label.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics records Parley's metrics in a registry of its own.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.HistogramVec
	streams  prometheus.Gauge

	runs       *prometheus.HistogramVec
	firstToken *prometheus.HistogramVec
	active     *prometheus.GaugeVec
	limit      *prometheus.GaugeVec
	rejected   *prometheus.CounterVec

	modelCalls      *prometheus.HistogramVec
	modelFirstToken *prometheus.HistogramVec
	tokens          *prometheus.CounterVec
	cost            *prometheus.CounterVec
	providerErrors  *prometheus.CounterVec

	jobWait *prometheus.HistogramVec
	jobRuns *prometheus.HistogramVec
}

// Buckets, in seconds. Requests and runs span a millisecond (a listing) to minutes (a long
// stream); the first token comes within a few seconds unless a provider is in trouble; a job
// waits from nothing (handed to an idle worker) to minutes (a backlog).
var (
	durationBuckets   = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	firstTokenBuckets = []float64{.05, .1, .25, .5, .75, 1, 1.5, 2, 3, 5, 10, 20, 30}
	jobBuckets        = []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}
)

// New returns Metrics with every metric registered, with the Go runtime's and the process's
// collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_http_request_duration_seconds",
		Help:    "HTTP requests by method, route template and status, and how long they took (a stream: until it ended); _count is the requests.",
		Buckets: durationBuckets}, []string{"method", "route", "status"})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_open_streams",
		Help: "Event streams (Service API and OpenAI-compatible) open to clients."})
	m.runs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_run_duration_seconds",
		Help:    "Runs (messages answered, workflow runs) by app, mode and how they ended (normal, stopped, error, paused), and how long they took; _count is the runs.",
		Buckets: durationBuckets}, []string{"app", "mode", "status"})
	m.firstToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_run_time_to_first_token_seconds",
		Help:    "Time from a run's admission to the first text of its answer, by app and mode.",
		Buckets: firstTokenBuckets}, []string{"app", "mode"})
	m.active = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "parley_app_active_runs",
		Help: "Runs holding a concurrency slot of their app on this replica."}, []string{"app"})
	m.limit = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "parley_app_max_active_runs",
		Help: "The app's concurrency cap (max_active_requests); 0 is unlimited."}, []string{"app"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_app_rejected_runs_total",
		Help: "Runs refused with 429 because their app was at its concurrency cap."}, []string{"app"})
	m.modelCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_model_call_duration_seconds",
		Help:    "Model calls by provider, model, operation (chat, embeddings, rerank) and outcome (ok, error, cancelled: by a stop, a client gone or shutdown), and how long they took; _count is the calls.",
		Buckets: durationBuckets}, []string{"provider", "model", "operation", "outcome"})
	m.modelFirstToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_model_time_to_first_token_seconds",
		Help:    "Time from a streamed model call to its first text, by provider and model.",
		Buckets: firstTokenBuckets}, []string{"provider", "model"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_model_tokens_total",
		Help: "Tokens of model calls by app (empty outside a run: indexing, annotations), provider, model and type (input, output)."},
		[]string{"app", "provider", "model", "type"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_model_cost_total",
		Help: "Cost of model calls, priced with the models' configured pricing, by app, provider, model and currency."},
		[]string{"app", "provider", "model", "currency"})
	m.providerErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_provider_errors_total",
		Help: "Failed model calls by provider, kind (credentials, quota, model, invocation) and upstream HTTP status (empty without one)."},
		[]string{"provider", "kind", "status"})
	m.jobWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_job_wait_seconds",
		Help:    "How long background jobs waited between being due and starting, by kind.",
		Buckets: jobBuckets}, []string{"kind"})
	m.jobRuns = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_job_duration_seconds",
		Help:    "Background job runs by kind and outcome (completed, retried, failed, released, lease_lost), and how long they took.",
		Buckets: jobBuckets}, []string{"kind", "outcome"})
	m.reg.MustRegister(m.requests, m.streams, m.runs, m.firstToken, m.active, m.limit, m.rejected,
		m.modelCalls, m.modelFirstToken, m.tokens, m.cost, m.providerErrors, m.jobWait, m.jobRuns,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Register adds collectors read at each scrape (the database's and Redis's pools, the job
// queue).
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the metrics in Prometheus's text format (or OpenMetrics, when asked). A
// collector that fails (the job queue's, when the database does not answer) leaves its metrics
// out of that scrape rather than failing the scrape.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError})
}

// Request records an HTTP request answered with status after d.
func (m *Metrics) Request(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(method, route, statusLabel(status)).Observe(d.Seconds())
}

// StreamOpened and StreamClosed count an event stream to a client.
func (m *Metrics) StreamOpened() {
	if m != nil {
		m.streams.Inc()
	}
}

// StreamClosed: see StreamOpened.
func (m *Metrics) StreamClosed() {
	if m != nil {
		m.streams.Dec()
	}
}

// RunAdmitted counts a run that took one of its app's concurrency slots, limit being the app's
// cap; RunReleased gives it back.
func (m *Metrics) RunAdmitted(app string, limit int) {
	if m == nil {
		return
	}
	m.active.WithLabelValues(app).Inc()
	m.limit.WithLabelValues(app).Set(float64(max(limit, 0)))
}

// RunReleased: see RunAdmitted.
func (m *Metrics) RunReleased(app string) {
	if m != nil {
		m.active.WithLabelValues(app).Dec()
	}
}

// RunRejected counts a run refused at its app's concurrency cap.
func (m *Metrics) RunRejected(app string) {
	if m != nil {
		m.rejected.WithLabelValues(app).Inc()
	}
}

// RunFinished records a run that ended with status (the stored message's: normal, stopped,
// error; or paused) after d.
func (m *Metrics) RunFinished(app, mode, status string, d time.Duration) {
	if m != nil {
		m.runs.WithLabelValues(app, mode, status).Observe(d.Seconds())
	}
}

// FirstToken records the time from a run's admission to the first text of its answer.
func (m *Metrics) FirstToken(app, mode string, d time.Duration) {
	if m != nil {
		m.firstToken.WithLabelValues(app, mode).Observe(d.Seconds())
	}
}

// ModelCall is one call of a model, as ModelCalled records it.
type ModelCall struct {
	// App is the app whose run made the call (AppFrom), "" outside a run.
	App, Provider, Model string
	// Operation is chat, embeddings or rerank.
	Operation string
	Duration  time.Duration
	// FirstToken is the time to the first text of a streamed answer, 0 when there was none.
	FirstToken                time.Duration
	InputTokens, OutputTokens int
	// Cost is the call's price in Currency (0 for an unpriced model).
	Cost     float64
	Currency string
	// Outcome is ok, error (the provider failed) or cancelled (the caller gave up: a stop, a
	// client gone, shutdown). ErrorKind and ErrorStatus are a failure's kind and upstream HTTP
	// status (0 when there was no response).
	Outcome     string
	ErrorKind   string
	ErrorStatus int
}

// ModelCalled records a model call: its duration and outcome, its tokens and cost, its failure.
func (m *Metrics) ModelCalled(c ModelCall) {
	if m == nil {
		return
	}
	if c.Outcome == "error" {
		status := ""
		if c.ErrorStatus > 0 {
			status = statusLabel(c.ErrorStatus)
		}
		m.providerErrors.WithLabelValues(c.Provider, c.ErrorKind, status).Inc()
	}
	m.modelCalls.WithLabelValues(c.Provider, c.Model, c.Operation, c.Outcome).Observe(c.Duration.Seconds())
	if c.FirstToken > 0 {
		m.modelFirstToken.WithLabelValues(c.Provider, c.Model).Observe(c.FirstToken.Seconds())
	}
	if c.InputTokens > 0 {
		m.tokens.WithLabelValues(c.App, c.Provider, c.Model, "input").Add(float64(c.InputTokens))
	}
	if c.OutputTokens > 0 {
		m.tokens.WithLabelValues(c.App, c.Provider, c.Model, "output").Add(float64(c.OutputTokens))
	}
	if c.Cost > 0 {
		m.cost.WithLabelValues(c.App, c.Provider, c.Model, c.Currency).Add(c.Cost)
	}
}

// JobRan records a background job's run: how long it waited after it was due, how long it ran
// and how it ended (completed, retried, failed, released, lease_lost).
func (m *Metrics) JobRan(kind, outcome string, wait, d time.Duration) {
	if m == nil {
		return
	}
	m.jobWait.WithLabelValues(kind).Observe(max(wait, 0).Seconds())
	m.jobRuns.WithLabelValues(kind, outcome).Observe(d.Seconds())
}

type appKey struct{}

// WithApp returns ctx naming the app whose run it belongs to, for the metrics of the model
// calls made under it.
func WithApp(ctx context.Context, app string) context.Context {
	return context.WithValue(ctx, appKey{}, app)
}

// AppFrom is the app ctx names (WithApp), or "".
func AppFrom(ctx context.Context) string {
	a, _ := ctx.Value(appKey{}).(string)
	return a
}

// statusLabels holds the HTTP statuses as text, so that a label costs no allocation.
var statusLabels = func() (s [600]string) {
	for i := 100; i < len(s); i++ {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

func statusLabel(code int) string {
	if code >= 100 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}
