package client_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/parleytest"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// The examples run against a real Parley server that TestMain builds and starts on SQLite, with a
// fake OpenAI-compatible upstream as its model provider. These are what they use:
var (
	// baseURL is the server's address, without /v1 (client.New adds it).
	baseURL string
	// appKey is a key of the chat app `assistant` of testdata/parley.yaml.
	appKey string
	// workflowKey is a key of the Workflow app of docs/examples/workflow-basic.yml.
	workflowKey string
	// knowledgeKey is a knowledge-base key.
	knowledgeKey string
)

// upstreamKey is the provider key the server is configured with and the fake accepts.
const upstreamKey = "sk-examples"

func TestMain(m *testing.M) {
	os.Exit(runExamplesServer(m))
}

// runExamplesServer builds parley, starts it with its upstream, issues the examples' keys, runs
// the tests and stops the server.
func runExamplesServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "parley-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	pkgDir := filepath.Dir(file)
	binary := filepath.Join(dir, "parley")
	if err := parleytest.Build(context.Background(), filepath.Join(pkgDir, ".."), binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	// The model's replies the examples print; any other chat gets the fake's "Echo: …".
	upstream := openaitest.NewServer(openaitest.WithAPIKey(upstreamKey))
	defer upstream.Close()
	upstream.On("What is Parley?", openaitest.Reply{Text: "Parley is an LLM application server."})
	upstream.On("Say hello in three words.", openaitest.Reply{Text: "Hello there, friend."})
	upstream.On("tides", openaitest.Reply{Text: "Tides rise and fall twice a day."})

	env := append(os.Environ(),
		"PARLEY_ADDR=127.0.0.1:0",
		"PARLEY_DATA_DIR="+filepath.Join(dir, "data"),
		"PARLEY_DATABASE_URL=", // SQLite in the data dir
		"PARLEY_CONFIG="+filepath.Join(pkgDir, "testdata", "parley.yaml"),
		"PARLEY_RESPONSE_VALIDATION=enforce",
		"PARLEY_LOG_FORMAT=json",
		"PARLEY_LOG_LEVEL=info",
		"EXAMPLES_OPENAI_BASE_URL="+upstream.URL(),
		"EXAMPLES_OPENAI_KEY="+upstreamKey,
	)
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("parley %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(stdout.String()), nil
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workflowApp, err := cli("apps", "import", "--publish", filepath.Join(pkgDir, "..", "docs", "examples", "workflow-basic.yml"))
	if err == nil {
		appKey, err = cli("keys", "create", "--app", "assistant")
	}
	if err == nil {
		workflowKey, err = cli("keys", "create", "--app", workflowApp)
	}
	if err == nil {
		knowledgeKey, err = cli("keys", "create", "--knowledge")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	logs, stop, err := serve(binary, env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "parley serve: %v\n", err)
		code = 1
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "response violates the contract") {
			fmt.Fprintf(os.Stderr, "the server reported a contract violation: %s\n", line)
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "server log:\n%s", logs.String())
	}
	return code
}

// serve starts `parley serve` and sets baseURL once the server logs its address. stop sends
// SIGTERM and waits for the process to exit.
func serve(binary string, env []string) (logs *bytes.Buffer, stop func() error, err error) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = env
	cmd.WaitDelay = 20 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	logs = &bytes.Buffer{}
	addr, done := parleytest.ReadLog(stderr, func(line []byte) {
		logs.Write(line)
		logs.WriteByte('\n')
	})
	stop = func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		return cmd.Wait()
	}
	select {
	case a := <-addr:
		baseURL = "http://" + a
		return logs, stop, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		return nil, nil, fmt.Errorf("parley serve did not report its address in 30s; log:\n%s", logs.String())
	}
}
