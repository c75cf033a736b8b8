package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// sdkTimeout bounds one run of the Node SDK suite against one server.
const sdkTimeout = 2 * time.Minute

// TestDifyNodeSDK runs Dify's official Node SDK (npm dify-client, pinned in
// conformance/node/package.json) against the server, unchanged: conformance/node/*.test.mjs under
// node's built-in test runner: sdk.test.mjs (ChatClient, DifyClient) and completion.test.mjs
// (CompletionClient) agent.test.mjs (a Legacy Agent through ChatClient), agentapp.test.mjs (an Agent app),
// workflow.test.mjs (a Workflow app through runWorkflow), humaninput.test.mjs (a Chatflow paused at a form, resumed
// over raw HTTP), and openai.test.mjs (OpenAI's official Node SDK and the Vercel AI SDK's
// OpenAI-compatible provider against the OpenAI-compatible operations). Without node it skips,
// except in CI (CI set), where it fails.
func TestDifyNodeSDK(t *testing.T) {
	node := nodeOrSkip(t)
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	installNodeDeps(t, dir)
	all, err := filepath.Glob(filepath.Join(dir, "*.test.mjs"))
	if err != nil || len(all) == 0 {
		t.Fatalf("no test files in %s (%v)", dir, err)
	}
	// mcp.test.mjs drives the MCP SDK, not Dify's: TestMCPNodeSDK runs it.
	var files []string
	for _, f := range all {
		if filepath.Base(f) != "mcp.test.mjs" {
			files = append(files, f)
		}
	}

	forEachServer(t, func(t *testing.T, p *Parley) {
		script := scriptSDKReplies(t, p)
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		defer cancel()
		args := append([]string{"--test", "--test-reporter=spec"}, files...)
		cmd := exec.CommandContext(ctx, node, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"PARLEY_URL="+p.URL,
			"PARLEY_APP_KEY="+p.AppKey,
			"PARLEY_COMPLETION_KEY="+p.CompletionKey(t),
			"PARLEY_AGENT_KEY="+p.CLI(t, "keys", "create", "--app", "agent"),
			"PARLEY_AGENT_APP_KEY="+publishedAgentApp(t, p),
			"PARLEY_HUMAN_INPUT_KEY="+exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", "Review Desk Node SDK"),
			"PARLEY_WORKFLOW_KEY="+exampleApp(t, p, workflowExample, "Topic Writer", "Node SDK Topic Writer"),
			"PARLEY_SDK_SCRIPT="+script,
			"NO_COLOR=1",
		)
		// node --test runs each file in a child process that may outlive a killed runner and
		// hold the output pipe: do not wait for it forever.
		cmd.WaitDelay = 5 * time.Second
		out := &lineLogger{t: t}
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		out.close()
		switch {
		case ctx.Err() != nil:
			t.Fatalf("node --test did not finish in %v", sdkTimeout)
		case err != nil:
			t.Fatalf("node --test: %v (its output is above)", err)
		}
	})
}

// sdkReply is one reply of the fake model, as the Node suite reads it from PARLEY_SDK_SCRIPT:
// Marker, when set, is what in the user's message triggers it.
type sdkReply struct {
	Marker    string   `json:"marker,omitempty"`
	Chunks    []string `json:"chunks,omitempty"`
	Text      string   `json:"text,omitempty"`
	Questions []string `json:"questions,omitempty"`
}

// scriptSDKReplies registers on the shared upstream the replies the Node suite relies on, under
// markers unique to this server, and returns them, with the replies TestMain scripts for every
// test, as PARLEY_SDK_SCRIPT.
func scriptSDKReplies(t *testing.T, p *Parley) string {
	t.Helper()
	tag := fmt.Sprintf("%s-%d", p.engine.Name, time.Now().UnixNano())
	script := map[string]sdkReply{
		// A streamed answer in several chunks.
		"stream": {Marker: "[node-sdk-stream-" + tag + "]", Chunks: []string{"Streamed ", "through ", "the ", "Node ", "SDK."}},
		// One chunk, then nothing until the request goes away: only the stop operation ends it.
		"hang": {Marker: "[node-sdk-hang-" + tag + "]", Chunks: []string{"Partial answer ", "never sent"}},
		// The Completion app's answer, when the marker is in its filled-in prompt.
		"complete": {Marker: "[node-sdk-complete-" + tag + "]", Chunks: []string{"Dear ", "reader, ", "warmly."}},
		// The Legacy Agent app's answer (it has no tools: one step).
		"agent": {Marker: "[node-sdk-agent-" + tag + "]", Chunks: []string{"Agent ", "says ", "hi."}},
		// The Agent app's answer (no tool called: one step).
		"agentapp": {Marker: "[node-sdk-agentapp-" + tag + "]", Chunks: []string{"Published ", "agent ", "answers."}},
		// The Workflow app's LLM text, when the marker is its topic.
		"workflow": {Marker: "[node-sdk-workflow-" + tag + "]", Chunks: []string{"Tides ", "rise ", "and fall."}},
		// TestMain's answers to every naming and suggestion request.
		"title":   {Text: generatedTitle},
		"suggest": {Questions: []string{"Why?", "How?", "When?"}},
	}
	upstream.On(script["stream"].Marker, openaitest.Reply{Chunks: script["stream"].Chunks})
	upstream.On(script["agent"].Marker, openaitest.Reply{Chunks: script["agent"].Chunks})
	upstream.On(script["agentapp"].Marker, openaitest.Reply{Chunks: script["agentapp"].Chunks})
	upstream.On(script["workflow"].Marker, openaitest.Reply{Chunks: script["workflow"].Chunks})
	upstream.On(script["complete"].Marker, openaitest.Reply{Chunks: script["complete"].Chunks})
	upstream.On(script["hang"].Marker, openaitest.Reply{Chunks: script["hang"].Chunks, HangAfterChunks: 1})
	raw, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// publishedAgentApp imports and publishes an Agent app and returns a key of it.
func publishedAgentApp(t *testing.T, p *Parley) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent-app.yml")
	if err := os.WriteFile(path, []byte(agentAppDSL("You help {{who}}.", "Hello.")), 0o600); err != nil {
		t.Fatal(err)
	}
	name := p.CLI(t, "apps", "import", "--lenient", "--publish", path)
	return p.CLI(t, "keys", "create", "--app", name)
}

// nodeOrSkip returns the path of node; without it the test skips, except in CI (CI set), where
// it fails.
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	if os.Getenv("PARLEY_URL") != "" {
		t.Skip("the Node suites need this run's fake upstream to script the model's replies")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("node is not installed")
		}
		t.Fatal("node is not installed; CI must run the Node conformance suites")
	}
	return node
}

// installNodeDeps runs `npm ci` in dir when node_modules is missing or older than
// package-lock.json.
func installNodeDeps(t *testing.T, dir string) {
	t.Helper()
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	// npm writes node_modules/.package-lock.json on every install.
	if installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !installed.ModTime().Before(lock.ModTime()) {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("node is installed but npm is not: cannot install conformance/node's dependencies")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out.String())
	}
	t.Logf("npm ci in %s (%v):\n%s", dir, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out.String()))
}

// lineLogger writes a child's output to the test log line by line, as it comes.
type lineLogger struct {
	t      *testing.T
	mu     sync.Mutex
	buf    []byte
	closed bool
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.t.Log(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// close logs what is left and drops any later output (the test may be over by then).
func (l *lineLogger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(string(l.buf))
	}
	l.closed = true
}
