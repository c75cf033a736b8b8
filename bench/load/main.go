// Command load is Parley's load benchmark. In one run on loopback it starts a fake
// OpenAI-compatible upstream in this process and the parley binary as a child process on a fresh
// SQLite database, and measures:
//
//  1. the time to first token and total latency Parley adds at N concurrent streams, against the
//     same load sent straight to the fake, in interleaved rounds (median of round percentiles);
//  2. blocking chats per second, against the fake's own blocking rate as the baseline;
//  3. the server's memory per open stream, with streams held open by a hanging upstream, and its
//     return to idle once they are stopped;
//  4. the server's CPU per Legacy Agent step (a built-in tool step, then the answer), next to its
//     CPU per streamed Chatbot request under the same load and to the Chatbot figures of 1 and 2
//     (phase "agent", reported as 2b: it runs on the server of 1 and 2);
//  5. the server's CPU per blocking run of a 20-node Chatflow (two LLM nodes, if-else, templates,
//     an assigner, aggregators and an iteration; no code node), next to its CPU per blocking
//     Chatbot request under the same load: what the graph engine costs over its model calls
//     (phase "graph", reported as 2c, on the same server);
//  6. with -postgres and -redis (phase "replicas", reported as 4): blocking chats per second and
//     open streams with 1 and with 3 replicas on a fresh PostgreSQL database and that Redis, each
//     deployment behind a round-robin reverse proxy in this process, as a ratio;
//  7. when named in -phases (phase "observe", reported as 5): the server's CPU per blocking and
//     streamed Chatbot request and per run of the 20-node Chatflow with tracing and metrics off,
//     with metrics, and with metrics and tracing, three servers in interleaved windows, as
//     ratios (bench/load/observe.go);
//  8. when named in -phases (phase "pages", reported as 6): on one server, the server's CPU per
//     streamed Chatbot message and its latency through an app key, through a passport of the
//     app's web page (GET /v1/passport), and as a first visit that per message also loads the page's
//     HTML and gets a new passport, in interleaved windows, as ratios to the app key's
//     (bench/load/pages.go; run it with -phases pages).
//
// The report goes to stdout (and to -o); progress goes to stderr. Run it from the repository
// (`make bench` runs it after the micro-benchmarks and writes bench/load.txt):
//
//	go run ./bench/load [-streams 200] [-rounds 7] [-duration 5s] [-open 1000] [-validation log]
//
// A quick run: go run ./bench/load -streams 50 -rounds 2 -duration 1s -block-rounds 1 -agent-rounds 1 -graph-rounds 1 -open 200.
// Every loop is bounded by a count or a deadline, every request by a timeout, and the whole run
// by -timeout; the server and the temporary directories are removed on every exit path (and the
// kernel kills the server if this process dies). Linux only: it reads /proc for the server's
// RSS and CPU time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// Markers in the user's message select the fake's scripted reply.
const (
	streamMarker = "[bench-stream]"
	blockMarker  = "[bench-block]"
	hangMarker   = "[bench-hang]"
	// titleMarker is in Parley's conversation-naming prompt; its rule comes first because that
	// prompt quotes the user's message, marker included.
	titleMarker = "You name conversations"
)

// upstreamKey is the provider key Parley is configured with and the fake accepts.
const upstreamKey = "sk-load-bench"

type options struct {
	streams, light, per, rounds int
	chunks                      int
	chunkDelay, firstByte       time.Duration
	workers, blockRounds        int
	agentRounds, graphRounds    int
	observeRounds, pagesRounds  int
	duration                    time.Duration
	open                        int
	releaseWait                 time.Duration
	hold                        time.Duration
	validation, sqliteSync      string
	debugAddr                   string
	binary, out, tmp, serverLog string
	phases                      string
	postgres, redis             string
	timeout                     time.Duration
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.debugAddr, "debug-addr", "", "PARLEY_DEBUG_ADDR of the server, to profile it under load (go tool pprof http://ADDR/debug/pprof/profile); off when empty")
	flag.IntVar(&o.streams, "streams", 200, "concurrent streams in the latency phase")
	flag.IntVar(&o.light, "light", 10, "also measure the latency at this many concurrent streams, as an unsaturated reference (0: skip)")
	flag.IntVar(&o.per, "per", 5, "measured requests per stream and round (each stream also sends one unmeasured request before and after)")
	flag.IntVar(&o.rounds, "rounds", 7, "measured rounds of the latency phase (each: direct, then parley), after one warm-up round")
	flag.IntVar(&o.chunks, "chunks", 20, "content chunks per streamed answer")
	flag.DurationVar(&o.chunkDelay, "chunk-delay", 5*time.Millisecond, "upstream delay before each streamed chunk")
	flag.DurationVar(&o.firstByte, "first-byte", 2*time.Millisecond, "upstream delay before its response headers")
	flag.IntVar(&o.workers, "workers", 8*runtime.GOMAXPROCS(0), "concurrent workers in the blocking phase (throughput plateaus from about 8×GOMAXPROCS on; more only adds queueing)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured blocking window")
	flag.IntVar(&o.blockRounds, "block-rounds", 5, "measured rounds of the blocking phase (each: direct and every Parley variant), after a 1 s warm-up")
	flag.IntVar(&o.graphRounds, "graph-rounds", 3, "measured rounds of the graph phase (each: a Chatbot window, then a Chatflow window), after a 1 s warm-up")
	flag.IntVar(&o.agentRounds, "agent-rounds", 3, "measured rounds of the agent phase (each: a Chatbot window, then an agent window), after a 1 s warm-up")
	flag.IntVar(&o.observeRounds, "observe-rounds", 3, "measured rounds of the observe phase (each: three loads, each on three servers), after a 1 s warm-up")
	flag.IntVar(&o.pagesRounds, "pages-rounds", 3, "measured rounds of the pages phase (each: app key, passport, first visit), after a 1 s warm-up")
	flag.IntVar(&o.open, "open", 1000, "concurrent open streams in the memory phase")
	flag.DurationVar(&o.releaseWait, "release-wait", 5*time.Second, "how long after stopping the streams to read the server's RSS again")
	flag.DurationVar(&o.hold, "hold", time.Second, "how long the memory phase's streams stay open, once all have had their first event, before the server's RSS is read")
	flag.StringVar(&o.validation, "validation", "log", "PARLEY_RESPONSE_VALIDATION of the server: log (the production default), off or enforce")
	flag.StringVar(&o.sqliteSync, "sqlite-sync", "", "PARLEY_SQLITE_SYNCHRONOUS of the server: normal or full (default: the server's default)")
	flag.StringVar(&o.binary, "binary", "", "parley binary to run (default: build ./cmd/parley)")
	flag.StringVar(&o.out, "o", "", "also write the report to this file")
	flag.StringVar(&o.serverLog, "server-log", "", "copy the servers' log to this file")
	flag.StringVar(&o.tmp, "tmp", "", "directory for the temporary data directories (default: the system temp dir)")
	flag.StringVar(&o.phases, "phases", "latency,blocking,agent,graph,jobs,memory,replicas", "phases to run, comma-separated; observe (the cost of tracing and metrics) and pages (the web page's path against an app key) run only when named")
	flag.StringVar(&o.postgres, "postgres", "", "PostgreSQL URL (a role that may create databases) for the replicas phase; without it or -redis the phase is skipped")
	flag.StringVar(&o.redis, "redis", "", "Redis URL for the replicas phase")
	flag.DurationVar(&o.timeout, "timeout", 9*time.Minute, "stop the whole run after this long")
	flag.Parse()
	return o
}

func (o options) validate() error {
	switch {
	case o.streams < 1 || o.per < 1 || o.rounds < 1 || o.chunks < 1 || o.workers < 1 || o.blockRounds < 1 || o.agentRounds < 1 || o.graphRounds < 1 || o.observeRounds < 1 || o.pagesRounds < 1 || o.open < 1:
		return errors.New("-streams, -per, -rounds, -chunks, -workers, -block-rounds, -agent-rounds, -graph-rounds, -observe-rounds, -pages-rounds and -open must be at least 1")
	case o.light < 0:
		return errors.New("-light must not be negative")
	case o.duration <= 0:
		return errors.New("-duration must be positive")
	}
	switch o.validation {
	case "log", "off", "enforce":
	default:
		return fmt.Errorf("-validation %q: want log, off or enforce", o.validation)
	}
	switch o.sqliteSync {
	case "", "normal", "full":
	default:
		return fmt.Errorf("-sqlite-sync %q: want normal or full", o.sqliteSync)
	}
	for p := range strings.SplitSeq(o.phases, ",") {
		if !slices.Contains([]string{"latency", "blocking", "agent", "graph", "jobs", "memory", "replicas", "observe", "pages"}, strings.TrimSpace(p)) {
			return fmt.Errorf("-phases: unknown phase %q", p)
		}
	}
	return nil
}

func (o options) runs(phase string) bool {
	for p := range strings.SplitSeq(o.phases, ",") {
		if strings.TrimSpace(p) == phase {
			return true
		}
	}
	return false
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func main() { os.Exit(run()) }

// run does the whole benchmark; every resource it takes is released by its defers, so it
// returns (rather than exits) on failure.
func run() int {
	o := parseFlags()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	rep := &report{opts: o}
	err := bench(ctx, o, rep)
	rep.endLoad = loadAvg()
	text := rep.String()
	if err != nil {
		text += "\nFAILED: " + err.Error() + "\n"
	}
	fmt.Print(text)
	if o.out != "" {
		if werr := os.WriteFile(o.out, []byte(text), 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "load:", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	return 0
}

func bench(ctx context.Context, o options, rep *report) error {
	raiseFileLimit(o)
	tmp, err := os.MkdirTemp(o.tmp, "parley-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rep.env = describeEnv(ctx, tmp, o.sqliteSync)
	if o.serverLog != "" {
		f, err := os.Create(o.serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		serverLog.Lock()
		serverLog.w = f
		serverLog.Unlock()
		defer func() {
			serverLog.Lock()
			serverLog.w = nil
			serverLog.Unlock()
		}()
	}

	bin := o.binary
	if bin == "" {
		logf("building ./cmd/parley")
		if bin, err = buildParley(ctx, tmp); err != nil {
			return err
		}
	}

	fake := newFake(o)
	defer fake.Close()
	settings := serverSettings{upstreamURL: fake.URL(), upstreamKey: upstreamKey, validation: o.validation, sqliteSync: o.sqliteSync,
		debugAddr: o.debugAddr}
	direct := func(conns int) *target {
		return &target{name: "direct", client: newClient(conns), url: fake.URL() + "/chat/completions", key: upstreamKey}
	}

	if o.runs("latency") || o.runs("blocking") || o.runs("agent") || o.runs("graph") {
		p, err := startParley(ctx, bin, filepath.Join(tmp, "main"), settings)
		if err != nil {
			return err
		}
		defer p.stop()
		logf("parley pid %d at %s (response validation %s)", p.pid, p.base, o.validation)
		conns := max(o.streams, o.workers) + 64
		d, through := direct(conns), &target{name: "parley", client: newClient(conns), url: p.base + "/chat-messages", key: p.key}
		if err := preflight(ctx, o, d, through); err != nil {
			return err
		}
		if o.runs("latency") {
			logf("latency phase: %d streams × (%d+2) requests, %d rounds + warm-up", o.streams, o.per, o.rounds)
			lat, err := latencyPhase(ctx, o, o.streams, p, d, through)
			rep.latency = &lat
			if err != nil {
				return err
			}
			if o.light > 0 {
				logf("latency reference: %d streams × (%d+2) requests, %d rounds + warm-up", o.light, o.per, o.rounds)
				light, err := latencyPhase(ctx, o, o.light, p, d, through)
				rep.light = &light
				if err != nil {
					return err
				}
			}
		}
		if o.runs("blocking") {
			logf("blocking phase: %d workers, %s windows, %d rounds + warm-up", o.workers, o.duration, o.blockRounds)
			blk, err := blockingPhase(ctx, o, p, d, through)
			rep.blocking = &blk
			if err != nil {
				return err
			}
		}
		if o.runs("agent") {
			logf("agent phase: %d workers, %s windows, %d rounds + warm-up", o.workers, o.duration, o.agentRounds)
			ag, err := agentPhase(ctx, o, p, through)
			rep.agent = &ag
			if err != nil {
				return err
			}
		}
		if o.runs("graph") {
			logf("graph phase: %d workers, %s windows, %d rounds + warm-up", o.workers, o.duration, o.graphRounds)
			gr, err := graphPhase(ctx, o, p, through)
			rep.graph = &gr
			if err != nil {
				return err
			}
		}
		rep.mainLog = p.logSummary()
		p.stop()
		rep.mainLog = p.logSummary()
	}
	if o.runs("jobs") {
		logf("jobs phase: durable jobs one at a time for %s + warm-up", o.duration)
		j, err := jobPhase(ctx, o, filepath.Join(tmp, "jobs"))
		rep.jobs = &j
		if err != nil {
			return err
		}
	}
	if o.runs("memory") {
		// A fresh server, so that the idle figure is not the heap the earlier phases left.
		p, err := startParley(ctx, bin, filepath.Join(tmp, "memory"), settings)
		if err != nil {
			return err
		}
		defer p.stop()
		logf("memory phase: parley pid %d, %d open streams", p.pid, o.open)
		through := &target{name: "parley", client: newClient(o.open + 64), url: p.base + "/chat-messages", key: p.key}
		mem, err := memoryPhase(ctx, o, p, fake, through)
		rep.memory = &mem
		rep.memoryLog = p.logSummary()
		if err != nil {
			return err
		}
		p.stop()
		rep.memoryLog = p.logSummary()
	}
	if o.runs("observe") {
		ob, err := observePhase(ctx, o, bin, tmp, settings)
		rep.observe = ob
		if err != nil {
			return err
		}
	}
	if o.runs("pages") {
		logf("pages phase: %d workers, %s windows, %d rounds + warm-up", o.workers, o.duration, o.pagesRounds)
		pg, err := pagesPhase(ctx, o, bin, tmp, settings)
		rep.pages = pg
		if err != nil {
			return err
		}
	}
	if o.runs("replicas") {
		if o.postgres == "" || o.redis == "" {
			rep.replicasSkipped = "skipped: needs -postgres and -redis"
			logf("replicas phase %s", rep.replicasSkipped)
			return nil
		}
		sides, err := replicasPhase(ctx, o, bin, tmp, settings)
		rep.replicas = sides
		if err != nil {
			return err
		}
	}
	return nil
}

// newFake starts the fake upstream with the benchmark's scripted replies.
func newFake(o options) *openaitest.Server {
	fake := openaitest.NewServer(openaitest.WithAPIKey(upstreamKey), openaitest.WithoutRequestLog())
	// Fixed usage: the fake would otherwise count tokens of every prompt.
	usage := &providers.Usage{PromptTokens: 24, CompletionTokens: o.chunks}
	fake.On(titleMarker, openaitest.Reply{Text: "Load bench conversation", Usage: usage})
	fake.On(streamMarker, openaitest.Reply{Chunks: streamChunks(o.chunks), ChunkDelay: o.chunkDelay, FirstByteDelay: o.firstByte, Usage: usage})
	fake.On(blockMarker, openaitest.Reply{Chunks: blockChunks, Usage: usage})
	fake.On(hangMarker, openaitest.Reply{Chunks: []string{"Hello", " and", " then", " nothing"}, HangAfterChunks: 1, Usage: usage})
	scriptAgent(fake, usage)
	return fake
}

// blockChunks is the blocking answer: short, as a zero-delay reply.
var blockChunks = []string{"Hello", " from", " the", " load", " bench."}

func streamChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(" tok%02d", i)
	}
	out[0] = "tok00"
	return out
}

// preflight checks once that both sides answer what the fake was told to answer.
func preflight(ctx context.Context, o options, direct, through *target) error {
	want := strings.Join(streamChunks(o.chunks), "")
	r, err := streamDirect(ctx, direct, upstreamBody(streamMarker+" preflight", true), true)
	if err != nil {
		return fmt.Errorf("preflight direct stream: %w", err)
	}
	if r.answer != want || r.chunks != o.chunks {
		return fmt.Errorf("preflight direct stream: %d chunks %q, want %d chunks %q", r.chunks, r.answer, o.chunks, want)
	}
	r, err = streamParley(ctx, through, chatBody(streamMarker+" preflight", "preflight", "streaming", "", nil), true, nil)
	if err != nil {
		return fmt.Errorf("preflight parley stream: %w", err)
	}
	if r.answer != want || r.chunks != o.chunks || r.taskID == "" {
		return fmt.Errorf("preflight parley stream: %d chunks %q (task %q), want %d chunks %q", r.chunks, r.answer, r.taskID, o.chunks, want)
	}
	wantBlock := strings.Join(blockChunks, "")
	var up struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := blockingCall(ctx, direct, upstreamBody(blockMarker+" preflight", false), &up); err != nil {
		return fmt.Errorf("preflight direct blocking: %w", err)
	}
	if len(up.Choices) != 1 || up.Choices[0].Message.Content != wantBlock {
		return fmt.Errorf("preflight direct blocking: got %+v, want %q", up, wantBlock)
	}
	var pb struct {
		Answer string `json:"answer"`
	}
	if err := blockingCall(ctx, through, chatBody(blockMarker+" preflight", "preflight", "blocking", "", nil), &pb); err != nil {
		return fmt.Errorf("preflight parley blocking: %w", err)
	}
	if pb.Answer != wantBlock {
		return fmt.Errorf("preflight parley blocking: answer %q, want %q", pb.Answer, wantBlock)
	}
	return nil
}

// raiseFileLimit lifts the soft open-file limit to the hard one (the server inherits it): the
// memory phase holds two sockets per stream here and two in the server.
func raiseFileLimit(o options) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	need := uint64(2*max(o.open, o.streams, o.workers) + 1024)
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			logf("cannot raise the open-file limit: %v", err)
		}
	}
	if lim.Cur < need {
		logf("warning: open-file limit %d is below the %d this run may need", lim.Cur, need)
	}
}

// describeEnv says where the run happens: machine, load, toolchain, source and disk.
func describeEnv(ctx context.Context, dataDir, sqliteSync string) []string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if name, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	lines := []string{
		fmt.Sprintf("date        %s", time.Now().Format(time.RFC3339)),
		fmt.Sprintf("machine     %d CPUs (%s), GOMAXPROCS=%d, linux %s", runtime.NumCPU(), cpu, runtime.GOMAXPROCS(0), strings.TrimSpace(string(kernel))),
		fmt.Sprintf("load avg    %s at start (1/5/15 min; other work on the machine shows here)", loadAvg()),
		"sharing     the load generator, the fake upstream (both in this process) and parley share these CPUs",
		fmt.Sprintf("toolchain   %s", runtime.Version()),
	}
	if root, err := moduleRoot(ctx); err == nil {
		if out, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--always", "--dirty").Output(); err == nil {
			lines = append(lines, fmt.Sprintf("source      %s (git describe)", strings.TrimSpace(string(out))))
		}
	}
	sync := "PARLEY_SQLITE_SYNCHRONOUS unset (the server's default)"
	if sqliteSync != "" {
		sync = "PARLEY_SQLITE_SYNCHRONOUS=" + sqliteSync
	}
	lines = append(lines, fmt.Sprintf("database    SQLite, %s, on %s (%s)", sync, fsType(dataDir), dataDir))
	return lines
}

// fsType names the file system dir is on.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown file system"
	}
	switch uint32(st.Type) {
	case 0xEF53:
		return "ext4"
	case 0x01021994:
		return "tmpfs"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return fmt.Sprintf("file system 0x%x", st.Type)
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
