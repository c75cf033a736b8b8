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

// The observe phase (reported as 5) measures what tracing and metrics cost: two servers, one
// with both off (the default) and one exporting every span over OTLP/HTTP to a receiver in this
// process and serving /metrics, scraped every observeScrape, take the same loads in interleaved
// windows; the figure is the server's CPU per request, on against off.

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

// observeResult is the observe phase: each load with tracing and metrics off, then on.
type observeResult struct {
	workers  int
	variants []*agentVariant
	// pairs are the (off, on) variants of each load, in order.
	pairs [][2]*agentVariant
	// spans were received over the phase's measured windows of the server with tracing on, for
	// requests requests; scrapes is how many times its metrics were read (failures: scrapeErrs).
	spans, requests     int64
	scrapes, scrapeErrs int64
	sinkBad             int64
	offLog, onLog       string
}

// observePhase starts a server with tracing and metrics off and one with both on, and measures
// the server's CPU per blocking Chatbot request, per streamed Chatbot request and per blocking
// run of the 20-node Chatflow on each, interleaved.
func observePhase(ctx context.Context, o options, bin, tmp string, settings serverSettings) (observeResult, error) {
	res := observeResult{workers: o.workers}
	sink := newSpanSink()
	defer sink.Close()
	off := settings
	off.debugAddr = ""
	on := settings
	on.debugAddr = "127.0.0.1:0"
	on.extraEnv = append(append([]string(nil), settings.extraEnv...),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_SERVICE_NAME=parley-load")
	servers := map[string]*parley{}
	for _, side := range []struct {
		name string
		s    serverSettings
	}{{"off", off}, {"on", on}} {
		p, err := startParley(ctx, bin, filepath.Join(tmp, "observe-"+side.name), side.s)
		if err != nil {
			return res, err
		}
		defer p.stop()
		servers[side.name] = p
		logf("observe phase: parley pid %d, tracing and metrics %s", p.pid, side.name)
	}
	admin := servers["on"].adminURL()
	if admin == "" {
		return res, fmt.Errorf("the server with metrics on logged no admin listener; log:\n%s", servers["on"].logTail())
	}
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	defer stopScraping()
	go func() {
		t := time.NewTicker(observeScrape)
		defer t.Stop()
		hc := &http.Client{Timeout: 10 * time.Second}
		for {
			select {
			case <-scrapeCtx.Done():
				return
			case <-t.C:
			}
			resp, err := hc.Get(admin + "/metrics")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				res.scrapeErrs++
				continue
			}
			res.scrapes++
		}
	}()

	no := false
	query := blockMarker + " Say hello."
	wantChat := strings.Join(blockChunks, "")
	wantGraph := graphAnswer(query)
	conns := o.workers + 64
	for _, side := range []string{"off", "on"} {
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
		if err := answer(ctx, graph, runs[0], wantGraph); err != nil {
			return res, fmt.Errorf("observe preflight (%s): %w", side, err)
		}
		res.variants = append(res.variants,
			&agentVariant{name: "Chatbot, blocking, " + side, server: p, do: func(ctx context.Context, w int) (int, error) {
				return 1, answer(ctx, chat, blocking[w], wantChat)
			}},
			&agentVariant{name: "Chatbot, streaming, " + side, server: p, do: func(ctx context.Context, w int) (int, error) {
				r, err := streamParley(ctx, chat, streaming[w], true, nil)
				if err == nil && r.answer != wantChat {
					err = fmt.Errorf("answer %q, want %q", r.answer, wantChat)
				}
				return 1, err
			}},
			&agentVariant{name: fmt.Sprintf("Chatflow of %d nodes, blocking, %s", graphNodes, side), server: p, do: func(ctx context.Context, w int) (int, error) {
				return 1, answer(ctx, graph, runs[w], wantGraph)
			}})
	}
	// Interleave each load off, then on.
	n := len(res.variants) / 2
	ordered := make([]*agentVariant, 0, len(res.variants))
	for i := range n {
		res.pairs = append(res.pairs, [2]*agentVariant{res.variants[i], res.variants[n+i]})
		ordered = append(ordered, res.variants[i], res.variants[n+i])
	}
	res.variants = ordered
	// Spans are counted over the measured windows only: the sink's count when the first one
	// starts (after the warm-up) and once the last has been exported.
	var spans0 int64
	measured := func() {
		// The batch span processor sends what it holds every 5 s: the warm-up's spans first.
		time.Sleep(6 * time.Second)
		spans0 = sink.spans.Load()
	}
	err := measureCPU(ctx, o, servers["off"], "observe", o.observeRounds, res.variants, measured)
	stopScraping()
	// The batch span processor sends what it holds every 5 s: wait for the last export.
	time.Sleep(6 * time.Second)
	res.spans = sink.spans.Load() - spans0
	for _, pair := range res.pairs {
		n, _, _, _, _ := pair[1].totals()
		res.requests += int64(n)
	}
	res.sinkBad = sink.bad.Load()
	res.offLog, res.onLog = servers["off"].logSummary(), servers["on"].logSummary()
	return res, err
}

func (r *report) writeObserve(b *strings.Builder) {
	o, ob := r.opts, r.observe
	fmt.Fprintf(b, "\n5. Observability: what tracing and metrics cost, off (the default) against on\n")
	fmt.Fprintf(b, "   two servers: one with tracing and metrics off; one exporting every span (the default sampler)\n")
	fmt.Fprintf(b, "   over OTLP/HTTP to a receiver in this process, with /metrics on its admin listener scraped every\n")
	fmt.Fprintf(b, "   %s. %d workers, each its own user, a new conversation each, auto_generate_name=false, back to\n", observeScrape, ob.workers)
	fmt.Fprintf(b, "   back for %s per window; %d measured rounds after a warm-up, interleaved (each load off, then on);\n", o.duration, o.observeRounds)
	fmt.Fprintf(b, "   zero-delay upstream\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \treq/s\tp50 µs\tp99 µs\terrors\tparley CPU/req\ton/off\t\n")
	for _, pair := range ob.pairs {
		var off float64
		for i, v := range pair {
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
	fmt.Fprintf(b, "\n   spans received from the server with tracing on: %d over its %d measured requests (%.1f a request,\n", ob.spans, ob.requests, perReq)
	fmt.Fprintf(b, "   the three loads together); %d malformed exports; metrics scraped %d times, %d failed\n", ob.sinkBad, ob.scrapes, ob.scrapeErrs)
	fmt.Fprintf(b, "   server log, off: %s\n   server log, on: %s\n", ob.offLog, ob.onLog)
}
