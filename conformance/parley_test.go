// Package conformance is Parley's black-box suite: it builds and starts the real binary (or
// targets PARLEY_URL), drives it only through the generated client and raw HTTP, and checks
// every response and event against api/openapi.yaml read from disk.
package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/parleytest"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// binary is the parley binary built once for the whole run.
var binary string

// upstream is the fake OpenAI-compatible provider every server of the run talks to. Tests
// script it with rules keyed on a marker unique to the test (openaitest.Server.On).
var upstream *openaitest.Server

// generatedTitle is what the fake answers to every conversation-naming request.
const generatedTitle = "A generated title"

// upstreamKey is the provider key the servers are configured with and the fake accepts.
const upstreamKey = "sk-conformance"

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("PARLEY_URL") == "" {
			dir, err := os.MkdirTemp("", "parley-conformance-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			binary = filepath.Join(dir, "parley")
			_, file, _, _ := runtime.Caller(0)
			if err := parleytest.Build(context.Background(), filepath.Join(filepath.Dir(file), ".."), binary); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		// gpt-3.5-turbo-instruct is the config's completion-style model.
		upstream = openaitest.NewServer(openaitest.WithAPIKey(upstreamKey),
			openaitest.WithModels(append(openaitest.DefaultModels(), "gpt-3.5-turbo-instruct")...))
		defer upstream.Close()
		// The naming and suggestion prompts quote the conversation, so their rules go first
		// (the fake answers with the first matching rule) and hold for every test.
		upstream.On("You name conversations", openaitest.Reply{Text: generatedTitle})
		upstream.On("predict the three questions", openaitest.Reply{Text: `["Why?", "How?", "When?"]`})
		// The page tests' browser (pages_test.go), when they started one.
		defer stopBrowser()
		return m.Run()
	}()
	os.Exit(code)
}

// Parley is one running server under test.
type Parley struct {
	// URL is the API base, ending in /v1.
	URL string
	// AppKey is a key of the `chatbot` app; KnowledgeKey a knowledge-base key.
	AppKey, KnowledgeKey string
	// TenantID is the workspace id the server reports.
	engine storetest.Engine
	// completionKey is a key of the `writer` Completion app, issued on first use.
	completionKey     string
	completionKeyOnce sync.Once
	env               []string
	logs              *syncBuffer
	stop              func() error
	kill              func() error
}

// engines lists the storage engines a test runs the server on. A PARLEY_URL run has one: the
// external server.
func engines() []string {
	if os.Getenv("PARLEY_URL") != "" {
		return []string{"external"}
	}
	return []string{storetest.SQLite, storetest.Postgres}
}

// forEachServer runs fn as a parallel subtest against a fresh server on each engine.
func forEachServer(t *testing.T, fn func(t *testing.T, p *Parley)) {
	t.Helper()
	for _, name := range engines() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, startParley(t, name))
		})
	}
}

// forEachOwnServer is forEachServer for tests that control the server process (signals,
// restarts with their own settings); against an external server they are skipped.
func forEachOwnServer(t *testing.T, fn func(t *testing.T, p *Parley)) {
	t.Helper()
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	forEachServer(t, fn)
}

// startParley starts the binary on a fresh database with the conformance config, issues an app
// key and a knowledge key through the CLI, and stops the server when t ends. The server runs
// with response validation enforced; a contract violation it logs fails t.
func startParley(t *testing.T, engine string) *Parley {
	t.Helper()
	if engine == "external" {
		return &Parley{
			URL:          strings.TrimRight(os.Getenv("PARLEY_URL"), "/"),
			AppKey:       os.Getenv("PARLEY_APP_KEY"),
			KnowledgeKey: os.Getenv("PARLEY_KNOWLEDGE_KEY"),
		}
	}
	p := newParley(storetest.NewEngine(t, engine))
	p.AppKey = p.CLI(t, "keys", "create", "--app", "chatbot")
	p.KnowledgeKey = p.CLI(t, "keys", "create", "--knowledge")
	p.Start(t)
	return p
}

// newParley prepares, without starting it, a server with the conformance settings on the
// database of engine; several of them on one PostgreSQL database are replicas.
func newParley(engine storetest.Engine, extraEnv ...string) *Parley {
	_, file, _, _ := runtime.Caller(0)
	p := &Parley{engine: engine, logs: &syncBuffer{}}
	p.env = append(os.Environ(),
		"PARLEY_ADDR=127.0.0.1:0",
		"PARLEY_DATA_DIR="+p.engine.DataDir,
		"PARLEY_DATABASE_URL="+p.engine.DatabaseURL,
		"PARLEY_CONFIG="+filepath.Join(filepath.Dir(file), "testdata", "parley.yaml"),
		"PARLEY_RESPONSE_VALIDATION=enforce",
		"PARLEY_LOG_FORMAT=json",
		"PARLEY_LOG_LEVEL=info",
		"CONFORMANCE_OPENAI_KEY="+upstreamKey,
		"CONFORMANCE_OPENAI_BASE_URL="+upstream.URL(),
		"CONFORMANCE_UNSET_KEY=",
		// Small upload limits keep the size tests light; remote files come from loopback here.
		"UPLOAD_AUDIO_FILE_SIZE_LIMIT=20",
		"UPLOAD_VIDEO_FILE_SIZE_LIMIT=20",
		"UPLOAD_IMAGE_FILE_SIZE_LIMIT=2",
		"UPLOAD_FILE_EXTENSION_BLACKLIST=exe,bat",
		"PARLEY_REMOTE_FILES_ALLOW_PRIVATE=true",
		// A killed server's jobs are taken over after a few seconds rather than half a minute.
		"PARLEY_JOB_LEASE=3s",
		"PARLEY_JOB_POLL=200ms",
	)
	p.env = append(p.env, extraEnv...)
	return p
}

// CompletionKey returns a key of the `writer` Completion app, issued through the CLI on first use
// (PARLEY_COMPLETION_KEY against an external server).
func (p *Parley) CompletionKey(t *testing.T) string {
	t.Helper()
	p.completionKeyOnce.Do(func() {
		if p.engine.Name == "" {
			p.completionKey = os.Getenv("PARLEY_COMPLETION_KEY")
			return
		}
		p.completionKey = p.CLI(t, "keys", "create", "--app", "writer")
	})
	if p.completionKey == "" {
		t.Skip("no key of a Completion app (set PARLEY_COMPLETION_KEY)")
	}
	return p.completionKey
}

// Start runs `parley serve` with the server's settings (again, after Stop) and waits for its
// address. The process is stopped when t ends.
func (p *Parley) Start(t *testing.T, extraEnv ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, "serve")
	cmd.Env = append(append([]string(nil), p.env...), extraEnv...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr, _ := parleytest.ReadLog(stderr, func(line []byte) { p.logs.Write(append(append([]byte(nil), line...), '\n')) })
	var once sync.Once
	p.stop = func() error {
		var err error
		once.Do(func() {
			cancel()
			err = cmd.Wait()
			// Wait reports the cancellation that sent SIGTERM; the exit status is what counts.
			if cmd.ProcessState != nil && cmd.ProcessState.Success() {
				err = nil
			}
		})
		return err
	}
	p.kill = func() error {
		var err error
		once.Do(func() {
			err = cmd.Process.Kill()
			_ = cmd.Wait() // reports the kill
			cancel()
		})
		return err
	}
	t.Cleanup(func() {
		_ = p.stop()
		if t.Failed() {
			t.Logf("server log:\n%s", p.logs.String())
		}
		for _, line := range strings.Split(p.logs.String(), "\n") {
			if strings.Contains(line, "response violates the contract") {
				t.Errorf("server reported a contract violation: %s", line)
			}
		}
	})
	select {
	case a := <-addr:
		p.URL = "http://" + a + "/v1"
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not report its address in 30s; log:\n%s", p.logs.String())
	}
}

// Restart stops the server (which must exit cleanly) and starts it again with extraEnv added to
// its settings. A test against an external server, whose settings it cannot change, is skipped.
func (p *Parley) Restart(t *testing.T, extraEnv ...string) {
	t.Helper()
	if binary == "" {
		t.Skip("needs to restart the server with its own settings")
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	p.Start(t, extraEnv...)
}

// Stop sends SIGTERM and waits for the process to exit; it returns the exit error.
func (p *Parley) Stop() error { return p.stop() }

// Kill sends SIGKILL, as a crash would end the process (nothing runs after it), and waits for
// the process to be gone. Start runs the server again on the same database.
func (p *Parley) Kill() error { return p.kill() }

// CLI runs the parley binary with the server's settings and returns its trimmed stdout.
func (p *Parley) CLI(t *testing.T, args ...string) string {
	t.Helper()
	if binary == "" {
		t.Skip("CLI not available against an external server")
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
