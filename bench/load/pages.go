package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// The pages phase (reported as 6) measures what a chat message costs the server when it comes
// from the app's web page (docs/web-pages.md) rather than through the Service API with an app
// key: on one server, the same streamed message (a) with an app key, (b) with a passport of the
// bench app's site, got once per worker (a returning visitor), and (c) as a first visit, which
// per message also loads the page's HTML and gets a new passport (a new end user), in
// interleaved windows. The figures are the server's CPU per message of (b) and (c) against (a).

// pagesResult is the pages phase.
type pagesResult struct {
	workers  int
	siteCode string
	// key, passport and visit are (a), (b) and (c); variants the three in window order.
	key, passport, visit *agentVariant
	variants             []*agentVariant
	log                  string
}

// passport gets a passport of the site code from the server at base (the API root), keeping the
// end user of previous when it is one, and returns it with its end user's id.
func passport(ctx context.Context, client *http.Client, base, code, previous string) (token, endUser string, err error) {
	t := &target{client: client, key: previous}
	b, err := t.get(ctx, base+"/passport", http.Header{"X-App-Code": {code}})
	if err != nil {
		return "", "", fmt.Errorf("passport: %w", err)
	}
	var out struct {
		AccessToken string `json:"access_token"`
		EndUserID   string `json:"end_user_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.AccessToken == "" || out.EndUserID == "" {
		return "", "", fmt.Errorf("passport: unexpected answer %q", truncate(string(b), 300))
	}
	return out.AccessToken, out.EndUserID, nil
}

// pagesPhase starts a server, makes the bench app's site unlimited (requests_per_minute 0, which
// also lifts the bound on new end users per client address) and measures the server's CPU per
// streamed chat message through an app key, a passport and a first visit, interleaved.
func pagesPhase(ctx context.Context, o options, bin, tmp string, settings serverSettings) (*pagesResult, error) {
	res := &pagesResult{workers: o.workers}
	p, err := startParley(ctx, bin, filepath.Join(tmp, "pages"), settings)
	if err != nil {
		return res, err
	}
	defer p.stop()
	logf("pages phase: parley pid %d at %s", p.pid, p.base)
	pageURL, err := p.cli(ctx, "apps", "site", "bench", "--requests-per-minute", "0")
	if err != nil {
		return res, err
	}
	u, err := url.Parse(pageURL)
	if err != nil || !strings.HasPrefix(u.Path, "/chat/") {
		return res, fmt.Errorf("parley apps site bench printed %q, want a /chat/ URL", pageURL)
	}
	code := path.Base(u.Path)
	res.siteCode = code
	page := strings.TrimSuffix(p.base, "/v1") + "/chat/" + code

	client := newClient(o.workers + 64)
	chatURL := p.base + "/chat-messages"
	key := &target{name: "parley key", client: client, url: chatURL, key: p.key}
	no := false
	query := streamMarker + " Say hello."
	want := strings.Join(streamChunks(o.chunks), "")
	bodies := make([][]byte, o.workers)
	passports := make([]*target, o.workers)
	var firstUser string
	for w := range o.workers {
		bodies[w] = chatBody(query, fmt.Sprintf("pages-%d", w), "streaming", "", &no)
		token, endUser, err := passport(ctx, client, p.base, code, "")
		if err != nil {
			return res, fmt.Errorf("pages preflight: %w", err)
		}
		if w == 0 {
			firstUser = endUser
		}
		passports[w] = &target{name: "parley passport", client: client, url: chatURL, key: token}
	}
	// A passport sent back keeps its end user: what the page does on a reload.
	if _, again, err := passport(ctx, client, p.base, code, passports[0].key); err != nil {
		return res, fmt.Errorf("pages preflight: %w", err)
	} else if again != firstUser {
		return res, fmt.Errorf("pages preflight: a passport sent back gave end user %q, want %q", again, firstUser)
	}
	message := func(ctx context.Context, t *target, body []byte) (int, error) {
		r, err := streamParley(ctx, t, body, true, nil)
		if err == nil && (r.answer != want || r.chunks != o.chunks) {
			err = fmt.Errorf("%d chunks %q, want %d chunks %q", r.chunks, r.answer, o.chunks, want)
		}
		return 1, err
	}
	visit := func(ctx context.Context, w int) (int, error) {
		html, err := (&target{client: client}).get(ctx, page, nil)
		if err != nil {
			return 0, err
		}
		if !strings.Contains(string(html), code) {
			return 0, fmt.Errorf("the page %s does not carry its site code", page)
		}
		token, _, err := passport(ctx, client, p.base, code, "")
		if err != nil {
			return 0, err
		}
		return message(ctx, &target{name: "parley first visit", client: client, url: chatURL, key: token}, bodies[w])
	}
	if _, err := visit(ctx, 0); err != nil {
		return res, fmt.Errorf("pages preflight (first visit): %w", err)
	}
	res.key = &agentVariant{name: "(a) app key", do: func(ctx context.Context, w int) (int, error) {
		return message(ctx, key, bodies[w])
	}}
	res.passport = &agentVariant{name: "(b) passport of the site", do: func(ctx context.Context, w int) (int, error) {
		return message(ctx, passports[w], bodies[w])
	}}
	res.visit = &agentVariant{name: "(c) page, new passport, message", do: visit}
	res.variants = []*agentVariant{res.key, res.passport, res.visit}
	err = measureCPU(ctx, o, p, "pages", o.pagesRounds, res.variants, nil)
	res.log = p.logSummary()
	p.stop()
	res.log = p.logSummary()
	return res, err
}

func (r *report) writePages(b *strings.Builder) {
	o, pg := r.opts, r.pages
	fmt.Fprintf(b, "\n6. Web pages: server CPU per streamed chat message from the app's page, against an app key\n")
	fmt.Fprintf(b, "   one server; the bench app's site with requests_per_minute 0 (no limit per end user, nor on new end\n")
	fmt.Fprintf(b, "   users per address). %d workers, a new conversation per message, auto_generate_name=false, the %d-chunk\n", pg.workers, o.chunks)
	fmt.Fprintf(b, "   streamed answer (%s before each chunk), back to back for %s per window; %d measured rounds after a\n", o.chunkDelay, o.duration, o.pagesRounds)
	fmt.Fprintf(b, "   warm-up, interleaved (a, b, c). (a) Authorization: Bearer app key, each worker its own user; (b) a\n")
	fmt.Fprintf(b, "   passport of the site (GET /v1/passport), got once per worker: each its own end user; (c) per message\n")
	fmt.Fprintf(b, "   GET /chat/{code}, a new passport (a new end user), then the message: p50 is the whole visit\n\n")
	if pg.key == nil || len(pg.key.rounds) == 0 {
		fmt.Fprintf(b, "   (no measured round)\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tmsg/s\tp50 µs\tp99 µs\terrors\tparley CPU/msg\t/app key\tbench CPU/msg\t\n")
	keyCPU, _ := pg.key.cpuPer()
	for _, v := range pg.variants {
		n, _, _, self, errs := v.totals()
		p50, p99 := latencyMedians(v.rounds)
		if n == 0 {
			fmt.Fprintf(tw, "  %s\t-\t-\t-\t%d\t-\t-\t-\t\n", v.name, errs)
			continue
		}
		cpu, _ := v.cpuPer()
		ratio := "-"
		if v != pg.key && keyCPU > 0 {
			ratio = fmt.Sprintf("%.3f×", cpu/keyCPU)
		}
		fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.0f\t%d\t%.0f µs\t%s\t%.0f µs\t\n", v.name, median(rates(v.rounds)), p50, p99, errs,
			cpu, ratio, us(self)/float64(n))
	}
	tw.Flush()
	p50key, _ := latencyMedians(pg.key.rounds)
	p50pp, _ := latencyMedians(pg.passport.rounds)
	p50visit, _ := latencyMedians(pg.visit.rounds)
	if p50key > 0 {
		fmt.Fprintf(b, "\n   p50 against the app key's: passport %.3f×, first visit %.3f×\n", p50pp/p50key, p50visit/p50key)
	}
	fmt.Fprintf(b, "   CPU: the server process over each window and its settling, divided by completed messages (for c,\n")
	fmt.Fprintf(b, "   visits); bench: this process (load generator + fake upstream)\n")
	fmt.Fprintf(b, "   server log: %s\n", pg.log)
}
