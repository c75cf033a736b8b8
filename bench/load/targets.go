package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// The performance targets the report checks, each against the figure of its phase.
const (
	targetNewChatCPU     = 500.0   // µs of server CPU per blocking chat, new conversation, API defaults
	targetUnnamedChatCPU = 250.0   // the same with auto_generate_name=false
	targetBlockingRate   = 2500.0  // blocking chats/s, new conversation each, API defaults
	targetLightTTFTP50   = 300.0   // µs of added TTFT p50 at the light load (10 streams)
	targetLightTTFTP99   = 1000.0  // µs of added TTFT p99 at the light load
	targetAddedTTFTP99   = 10000.0 // µs of added TTFT p99 at the full load (200 streams)
	targetStreamRSS      = 40e3    // bytes of RSS per open stream
	targetReleasedRSS    = 20e6    // bytes of RSS over idle once the streams have ended
	targetAgentStepCPU   = 250.0   // µs of server CPU per Legacy Agent step
	targetJobCPU         = 150.0   // µs of CPU per durable job over its work
	graphTarget          = 1000.0  // µs of server CPU per Chatflow run over its model calls
	// targetPassportRatio bounds the server's CPU per message through a page's passport against
	// an app key's: no more, with 10% for the noise of a shared machine.
	targetPassportRatio = 1.10
)

// targetRow is one line of the targets table.
type targetRow struct {
	figure, measured, baseline, target string
	met                                bool
}

// writeTargets ends the report with every target and the figure it is checked against, beside
// the baseline of the same run it is a ratio of (the fake upstream's figure, where there is one).
// A figure whose phase did not run is left out.
func (r *report) writeTargets(b *strings.Builder) {
	var rows []targetRow
	add := func(figure, measured, baseline, target string, met bool) {
		rows = append(rows, targetRow{figure, measured, baseline, target, met})
	}
	if bl := r.blocking; bl != nil && len(bl.variants) == 5 && len(bl.variants[0].rounds) > 0 {
		direct, fresh, unnamed, cont := bl.variants[0], bl.variants[1], bl.variants[2], bl.variants[3]
		// The fake's (and load generator's) CPU per direct request is the baseline of the CPU
		// figures.
		var self time.Duration
		var n int
		for _, w := range direct.rounds {
			self, n = self+w.selfCPU, n+w.n
		}
		base := us(self) / float64(max(n, 1))
		cpu := func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
		ratio := func(v float64) string { return fmt.Sprintf("%.1f× the fake's %.0f µs", v/base, base) }
		if c := fresh.cpuPerRequest(); c > 0 {
			add("server CPU per blocking chat, new conversation (naming included)", cpu(c), ratio(c), fmt.Sprintf("≤ %.0f µs", targetNewChatCPU), c <= targetNewChatCPU)
			if u := unnamed.cpuPerRequest(); u > 0 {
				add("the same with auto_generate_name=false", cpu(u), ratio(u), fmt.Sprintf("≤ %.0f µs", targetUnnamedChatCPU), u <= targetUnnamedChatCPU)
			}
			if k := cont.cpuPerRequest(); k > 0 {
				add("continuing a conversation", cpu(k), ratio(k), fmt.Sprintf("≤ the new conversation's %.0f µs", c), k <= c)
			}
		}
		if len(fresh.rounds) > 0 {
			m, d := median(rates(fresh.rounds)), median(rates(direct.rounds))
			add("blocking chats/s, API defaults", fmt.Sprintf("%.0f/s", m), fmt.Sprintf("%.3f× the fake's %.0f/s", m/d, d),
				fmt.Sprintf("≥ %.0f/s", targetBlockingRate), m >= targetBlockingRate)
		}
	}
	ttft := func(l *latencyResult, get func(latencySide) time.Duration) (added, ratio float64) {
		md, mp := sideMedians(l.direct, l.parley, get)
		return mp - md, mp / max(md, 1)
	}
	p50 := func(s latencySide) time.Duration { return s.ttftP50 }
	p99 := func(s latencySide) time.Duration { return s.ttftP99 }
	if l := r.light; l != nil && len(l.direct) > 0 {
		a50, r50 := ttft(l, p50)
		a99, r99 := ttft(l, p99)
		add(fmt.Sprintf("added TTFT at %d streams, p50 / p99", l.streams), fmt.Sprintf("%+.0f / %+.0f µs", a50, a99),
			fmt.Sprintf("%.2f× / %.2f× the fake's", r50, r99), fmt.Sprintf("≤ %.0f / ≤ %.0f µs", targetLightTTFTP50, targetLightTTFTP99),
			a50 <= targetLightTTFTP50 && a99 <= targetLightTTFTP99)
	}
	if l := r.latency; l != nil && len(l.direct) > 0 {
		a99, r99 := ttft(l, p99)
		add(fmt.Sprintf("added TTFT at %d streams, p99", l.streams), fmt.Sprintf("%+.0f µs", a99), fmt.Sprintf("%.2f× the fake's", r99),
			fmt.Sprintf("≤ %.0f µs", targetAddedTTFTP99), a99 <= targetAddedTTFTP99)
	}
	if m := r.memory; m != nil && m.held.RSS > 0 {
		per := float64(m.held.RSS-m.idle.RSS) / float64(m.open)
		add(fmt.Sprintf("RSS per open stream (%d streams)", m.open), fmt.Sprintf("%.1f kB", per/1e3), "-",
			fmt.Sprintf("≤ %.0f kB", targetStreamRSS/1e3), per <= targetStreamRSS)
		if m.later.RSS > 0 {
			over := float64(m.later.RSS - m.idle.RSS)
			add(fmt.Sprintf("RSS %s after those streams end", r.opts.releaseWait+time.Second), fmt.Sprintf("idle %+.1f MB", over/1e6),
				fmt.Sprintf("idle is %s", mb(m.idle.RSS)), fmt.Sprintf("≤ idle + %.0f MB", targetReleasedRSS/1e6), over <= targetReleasedRSS)
		}
	}
	if a := r.agent; a != nil && a.agent != nil && a.chat != nil {
		_, step := a.agent.cpuPer()
		chat, _ := a.chat.cpuPer()
		if step > 0 && chat > 0 {
			add("server CPU per Legacy Agent step", fmt.Sprintf("%.0f µs", step), fmt.Sprintf("%.2f× a streamed Chatbot request", step/chat),
				fmt.Sprintf("≤ %.0f µs", targetAgentStepCPU), step <= targetAgentStepCPU)
		}
	}
	if j := r.jobs; j != nil && j.jobs > 0 {
		add("durable job on SQLite (enqueue, claim, run, finish)", fmt.Sprintf("%.0f µs", j.perJob()), "-",
			fmt.Sprintf("≤ %.0f µs plus the work", targetJobCPU), j.perJob() <= targetJobCPU)
	}
	if g := r.graph; g != nil && g.graph != nil && g.chat != nil {
		run, _ := g.graph.cpuPer()
		chat, _ := g.chat.cpuPer()
		if run > 0 && chat > 0 {
			add(fmt.Sprintf("%d-node Chatflow run, server CPU over its model calls", graphNodes), fmt.Sprintf("%.0f µs", run-chat),
				fmt.Sprintf("run %.2f× a Chatbot request", run/chat), fmt.Sprintf("≤ %.0f µs", graphTarget), run-chat <= graphTarget)
		}
	}
	if pg := r.pages; pg != nil && pg.key != nil && pg.passport != nil {
		key, _ := pg.key.cpuPer()
		pp, _ := pg.passport.cpuPer()
		if key > 0 && pp > 0 {
			add("server CPU per streamed message through a page's passport", fmt.Sprintf("%.0f µs", pp),
				fmt.Sprintf("%.3f× an app key's %.0f µs", pp/key, key), fmt.Sprintf("≤ %.2f× the app key's", targetPassportRatio),
				pp <= targetPassportRatio*key)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\nTargets (the figures above against their targets; retrieval's are in bench/knowledge's report)\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  figure\tmeasured\tagainst the baseline\ttarget\t\t\n")
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", row.figure, row.measured, row.baseline, row.target, verdict(row.met))
	}
	tw.Flush()
}
