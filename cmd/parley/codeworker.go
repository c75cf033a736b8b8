package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
)

// codeWorkerCmdName is the hidden subcommand the code sandbox runs, inside bubblewrap, to run
// the JavaScript of a code node on goja under the sandbox's limits.
const codeWorkerCmdName = "code-worker"

func newCodeWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    codeWorkerCmdName,
		Short:  "Run one JavaScript code node from stdin (run by the code sandbox, not by hand)",
		Hidden: true,
		// The flags are the sandbox's own, as sandbox.Runner passes them.
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := sandbox.WorkerMain(args, os.Stdin, os.Stdout, os.Stderr); code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
}

// newCodeSandbox checks the code-node sandbox on this machine and returns its runner and the
// output limits, from the settings. It fails with a configuration error (wrapping
// sandbox.ErrUnavailable) when bubblewrap or python3 cannot run: code is never run unsandboxed.
func newCodeSandbox(ctx context.Context, c config.CodeSettings) (*sandbox.Runner, sandbox.Limits, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, sandbox.Limits{}, fmt.Errorf("locate the parley binary for the code sandbox: %w", err)
	}
	r, err := sandbox.New(ctx, sandbox.Options{
		Network: c.Network, Timeout: c.Timeout, CPU: c.CPULimit, Memory: int64(c.MemoryLimitMB) << 20,
		Python: c.Python, Worker: sandbox.Command{Path: self, Args: []string{codeWorkerCmdName}},
	})
	if err != nil {
		return nil, sandbox.Limits{}, err
	}
	lim := sandbox.Limits{
		MaxStringLength: c.MaxStringLength, MaxNumber: c.MaxNumber, MinNumber: c.MinNumber,
		MaxPrecision: c.MaxPrecision, MaxDepth: c.MaxDepth, MaxStringArrayLength: c.MaxStringArrayLength,
		MaxObjectArrayLength: c.MaxObjectArrayLength, MaxNumberArrayLength: c.MaxNumberArrayLength,
	}
	return r, lim, nil
}

// lazyCodeSandbox returns the code-node sandbox, built by newCodeSandbox when the first code
// node runs and then kept: a server on a machine without bubblewrap starts and runs every app
// without code nodes, and its code nodes fail with the reason. That the machine lacks the
// sandbox (sandbox.ErrUnavailable) is kept too; any other failure is tried again next time.
func lazyCodeSandbox(c config.CodeSettings, log *slog.Logger) func(ctx context.Context) (*sandbox.Runner, sandbox.Limits, error) {
	var (
		mu     sync.Mutex
		runner *sandbox.Runner
		lim    sandbox.Limits
		failed error
	)
	return func(ctx context.Context) (*sandbox.Runner, sandbox.Limits, error) {
		mu.Lock()
		defer mu.Unlock()
		if runner != nil || failed != nil {
			return runner, lim, failed
		}
		r, l, err := newCodeSandbox(context.WithoutCancel(ctx), c)
		if err != nil {
			log.Error("code nodes cannot run: the code sandbox is unavailable", "error", err)
			if errors.Is(err, sandbox.ErrUnavailable) {
				failed = err
			}
			return nil, sandbox.Limits{}, err
		}
		runner, lim = r, l
		return runner, lim, nil
	}
}
