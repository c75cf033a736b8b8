package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
)

// TestMain lets the test binary answer as `parley code-worker`, which is what the code sandbox
// starts for JavaScript (os.Executable is the test binary here).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == codeWorkerCmdName {
		cmd := newRootCmd(os.Getenv)
		cmd.SetArgs(os.Args[1:])
		if err := cmd.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCodeSandboxFromSettings builds the sandbox from the default settings and runs both
// languages through it, JavaScript through the hidden code-worker subcommand.
func TestCodeSandboxFromSettings(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	r, lim, err := newCodeSandbox(context.Background(), cfg.Code)
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") == "" {
			t.Skipf("SKIPPING: the code sandbox cannot run on this machine: %v", err)
		}
		t.Fatal(err)
	}
	if lim != sandbox.DefaultLimits() {
		t.Fatalf("limits from the default settings %+v, want Dify's %+v", lim, sandbox.DefaultLimits())
	}
	for lang, code := range map[string]string{
		sandbox.Python3:    "def main(a):\n    return {'b': a * 2}\n",
		sandbox.JavaScript: "function main({a}) { return {b: a * 2} }",
	} {
		res, err := r.Run(context.Background(), sandbox.Request{Language: lang, Code: code, Inputs: map[string]any{"a": 21}})
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		out, err := sandbox.CheckOutputs(res.JSON, []sandbox.OutputSpec{{Name: "b", Type: sandbox.TypeNumber}}, lim)
		if err != nil || out.Values["b"] != int64(42) {
			t.Fatalf("%s: %s %v", lang, res.JSON, err)
		}
	}
}

// TestLazyCodeSandbox: building the server's code sandbox does nothing until a code node runs;
// on a machine without the sandbox's packages the first run gets the reason (naming the package
// to install), and the verdict is kept rather than probed again on every run.
func TestLazyCodeSandbox(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Code.Python = filepath.Join(t.TempDir(), "no-python3")
	var logs bytes.Buffer
	get := lazyCodeSandbox(cfg.Code, slog.New(slog.NewTextHandler(&logs, nil)))
	if logs.Len() != 0 {
		t.Fatalf("built before use: %s", logs.String())
	}
	for range 2 {
		r, _, err := get(context.Background())
		if r != nil || !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "Debian package") {
			t.Fatalf("runner %v, error %v", r, err)
		}
	}
	if n := strings.Count(logs.String(), "code sandbox is unavailable"); n != 1 {
		t.Fatalf("probed %d times: %s", n, logs.String())
	}
}
