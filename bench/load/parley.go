package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/parleytest"
)

// benchConfig is the config file the server runs with: one chat app and one Completion app
// (whose prompt is its `text` input) whose model is served by the fake upstream; the Legacy Agent
// app on the same model is imported (agentDSL). The provider's
// URL and key come from the environment, as in production.
const benchConfig = `# Written by bench/load: a chat app and a Completion app on the in-process fake upstream.
workspace:
  name: Bench
providers:
  - name: openai
    label: OpenAI
    base_url: ${BENCH_OPENAI_BASE_URL}
    api_key_env: BENCH_OPENAI_KEY
    timeout: 60s
    models:
      - name: gpt-4o-mini
        type: llm
        context_size: 128000
        pricing: {input: "0.15", output: "0.60", per: 1m}
apps:
  - name: bench
    mode: chat
    model: {provider: openai, name: gpt-4o-mini}
    pre_prompt: You are a load-test assistant.
    max_active_requests: 1000000
  - name: writer
    mode: completion
    model: {provider: openai, name: gpt-4o-mini}
    pre_prompt: "{{text}}"
    user_input_form:
      - {type: paragraph, variable: text, required: true}
    max_active_requests: 1000000
knowledge_bases: []
`

// moduleRoot returns the directory of the main module (where go.mod is).
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the parley module: run from the repository")
	}
	return filepath.Dir(gomod), nil
}

// buildParley builds ./cmd/parley into dir and returns the binary's path.
func buildParley(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "parley")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return bin, parleytest.Build(ctx, root, bin)
}

// serverLog, when set (-server-log), receives a copy of every line the servers log.
var serverLog struct {
	sync.Mutex
	w io.Writer
}

// parley is one running server process.
type parley struct {
	// base is the API root, ending in /v1; key an app key of the bench app, completionKey one
	// of the writer app, agentKey one of the bench-agent app (a Legacy Agent).
	base, key, completionKey, agentKey string
	// graphKey is a key of the bench-graph app (a Chatflow).
	graphKey string
	pid      int
	dataDir  string
	// bin and env are the binary and the environment it runs with, for its CLI (cli).
	bin string
	env []string

	cmd    *exec.Cmd
	exited chan struct{}   // closed once the process has been waited for
	logged <-chan struct{} // closed once its log pipe hit EOF
	once   sync.Once

	mu       sync.Mutex
	tail     []string // the last log lines, for failure reports
	warnings atomic.Int64
	errs     atomic.Int64
	contract atomic.Int64 // "response violates the contract" lines
	firstBad atomic.Value // string: the first WARN/ERROR line
	admin    atomic.Value // string: the admin listener's URL (PARLEY_DEBUG_ADDR), once logged
}

// adminURL is the server's admin listener (profiles, metrics), "" when it has none.
func (p *parley) adminURL() string {
	u, _ := p.admin.Load().(string)
	return u
}

// parleyEnv is the environment of the server and its CLI: the parent's, minus every setting
// the server reads (so a developer's PARLEY_DATABASE_URL cannot redirect the run, nor an
// OTEL_EXPORTER_OTLP_ENDPOINT trace it), plus ours.
// serverSettings are what the benchmark varies in the server's environment.
type serverSettings struct {
	upstreamURL, upstreamKey string
	// validation is PARLEY_RESPONSE_VALIDATION.
	validation string
	// sqliteSync is PARLEY_SQLITE_SYNCHRONOUS; empty leaves the server's default.
	sqliteSync string
	// debugAddr is PARLEY_DEBUG_ADDR: the server's profiling listener, to profile it while
	// the benchmark loads it; empty leaves it off.
	debugAddr string
	// extraEnv is added last (the replicas phase: PostgreSQL and Redis).
	extraEnv []string
}

func parleyEnv(dataDir, configPath string, s serverSettings) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PARLEY_") || strings.HasPrefix(name, "APP_") ||
			strings.HasPrefix(name, "UPLOAD_") || strings.HasPrefix(name, "BENCH_OPENAI_") || strings.HasPrefix(name, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"PARLEY_ADDR=127.0.0.1:0",
		"PARLEY_DATA_DIR="+dataDir,
		"PARLEY_CONFIG="+configPath,
		"PARLEY_RESPONSE_VALIDATION="+s.validation,
		"PARLEY_LOG_FORMAT=json",
		"PARLEY_LOG_LEVEL=info",
		"PARLEY_SHUTDOWN_GRACE=2s",
		"BENCH_OPENAI_BASE_URL="+s.upstreamURL,
		"BENCH_OPENAI_KEY="+s.upstreamKey,
	)
	if s.sqliteSync != "" {
		env = append(env, "PARLEY_SQLITE_SYNCHRONOUS="+s.sqliteSync)
	}
	if s.debugAddr != "" {
		env = append(env, "PARLEY_DEBUG_ADDR="+s.debugAddr)
	}
	return append(env, s.extraEnv...)
}

// startParley writes the config, issues an app key through the CLI and starts `parley serve`
// on a fresh SQLite database in dir. Stop it with stop.
func startParley(ctx context.Context, bin, dir string, settings serverSettings) (*parley, error) {
	dataDir := filepath.Join(dir, "data")
	configPath := filepath.Join(dir, "parley.yaml")
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, err
	}
	if err := os.WriteFile(configPath, []byte(benchConfig), 0o600); err != nil {
		return nil, err
	}
	env := parleyEnv(dataDir, configPath, settings)

	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	newKey := func(app string) (string, error) { return runCLI(kctx, bin, env, "keys", "create", "--app", app) }
	key, err := newKey("bench")
	if err != nil {
		return nil, err
	}
	completionKey, err := newKey("writer")
	if err != nil {
		return nil, err
	}
	// The Legacy Agent app and the Chatflow of the graph phase come from Dify exports, as such
	// apps do; an imported Chatflow is a draft until it is published.
	importApp := func(name, dsl string, flags ...string) error {
		path := filepath.Join(dir, name+".yml")
		if err := os.WriteFile(path, []byte(dsl), 0o600); err != nil {
			return err
		}
		imp := exec.CommandContext(kctx, bin, append(append([]string{"apps", "import"}, flags...), path)...)
		imp.Env = env
		if out, err := imp.CombinedOutput(); err != nil {
			return fmt.Errorf("parley apps import %s: %w\n%s", path, err, out)
		}
		return nil
	}
	if err := importApp("agent", agentDSL); err != nil {
		return nil, err
	}
	agentKey, err := newKey("bench-agent")
	if err != nil {
		return nil, err
	}
	if err := importApp("graph", graphDSL, "--publish"); err != nil {
		return nil, err
	}
	graphKey, err := newKey("bench-graph")
	if err != nil {
		return nil, err
	}
	p, err := spawnParley(ctx, bin, dataDir, env)
	if err != nil {
		return nil, err
	}
	p.key, p.completionKey, p.agentKey, p.graphKey = key, completionKey, agentKey, graphKey
	return p, nil
}

// runCLI runs the parley CLI with env (the server's) and returns what it printed on stdout,
// trimmed.
func runCLI(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("parley %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// cli runs the parley CLI on the server's database (see runCLI).
func (p *parley) cli(ctx context.Context, args ...string) (string, error) {
	return runCLI(ctx, p.bin, p.env, args...)
}

// spawnParley starts `parley serve` with env (whose database already has its keys) and waits
// for its address.
func spawnParley(ctx context.Context, bin, dataDir string, env []string) (*parley, error) {
	p := &parley{dataDir: dataDir, bin: bin, env: env, exited: make(chan struct{})}

	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	cmd.Stdout = w
	cmd.Stderr = w
	// If this program dies without cleaning up, the kernel kills the server too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("start parley: %w", err)
	}
	_ = w.Close()
	p.cmd, p.pid = cmd, cmd.Process.Pid
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	addr, logged := parleytest.ReadLog(r, p.logLine)
	p.logged = logged
	go func() {
		<-logged
		_ = r.Close()
	}()

	select {
	case a := <-addr:
		p.base = "http://" + a + "/v1"
		return p, nil
	case <-p.exited:
		<-p.logged
		return nil, fmt.Errorf("parley exited before listening; log:\n%s", p.logTail())
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("parley did not report its address in 30s; log:\n%s", p.logTail())
	}
}

// logLine takes one line of the server's JSON log: it counts warnings, errors and contract
// violations, and keeps the last lines.
func (p *parley) logLine(raw []byte) {
	line := string(raw)
	var rec struct{ Level, Msg, URL string }
	_ = json.Unmarshal(raw, &rec)
	if rec.Msg == "debug listener" {
		p.admin.Store(strings.TrimSuffix(rec.URL, "/debug/pprof/"))
	}
	bad := false
	switch rec.Level {
	case "WARN":
		p.warnings.Add(1)
		bad = true
	case "ERROR":
		p.errs.Add(1)
		bad = true
	}
	if strings.Contains(rec.Msg, "response violates the contract") {
		p.contract.Add(1)
	}
	if bad {
		p.firstBad.CompareAndSwap(nil, line)
	}
	serverLog.Lock()
	if serverLog.w != nil {
		fmt.Fprintf(serverLog.w, "[pid %d] %s\n", p.pid, line)
	}
	serverLog.Unlock()
	p.mu.Lock()
	p.tail = append(p.tail, line)
	if len(p.tail) > 40 {
		p.tail = p.tail[len(p.tail)-40:]
	}
	p.mu.Unlock()
}

func (p *parley) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// logSummary says how many warnings and errors the server logged, with the first one.
func (p *parley) logSummary() string {
	s := fmt.Sprintf("%d warnings, %d errors, %d contract violations", p.warnings.Load(), p.errs.Load(), p.contract.Load())
	if first, ok := p.firstBad.Load().(string); ok {
		s += "; first: " + truncate(first, 300)
	}
	return s
}

// stop ends the server: SIGINT (graceful shutdown), then SIGKILL if it has not exited within
// 15 s. It is safe to call more than once.
func (p *parley) stop() {
	p.once.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
			}
		}
	})
}

// alive reports whether the process is still running.
func (p *parley) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// procStat is what /proc says about a process.
type procStat struct {
	RSS, HWM int64 // bytes
	// Anon and File split RSS: the heap and stacks, and mapped files (the binary's text).
	Anon, File int64
	Threads    int
	FDs        int
	CPU        time.Duration // user + system
}

// clockTick is USER_HZ, which Linux fixes at 100 for /proc/<pid>/stat.
const clockTick = 10 * time.Millisecond

func readProc(pid int) (procStat, error) {
	var st procStat
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return st, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			st.RSS = n << 10
		case "VmHWM":
			st.HWM = n << 10
		case "RssAnon":
			st.Anon = n << 10
		case "RssFile":
			st.File = n << 10
		case "Threads":
			st.Threads = int(n)
		}
	}
	cpu, err := procCPU(pid)
	if err != nil {
		return st, err
	}
	st.CPU = cpu
	if fds, err := os.ReadDir(dir + "/fd"); err == nil {
		st.FDs = len(fds)
	}
	return st, nil
}

// procCPU returns the user + system CPU time a process has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may contain spaces: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed /proc stat")
	}
	// After the name: state(3) … utime(14) stime(15), i.e. f[11] and f[12].
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+stime) * clockTick, nil
}

// settle waits until the server is idle: its CPU use over 100 ms stays at or below one clock
// tick twice in a row, or 5 s have passed. Background work after a phase (conversation naming,
// persistence) must not bleed into the next one.
func (p *parley) settle(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	prev, err := procCPU(p.pid)
	if err != nil {
		return
	}
	quiet := 0
	for time.Now().Before(deadline) && quiet < 2 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		cur, err := procCPU(p.pid)
		if err != nil {
			return
		}
		if cur-prev <= clockTick {
			quiet++
		} else {
			quiet = 0
		}
		prev = cur
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// mb formats bytes as decimal megabytes (10^6 bytes, the unit of the target) with one decimal.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
