package sandbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/sandbox"
)

// workerEnv marks the test binary started as the JavaScript worker.
const workerEnv = "PARLEY_CODE_WORKER_TEST"

// TestMain lets the test binary play the JavaScript worker, as `parley` does from its hidden
// subcommand.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(sandbox.WorkerMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// newRunner builds a Runner with the test binary as its worker. Without bubblewrap it skips
// loudly, except under CI, where the sandbox's packages are installed and it must work.
func newRunner(tb testing.TB, opts sandbox.Options) *sandbox.Runner {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	opts.Worker = sandbox.Command{Path: self, Env: []string{workerEnv + "=1"}}
	r, err := sandbox.New(context.Background(), opts)
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") == "" {
			tb.Skipf("SKIPPING: the code sandbox cannot run here: %v", err)
		}
		tb.Fatal(err)
	}
	return r
}

func run(t *testing.T, r *sandbox.Runner, lang, code string, inputs map[string]any) (string, *sandbox.Error) {
	t.Helper()
	res, err := r.Run(context.Background(), sandbox.Request{Language: lang, Code: code, Inputs: inputs})
	if err != nil {
		var se *sandbox.Error
		if !errors.As(err, &se) {
			t.Fatalf("error is not a *sandbox.Error: %v", err)
		}
		return "", se
	}
	return string(res.JSON), nil
}

func TestSmoke(t *testing.T) {
	r := newRunner(t, sandbox.Options{})
	out, err := run(t, r, sandbox.Python3, "import json, re, datetime\ndef main(a, b):\n    print('noise')\n    return {'s': a + b, 'd': datetime.date(2024, 1, 2).isoformat(), 'r': re.sub('a', 'b', 'aaa')}\n", map[string]any{"a": 1, "b": 2})
	t.Log(out, err)
	out, err = run(t, r, sandbox.JavaScript, "function main({a, b}) { console.log('x'); return {s: a + b, z: [1, 'x']} }", map[string]any{"a": 1, "b": 2})
	t.Log(out, err)
	if !strings.Contains(out, "3") {
		t.Fatal(out)
	}
}
