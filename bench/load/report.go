package main

import (
	"fmt"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// report collects the phases' results and renders them.
type report struct {
	opts               options
	env                []string
	latency, light     *latencyResult
	blocking           *blockingResult
	agent              *agentPhaseResult
	graph              *graphPhaseResult
	jobs               *jobResult
	memory             *memoryResult
	mainLog, memoryLog string
	replicas           []*replicasSide
	replicasSkipped    string
	observe            *observeResult
	pages              *pagesResult
	endLoad            string
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "MISSED"
}

func (r *report) String() string {
	var b strings.Builder
	o := r.opts
	fmt.Fprintf(&b, "Parley load benchmark (bench/load), loopback 127.0.0.1\n\n")
	for _, l := range r.env {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "  server      parley serve, PARLEY_RESPONSE_VALIDATION=%s, log level info (JSON); app `bench` (chat mode), app `writer` (completion mode), app `bench-agent` (agent-chat, imported), app `bench-graph` (advanced-chat, imported)\n", o.validation)
	fmt.Fprintf(&b, "  upstream    internal/providers/openaitest fake, request log off, fixed usage (no token counting)\n")
	if r.latency != nil {
		r.writeLatency(&b, r.latency, true)
	}
	if r.light != nil {
		r.writeLatency(&b, r.light, false)
	}
	if r.blocking != nil {
		r.writeBlocking(&b)
	}
	if r.agent != nil {
		r.writeAgent(&b)
	}
	if r.graph != nil {
		r.writeGraph(&b)
	}
	if r.jobs != nil {
		r.writeJobs(&b)
	}
	if r.mainLog != "" {
		fmt.Fprintf(&b, "\n  server log (phases 1, 2, 2b and 2c): %s\n", r.mainLog)
	}
	if r.memory != nil {
		r.writeMemory(&b)
	}
	if r.replicas != nil || r.replicasSkipped != "" {
		r.writeReplicas(&b)
	}
	if r.observe != nil {
		r.writeObserve(&b)
	}
	if r.pages != nil {
		r.writePages(&b)
	}
	r.writeTargets(&b)
	if r.endLoad != "" {
		fmt.Fprintf(&b, "\n  load avg %s at the end (1/5/15 min)\n", r.endLoad)
	}
	return b.String()
}

// sideMedians are the medians over rounds of one figure on the direct and the parley side, in µs.
func sideMedians(direct, parley []latencySide, get func(latencySide) time.Duration) (md, mp float64) {
	var d, p []float64
	for i := range direct {
		d, p = append(d, us(get(direct[i]))), append(p, us(get(parley[i])))
	}
	return median(d), median(p)
}

// latencyRow is one figure across rounds on both sides.
func latencyRow(tw *tabwriter.Writer, name string, direct, parley []latencySide, get func(latencySide) time.Duration) float64 {
	var added []float64
	for i := range direct {
		added = append(added, us(get(parley[i]))-us(get(direct[i])))
	}
	md, mp := sideMedians(direct, parley, get)
	lo, hi := spread(added)
	ratio := 0.0
	if md > 0 {
		ratio = mp / md
	}
	fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%+.0f\t%.3f×\t%+.0f … %+.0f\t\n", name, md, mp, mp-md, ratio, lo, hi)
	return mp - md
}

func (r *report) writeLatency(b *strings.Builder, l *latencyResult, target bool) {
	o := r.opts
	if target {
		fmt.Fprintf(b, "\n1. Streaming latency at %d concurrent streams\n", l.streams)
		fmt.Fprintf(b, "   answer: %d chunks, %s before each, headers after %s (≈%s per answer upstream)\n",
			o.chunks, o.chunkDelay, o.firstByte, o.firstByte+time.Duration(o.chunks)*o.chunkDelay)
		fmt.Fprintf(b, "   %d measured rounds after a warm-up, interleaved (direct, parley, direct, …); per round and side\n", len(l.direct))
		fmt.Fprintf(b, "   %d streams × %d measured requests (+1 unmeasured before and after, staggered start);\n", l.streams, o.per)
		fmt.Fprintf(b, "   figures are the median over rounds of each round's percentile, in µs\n")
		fmt.Fprintf(b, "   direct: POST fake /v1/chat/completions stream=true, TTFT = first non-empty content delta, total = [DONE]\n")
		fmt.Fprintf(b, "   parley: POST /v1/chat-messages streaming, new conversation, TTFT = first `message` event, total = message_end\n\n")
	} else {
		fmt.Fprintf(b, "\n1b. Reference: the same at %d concurrent streams (%d × %d measured requests per round and side; no target)\n\n",
			l.streams, l.streams, o.per)
	}
	if len(l.direct) == 0 {
		fmt.Fprintf(b, "   (no measured round)\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tdirect µs\tparley µs\tadded µs\tratio\tadded, range over rounds\t\n")
	latencyRow(tw, "TTFT p50", l.direct, l.parley, func(s latencySide) time.Duration { return s.ttftP50 })
	latencyRow(tw, "TTFT p99", l.direct, l.parley, func(s latencySide) time.Duration { return s.ttftP99 })
	latencyRow(tw, "total p50", l.direct, l.parley, func(s latencySide) time.Duration { return s.totalP50 })
	latencyRow(tw, "total p99", l.direct, l.parley, func(s latencySide) time.Duration { return s.totalP99 })
	tw.Flush()
	var nd, np, ed, ep int
	for i := range l.direct {
		nd += l.direct[i].n
		np += l.parley[i].n
		ed += l.direct[i].errs
		ep += l.parley[i].errs
	}
	fmt.Fprintf(b, "\n   samples: direct %d, parley %d; errors: direct %d, parley %d\n", nd, np, ed, ep)
	if target && l.parleyReqs > 0 {
		fmt.Fprintf(b, "   parley CPU: %.0f µs per streamed chat (%d chats, incl. conversation naming after each)\n",
			us(l.parleyCPU)/float64(l.parleyReqs), l.parleyReqs)
	}
}

func (r *report) writeBlocking(b *strings.Builder) {
	o, bl := r.opts, r.blocking
	fmt.Fprintf(b, "\n2. Blocking chats (and Completions) per second\n")
	fmt.Fprintf(b, "   %d workers, each its own user, sending back to back for %s per window; %d measured rounds after a\n", bl.workers, o.duration, o.blockRounds)
	fmt.Fprintf(b, "   warm-up, interleaved (direct, then each parley variant); zero-delay %d-chunk answer; req/s is the\n", len(blockChunks))
	fmt.Fprintf(b, "   median over rounds, p50/p99 the median of the rounds' request latencies\n\n")
	if len(bl.variants) == 0 || len(bl.variants[0].rounds) == 0 {
		fmt.Fprintf(b, "   (no measured round)\n")
		return
	}
	base := median(rates(bl.variants[0].rounds))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \treq/s\trange\tvs direct\tp50 µs\tp99 µs\terrors\tparley CPU/req\tbench CPU/req\t\n")
	for _, v := range bl.variants {
		if len(v.rounds) == 0 {
			continue
		}
		rs := rates(v.rounds)
		m := median(rs)
		lo, hi := spread(rs)
		var p50, p99 []float64
		var errs, n int
		var srv, self time.Duration
		for _, w := range v.rounds {
			p50 = append(p50, us(w.p50))
			p99 = append(p99, us(w.p99))
			errs += w.errs
			n += w.n
			srv += w.serverCPU
			self += w.selfCPU
		}
		srvPer := "-"
		if v.parley && n > 0 {
			srvPer = fmt.Sprintf("%.0f µs", us(srv)/float64(n))
		}
		selfPer := "-"
		if n > 0 {
			selfPer = fmt.Sprintf("%.0f µs", us(self)/float64(n))
		}
		ratio := 0.0
		if base > 0 {
			ratio = m / base
		}
		fmt.Fprintf(tw, "  %s\t%.0f\t%.0f … %.0f\t%.3f×\t%.0f\t%.0f\t%d\t%s\t%s\t\n", v.name, m, lo, hi, ratio, median(p50), median(p99), errs, srvPer, selfPer)
	}
	tw.Flush()
	fmt.Fprintf(b, "\n   CPU/req: CPU time per completed request (parley: the server process, incl. settling after the\n")
	fmt.Fprintf(b, "   window; bench: this process = load generator + fake upstream); %d CPUs are shared\n", runtimeCPUs())
}

// cpuPerRequest is the server's CPU per completed request of a blocking variant, in µs (0 when
// it has none).
func (v *blockingVariant) cpuPerRequest() float64 {
	var n int
	var cpu time.Duration
	for _, w := range v.rounds {
		n += w.n
		cpu += w.serverCPU
	}
	if n == 0 {
		return 0
	}
	return us(cpu) / float64(n)
}

func (r *report) writeAgent(b *strings.Builder) {
	o, a := r.opts, r.agent
	fmt.Fprintf(b, "\n2b. Legacy Agent: server CPU per agent step, next to Chatbot requests\n")
	fmt.Fprintf(b, "   %d workers, each its own user, a new conversation each turn, auto_generate_name=false, streaming\n", a.workers)
	fmt.Fprintf(b, "   (agent-chat refuses blocking), back to back for %s per window; %d measured rounds after a warm-up,\n", o.duration, o.agentRounds)
	fmt.Fprintf(b, "   interleaved (Chatbot, then agent); zero-delay upstream. The agent (function calling) is told by the\n")
	fmt.Fprintf(b, "   fake to call maths/eval_expression(%s) while the last message is the user's, and answers once it\n", agentExpression)
	fmt.Fprintf(b, "   reads the tool's result: %d steps (agent_thought ids) a turn, each stored and streamed as it fills in\n\n", agentSteps)
	if a.chat == nil || len(a.chat.rounds) == 0 || len(a.agent.rounds) == 0 {
		fmt.Fprintf(b, "   (no measured round)\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \treq/s\tp50 µs\tp99 µs\terrors\tsteps/req\tparley CPU/req\tparley CPU/step\tbench CPU/req\t\n")
	perReq := map[*agentVariant]float64{}
	perStep := map[*agentVariant]float64{}
	for _, v := range a.variants {
		n, steps, _, self, errs := v.totals()
		p50, p99 := latencyMedians(v.rounds)
		if n == 0 || steps == 0 {
			fmt.Fprintf(tw, "  %s\t-\t-\t-\t%d\t-\t-\t-\t-\t\n", v.name, errs)
			continue
		}
		perReq[v], perStep[v] = v.cpuPer()
		fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.0f\t%d\t%.2f\t%.0f µs\t%.0f µs\t%.0f µs\t\n", v.name, median(rates(v.rounds)),
			p50, p99, errs, float64(steps)/float64(n), perReq[v], perStep[v], us(self)/float64(n))
	}
	tw.Flush()
	chat, turn, step := perReq[a.chat], perReq[a.agent], perStep[a.agent]
	if chat <= 0 || turn <= 0 {
		return
	}
	fmt.Fprintf(b, "\n   server CPU of the agent against Chatbot requests of this run (ratio = agent / Chatbot):\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  Chatbot reference\tChatbot µs/req\tagent µs/turn\tturn ratio\tagent µs/step\tstep ratio\t\n")
	row := func(name string, ref float64) {
		if ref > 0 {
			fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.2f×\t%.0f\t%.2f×\t\n", name, ref, turn, turn/ref, step, step/ref)
		}
	}
	row("streamed, same load as the agent (2b)", chat)
	if l := r.latency; l != nil && l.parleyReqs > 0 {
		row(fmt.Sprintf("streamed, %d chunks, with naming (1)", o.chunks), us(l.parleyCPU)/float64(l.parleyReqs))
	}
	if bl := r.blocking; bl != nil {
		for _, v := range bl.variants {
			if v.parley && strings.HasPrefix(v.name, "parley, new conv") {
				row("blocking, "+strings.TrimPrefix(v.name, "parley, ")+" (2)", v.cpuPerRequest())
			}
		}
	}
	tw.Flush()
	fmt.Fprintf(b, "\n   CPU: the server process over each window and its settling, divided by completed requests, turns\n")
	fmt.Fprintf(b, "   or steps; a Chatbot request is one step. bench: this process (load generator + fake upstream)\n")
}

func (r *report) writeGraph(b *strings.Builder) {
	o, g := r.opts, r.graph
	fmt.Fprintf(b, "\n2c. Chatflow: server CPU per run of a %d-node graph, next to Chatbot requests\n", graphNodes)
	fmt.Fprintf(b, "   %d workers, each its own user, a new conversation each, auto_generate_name=false, blocking, back to\n", g.workers)
	fmt.Fprintf(b, "   back for %s per window; %d measured rounds after a warm-up, interleaved (Chatbot, then Chatflow);\n", o.duration, o.graphRounds)
	fmt.Fprintf(b, "   zero-delay upstream. The Chatflow: start, LLM, if-else, template, assigner, aggregator, iteration\n")
	fmt.Fprintf(b, "   (3 items, a template inside), LLM, 8 aggregators, template, answer: %d model calls a run\n\n", graphModelCalls)
	if g.chat == nil || len(g.chat.rounds) == 0 || len(g.graph.rounds) == 0 {
		fmt.Fprintf(b, "   (no measured round)\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \treq/s\tp50 µs\tp99 µs\terrors\tparley CPU/req\tbench CPU/req\t\n")
	perReq := map[*agentVariant]float64{}
	for _, v := range g.variants {
		n, _, _, self, errs := v.totals()
		p50, p99 := latencyMedians(v.rounds)
		if n == 0 {
			fmt.Fprintf(tw, "  %s\t-\t-\t-\t%d\t-\t-\t\n", v.name, errs)
			continue
		}
		perReq[v], _ = v.cpuPer()
		fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.0f\t%d\t%.0f µs\t%.0f µs\t\n", v.name, median(rates(v.rounds)),
			p50, p99, errs, perReq[v], us(self)/float64(n))
	}
	tw.Flush()
	chat, run := perReq[g.chat], perReq[g.graph]
	if chat <= 0 || run <= 0 {
		return
	}
	over := run - chat
	verdict := "met"
	if over > graphTarget {
		verdict = "MISSED"
	}
	fmt.Fprintf(b, "\n   a run costs %.2f× a Chatbot request (%.0f µs against %.0f µs); over it, %.0f µs: the graph engine,\n", run/chat, run, chat, over)
	fmt.Fprintf(b, "   its %d nodes, events and stored node executions, and its second model call\n", graphNodes)
	fmt.Fprintf(b, "   target: ≤ %.0f µs of server CPU per run over its model calls (here bounded above by the figure\n", graphTarget)
	fmt.Fprintf(b, "   over a Chatbot request, which also counts the second call): %s (%.0f µs)\n", verdict, over)
}

// latencyMedians are the medians over windows of their p50 and p99 latencies, in µs.
func latencyMedians(ws []window) (p50, p99 float64) {
	var a, b []float64
	for _, w := range ws {
		a, b = append(a, us(w.p50)), append(b, us(w.p99))
	}
	return median(a), median(b)
}

func rates(ws []window) []float64 {
	out := make([]float64, len(ws))
	for i, w := range ws {
		out[i] = w.rate()
	}
	return out
}

func (r *report) writeMemory(b *strings.Builder) {
	m := r.memory
	fmt.Fprintf(b, "\n3. Memory per open stream (fresh server on a fresh database)\n")
	fmt.Fprintf(b, "   %d concurrent streaming chats whose upstream hangs after one chunk; figures read from\n", m.open)
	fmt.Fprintf(b, "   /proc/<pid>/status once every stream had its first message event (+%s)\n\n", r.opts.hold)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tRSS\tvs idle\tanon\tfile\tfds\tthreads\t\n")
	row := func(name string, s procStat) {
		if s.RSS == 0 {
			return
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", name, mb(s.RSS), signedMB(s.RSS-m.idle.RSS), mb(s.Anon), mb(s.File), s.FDs, s.Threads)
	}
	row("idle after warm-up", m.idle)
	row(fmt.Sprintf("%d streams open", m.open), m.held)
	row("stopped (+1 s)", m.stopped)
	row(fmt.Sprintf("stopped (+1 s +%s)", r.opts.releaseWait), m.later)
	tw.Flush()
	if m.held.RSS == 0 {
		return
	}
	delta := m.held.RSS - m.idle.RSS
	fmt.Fprintf(b, "\n   per open stream: %.1f kB RSS (delta / %d); peak RSS (VmHWM) %s\n", float64(delta)/1e3/float64(m.open), m.open, mb(m.held.HWM))
	fmt.Fprintf(b, "   opened in %s; upstream streams hanging: %d while open, %d after the stop\n",
		m.openTime.Round(time.Millisecond), m.upstreamOpen, m.upstreamAfter)
	if m.stopTime > 0 {
		fmt.Fprintf(b, "   stopped through POST /chat-messages/{task_id}/stop in %s; stream errors: %d\n", m.stopTime.Round(time.Millisecond), m.streamErrs)
	}
	if r.memoryLog != "" {
		fmt.Fprintf(b, "   server log: %s\n", r.memoryLog)
	}
}

func signedMB(b int64) string {
	return fmt.Sprintf("%+.1f MB", float64(b)/1e6)
}

func runtimeCPUs() int { return runtime.NumCPU() }

// writeReplicas reports the replicas phase: 1 against 3 replicas on one machine.
func (r *report) writeReplicas(b *strings.Builder) {
	o := r.opts
	fmt.Fprintf(b, "\n4. Replicas: 1 and 3 `parley serve` processes on PostgreSQL and Redis, behind a round-robin proxy\n")
	if r.replicasSkipped != "" {
		fmt.Fprintf(b, "   %s\n", r.replicasSkipped)
		return
	}
	fmt.Fprintf(b, "   each deployment on a fresh database, every request through a reverse proxy in this process (no\n")
	fmt.Fprintf(b, "   affinity); blocking: %d workers, auto_generate_name=false, median of %s windows; open streams:\n", o.workers, o.duration)
	fmt.Fprintf(b, "   %d hanging streams opened at once (60 s at most), then stopped through the proxy. %d CPUs are\n", o.open, runtimeCPUs())
	fmt.Fprintf(b, "   shared by every replica, PostgreSQL, Redis, the proxy and the load generator\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  replicas\tchats/s\trange\tp50 µs\tp99 µs\terrors\tstreams open\ttime to open\tRSS open (sum)\tRSS idle (sum)\t\n")
	rate := map[int]float64{}
	open := map[int]int{}
	for _, s := range r.replicas {
		rs := rates(s.blocking)
		m := median(rs)
		lo, hi := spread(rs)
		var p50, p99 []float64
		errs := 0
		for _, w := range s.blocking {
			p50, p99 = append(p50, us(w.p50)), append(p99, us(w.p99))
			errs += w.errs
		}
		rate[s.n], open[s.n] = m, s.open
		fmt.Fprintf(tw, "  %d\t%.0f\t%.0f … %.0f\t%.0f\t%.0f\t%d\t%d/%d\t%s\t%s\t%s\t\n", s.n, m, lo, hi, median(p50), median(p99), errs,
			s.open, s.asked, s.openTime.Round(time.Millisecond), mb(s.rss), mb(s.idle))
	}
	tw.Flush()
	for _, s := range r.replicas {
		if s.openErr != nil {
			fmt.Fprintf(b, "   %d replica(s): first stream error: %v\n", s.n, s.openErr)
		}
	}
	if rate[1] > 0 && rate[3] > 0 {
		fmt.Fprintf(b, "\n   3 replicas / 1 replica: blocking chats/s %.2f×, open streams %d vs %d", rate[3]/rate[1], open[3], open[1])
		if rate[3] < rate[1] {
			fmt.Fprintf(b, " (slower: the replicas share these %d CPUs with PostgreSQL, Redis and the load; this measures\n   the coordination overhead on one machine, not the scaling across machines)", runtimeCPUs())
		}
		fmt.Fprintf(b, "\n")
	}
}
