package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The observe phase (reported as 5) measures what tracing and metrics cost: three servers, one
// with both off (the default), one with metrics only (an admin listener, scraped every
// observeScrape) and one with metrics and tracing, exporting every span over OTLP/HTTP to a
// receiver in this process, take the same loads in interleaved windows; the figure is the
// server's CPU per request of each against off.

// observeSides are the phase's servers, in the order each load visits them.
var observeSides = []string{"off", "metrics", "traced"}

// observeScrape is how often the metrics of the server with them on are scraped: a short
// scrape interval, so that what scrapes cost shows.
const observeScrape = 5 * time.Second

// spanSink is an OTLP/HTTP trace endpoint that decodes what it is sent, to count the spans, and
// keeps nothing.
type spanSink struct {
	*httptest.Server
	spans, exports, bad atomic.Int64
}

func newSpanSink() *spanSink {
	s := &spanSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err != nil || proto.Unmarshal(raw, req) != nil {
			s.bad.Add(1)
			http.Error(w, "not an OTLP export", http.StatusBadRequest)
			return
		}
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		s.spans.Add(int64(n))
		s.exports.Add(1)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	return s
}

// observeResult is the observe phase: each load on each side (observeSides).
type observeResult struct {
	workers  int
	variants []*agentVariant
	// loads are the variants of each load, one per side in observeSides order.
	loads [][]*agentVariant
	// spans were received over the phase's measured windows from the traced server, for its
	// requests requests; scrapes is how many times metrics were read (failures: scrapeErrs).
	spans, requests     int64
	scrapes, scrapeErrs atomic.Int64
	sinkBad             int64
	logs                []string
}

// observePhase starts a server per side of observeSides and measures the server's CPU per
// blocking Chatbot request, per streamed Chatbot request and per blocking run of the 20-node
// Chatflow on each, interleaved.
func observePhase(ctx context.Context, o options, bin, tmp string, settings serverSettings) (*observeResult, error) {
	res := &observeResult{workers: o.workers}
	sink := newSpanSink()
	defer sink.Close()
	servers := map[string]*parley{}
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	defer stopScraping()
	for _, side := range observeSides {
		s := settings
		s.debugAddr = ""
		s.extraEnv = append([]string(nil), settings.extraEnv...)
		if side != "off" {
			s.debugAddr = "127.0.0.1:0"
		}
		if side == "traced" {
			s.extraEnv = append(s.extraEnv, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
				"OTEL_SERVICE_NAME=parley-load")
		}
		p, err := startParley(ctx, bin, filepath.Join(tmp, "observe-"+side), s)
		if err != nil {
			return res, err
		}
		defer p.stop()
		servers[side] = p
		logf("observe phase: parley pid %d, %s", p.pid, side)
		if side != "off" {
			admin := p.adminURL()
			if admin == "" {
				return res, fmt.Errorf("the %s server logged no admin listener; log:\n%s", side, p.logTail())
			}
			go res.scrape(scrapeCtx, admin)
		}
	}

	no := false
	query := blockMarker + " Say hello."
	wantChat := strings.Join(blockChunks, "")
	wantGraph := graphAnswer(query)
	conns := o.workers + 64
	answer := func(ctx context.Context, t *target, body []byte, want string) error {
		var r struct {
			Answer string `json:"answer"`
		}
		if err := blockingCall(ctx, t, body, &r); err != nil {
			return err
		}
		if r.Answer != want {
			return fmt.Errorf("answer %q, want %q", r.Answer, want)
		}
		return nil
	}
	res.loads = make([][]*agentVariant, 3)
	for _, side := range observeSides {
		p := servers[side]
		chat := &target{name: "parley " + side, client: newClient(conns), url: p.base + "/chat-messages", key: p.key}
		graph := &target{name: "parley graph " + side, client: chat.client, url: p.base + "/chat-messages", key: p.graphKey}
		blocking, streaming, runs := make([][]byte, o.workers), make([][]byte, o.workers), make([][]byte, o.workers)
		for w := range o.workers {
			user := fmt.Sprintf("observe-%s-%d", side, w)
			blocking[w] = chatBody(query, user, "blocking", "", &no)
			streaming[w] = chatBody(query, user, "streaming", "", &no)
			runs[w] = chatBody(query, user+"-graph", "blocking", "", &no)
		}
		if err := answer(ctx, graph, runs[0], wantGraph); err != nil {
			return res, fmt.Errorf("observe preflight (%s): %w", side, err)
		}
		res.loads[0] = append(res.loads[0], &agentVariant{name: "Chatbot, blocking, " + side, server: p, do: func(ctx context.Context, w int) (int, error) {
			return 1, answer(ctx, chat, blocking[w], wantChat)
		}})
		res.loads[1] = append(res.loads[1], &agentVariant{name: "Chatbot, streaming, " + side, server: p, do: func(ctx context.Context, w int) (int, error) {
			r, err := streamParley(ctx, chat, streaming[w], true, nil)
			if err == nil && r.answer != wantChat {
				err = fmt.Errorf("answer %q, want %q", r.answer, wantChat)
			}
			return 1, err
		}})
		res.loads[2] = append(res.loads[2], &agentVariant{name: fmt.Sprintf("Chatflow of %d nodes, blocking, %s", graphNodes, side), server: p,
			do: func(ctx context.Context, w int) (int, error) { return 1, answer(ctx, graph, runs[w], wantGraph) }})
	}
	for _, load := range res.loads {
		res.variants = append(res.variants, load...)
	}
	// Spans are counted over the measured windows only.
	var spans0 int64
	measured := func() {
		// The batch span processor sends what it holds every 5 s: the warm-up's spans first.
		time.Sleep(6 * time.Second)
		spans0 = sink.spans.Load()
	}
	err := measureCPU(ctx, o, servers["off"], "observe", o.observeRounds, res.variants, measured)
	stopScraping()
	time.Sleep(6 * time.Second) // the last spans' export
	res.spans = sink.spans.Load() - spans0
	for _, load := range res.loads {
		n, _, _, _, _ := load[2].totals()
		res.requests += int64(n)
	}
	res.sinkBad = sink.bad.Load()
	for _, side := range observeSides {
		res.logs = append(res.logs, side+": "+servers[side].logSummary())
	}
	return res, err
}

// scrape reads the metrics at admin every observeScrape until ctx ends.
func (res *observeResult) scrape(ctx context.Context, admin string) {
	t := time.NewTicker(observeScrape)
	defer t.Stop()
	hc := &http.Client{Timeout: 10 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		resp, err := hc.Get(admin + "/metrics")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			res.scrapeErrs.Add(1)
			continue
		}
		res.scrapes.Add(1)
	}
}

func (r *report) writeObserve(b *strings.Builder) {
	o, ob := r.opts, r.observe
	fmt.Fprintf(b, "\n5. Observability: what metrics and tracing cost, against both off (the default)\n")
	fmt.Fprintf(b, "   three servers: off; metrics (the admin listener, /metrics scraped every %s); traced (metrics, and\n", observeScrape)
	fmt.Fprintf(b, "   every span exported over OTLP/HTTP to a receiver in this process, the default sampler). %d workers,\n", ob.workers)
	fmt.Fprintf(b, "   each its own user, a new conversation each, auto_generate_name=false, back to back for %s per\n", o.duration)
	fmt.Fprintf(b, "   window; %d measured rounds after a warm-up, interleaved (each load on each server in turn);\n", o.observeRounds)
	fmt.Fprintf(b, "   zero-delay upstream\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \treq/s\tp50 µs\tp99 µs\terrors\tparley CPU/req\t/off\t\n")
	for _, load := range ob.loads {
		var off float64
		for i, v := range load {
			n, _, _, _, errs := v.totals()
			p50, p99 := latencyMedians(v.rounds)
			if n == 0 {
				fmt.Fprintf(tw, "  %s\t-\t-\t-\t%d\t-\t\t\n", v.name, errs)
				continue
			}
			cpu, _ := v.cpuPer()
			ratio := ""
			if i == 0 {
				off = cpu
			} else if off > 0 {
				ratio = fmt.Sprintf("%.3f×", cpu/off)
			}
			fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.0f\t%d\t%.0f µs\t%s\t\n", v.name, median(rates(v.rounds)), p50, p99, errs, cpu, ratio)
		}
	}
	tw.Flush()
	perReq := 0.0
	if ob.requests > 0 {
		perReq = float64(ob.spans) / float64(ob.requests)
	}
	fmt.Fprintf(b, "\n   spans received from the traced server: %d over its %d measured requests (%.1f a request, the\n", ob.spans, ob.requests, perReq)
	fmt.Fprintf(b, "   three loads together); %d malformed exports; metrics scraped %d times, %d failed\n", ob.sinkBad, ob.scrapes.Load(), ob.scrapeErrs.Load())
	for _, l := range ob.logs {
		fmt.Fprintf(b, "   server log, %s\n", l)
	}
}
