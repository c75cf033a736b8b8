// Package sandbox runs the code of workflow code nodes (Python 3 and JavaScript) in child
// processes, never in the server: each run is a fresh process under bubblewrap with its own
// namespaces (no network unless allowed, a read-only minimal filesystem with a small scratch
// /tmp, no view of the server's processes), a seccomp filter that refuses new processes, and
// kernel limits on memory, CPU time, file size and open files, plus a wall-clock deadline at
// which the whole sandbox is killed.
//
// The contract is Dify's: the code defines main, which receives the node's inputs (Python:
// main(**inputs); JavaScript: main(inputs), one object) and returns a dict or object. [Runner.Run]
// returns that object as JSON; [CheckOutputs] validates it against the node's declared outputs
// with Dify's limits and error texts.
//
// Python runs the system interpreter (Options.Python). JavaScript runs on goja inside a child
// of the parley binary itself: the caller gives the command that reaches [WorkerMain]
// (Options.Worker), a hidden subcommand in the server and the test binary in tests.
//
// A code node runs in two steps:
//
//	res, err := runner.Run(ctx, sandbox.Request{Language: lang, Code: code, Inputs: inputs})
//	// err: an *Error (the node fails with its Message, error_type its Type), or ctx's cause
//	out, err := sandbox.CheckOutputs(res.JSON, declared, limits) // declared: OutputSpecs from the DSL
//	// out.Values (ints as int64) or out.JSON (Dify's key order) are the node's outputs
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/tracing"
)

// Languages a code node may be written in (Dify's code_language values).
const (
	Python3    = "python3"
	JavaScript = "javascript"
)

// Defaults of [Options].
const (
	DefaultTimeout      = 15 * time.Second
	DefaultCPU          = 10 * time.Second
	DefaultMemory       = 256 << 20
	DefaultScratch      = 16 << 20
	DefaultMaxFileSize  = 8 << 20
	DefaultMaxOpenFiles = 256
	DefaultMaxResult    = 16 << 20
	DefaultPython       = "/usr/bin/python3"
	DefaultBubblewrap   = "/usr/bin/bwrap"
)

// Command starts a program: the path of the executable, its arguments and its whole environment.
type Command struct {
	Path string
	Args []string
	Env  []string
}

// Options configure a [Runner]. Zero values take the defaults above.
type Options struct {
	// Network lets code reach the network (the host's network namespace, DNS and CA
	// certificates). Off by default: the sandbox then has only its own loopback interface.
	Network bool
	// Timeout is the wall-clock limit of one run, process start included.
	Timeout time.Duration
	// CPU is the CPU time one run may use, rounded up to whole seconds.
	CPU time.Duration
	// Memory is the address space one run may use, in bytes.
	Memory int64
	// Scratch is the size of the writable /tmp of one run, in bytes.
	Scratch int64
	// MaxFileSize caps any one file the code writes, in bytes.
	MaxFileSize int64
	// MaxOpenFiles caps the open file descriptors of the code.
	MaxOpenFiles int
	// MaxResult caps the JSON result read back from the child, in bytes.
	MaxResult int
	// MaxConcurrent bounds the runs in flight; more wait their turn (0: twice the CPUs).
	MaxConcurrent int
	// Python is the interpreter for python3 code, an absolute path: the system's, or the
	// python of a virtual environment (bin/python3), which is then mounted read-only in the
	// sandbox with the installation its interpreter comes from when that is not under /usr.
	Python string
	// Bubblewrap is the bwrap executable.
	Bubblewrap string
	// Worker starts the JavaScript worker: a program whose command line, followed by the flags
	// the Runner adds, reaches WorkerMain. Its executable is mounted read-only in the sandbox.
	// Empty: javascript code fails to run.
	Worker Command
	// ReadOnly are more host paths mounted read-only at the same place in the sandbox.
	ReadOnly []string
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CPU <= 0 {
		o.CPU = DefaultCPU
	}
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	if o.Scratch <= 0 {
		o.Scratch = DefaultScratch
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if o.MaxResult <= 0 {
		o.MaxResult = DefaultMaxResult
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 2 * runtime.NumCPU()
	}
	if o.Python == "" {
		o.Python = DefaultPython
	}
	if o.Bubblewrap == "" {
		o.Bubblewrap = DefaultBubblewrap
	}
}

// Request is one run: the code, its language and the inputs main receives.
type Request struct {
	Language string
	Code     string
	Inputs   map[string]any
}

// Result is what main returned.
type Result struct {
	// JSON is the object main returned, its keys in the order the code built them.
	JSON []byte
	// Duration is the wall-clock time of the run, process start included.
	Duration time.Duration
}

// Kinds of [Error].
const (
	// KindUnavailable: the sandbox could not be set up (a configuration problem).
	KindUnavailable = "unavailable"
	// KindTimeout: the run passed its wall-clock limit and was killed.
	KindTimeout = "timeout"
	// KindCPU: the run passed its CPU time limit and was killed.
	KindCPU = "cpu"
	// KindMemory: the run passed its memory limit.
	KindMemory = "memory"
	// KindRuntime: the code raised an error (its message and traceback are the Error's).
	KindRuntime = "runtime"
	// KindNetwork: with the network off, the code tried to reach it and failed with the error
	// the refused call raised (a runtime error whose Message also says how to turn it on).
	KindNetwork = "network"
	// KindResult: main is missing or did not return a dict / object.
	KindResult = "result"
	// KindCrash: the process died without a result (a signal, a broken interpreter).
	KindCrash = "crash"
	// KindOutput: the result breaks the declared outputs or Dify's output limits.
	KindOutput = "output"
)

// Dify's error types (a node execution's error_type).
const (
	TypeExecution        = "CodeExecutionError"
	TypeOutputValidation = "OutputValidationError"
	TypeDepthLimit       = "DepthLimitError"
	TypeCodeNode         = "CodeNodeError"
)

// Error is a failed run or a failed output check: the code node fails with Message.
type Error struct {
	Kind string
	// Type is Dify's name of the error class, for the node execution's error_type.
	Type    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// NetworkSetting is the server setting that lets code nodes reach the network, named by the
// error of code that fails on a network call while it is off.
const NetworkSetting = "PARLEY_CODE_NETWORK=true"

// networkOff is the message of a KindNetwork failure: the code's own error comes after it,
// because a code node that worked in Dify (whose sandbox reaches the network through its SSRF
// proxy) fails here only for want of the setting, and the traceback alone does not say so.
func networkOff(codeErr string) string {
	return "The code failed on a network call, and the network is off for code nodes on this server " +
		"(set " + NetworkSetting + " to let code nodes reach it):\n" + codeErr
}

func execErr(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Type: TypeExecution, Message: fmt.Sprintf(format, args...)}
}

// ErrUnavailable is wrapped by the error of [New] when the sandbox cannot work on this machine.
var ErrUnavailable = errors.New("code sandbox unavailable")

// Runner runs code in sandboxes. It is safe for concurrent use.
type Runner struct {
	opts    Options
	seccomp []byte
	slots   chan struct{}
	// pythonDirs are the host directories Python runs mount beside the system's: the
	// interpreter's virtual environment and installation (see interpreterDirs).
	pythonDirs []string
}

// Run runs req.Code in a new sandbox and returns what main returned. A failure of the code or
// of the sandbox is an *Error; a ctx that ends first kills the sandbox and returns ctx's cause.
// The run, its wait for a free sandbox included, is a span.
func (r *Runner) Run(ctx context.Context, req Request) (res Result, err error) {
	ctx, span := tracing.Start(ctx, "code", trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetName("code " + req.Language)
		span.SetAttributes(tracing.CodeLanguage.String(req.Language))
		defer func() {
			outcome := "ok"
			if e, ok := errors.AsType[*Error](err); ok {
				outcome = e.Kind
			} else if err != nil {
				outcome = "cancelled"
			}
			span.SetAttributes(tracing.CodeOutcome.String(outcome))
			tracing.Fail(span, err)
			span.End()
		}()
	}
	switch req.Language {
	case Python3, JavaScript:
	default:
		return Result{}, execErr(KindUnavailable, "Unsupported code language %q.", req.Language)
	}
	if req.Language == JavaScript && r.opts.Worker.Path == "" {
		return Result{}, execErr(KindUnavailable, "JavaScript code cannot run: no worker is configured.")
	}
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, context.Cause(ctx)
	}
	defer func() { <-r.slots }()
	return r.run(ctx, req, r.opts.Timeout)
}

// childDoc is the document a child writes on fd 3: the result, or an error and its kind.
type childDoc struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *string         `json:"error,omitempty"`
	Kind   string          `json:"kind,omitempty"`
}

// Options returns the options in effect, defaults filled in.
func (r *Runner) Options() Options { return r.opts }
