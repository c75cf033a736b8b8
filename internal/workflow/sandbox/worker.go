package sandbox

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dop251/goja"

	"github.com/parleyhq/parley/internal/rlimit"
)

// maxCallStack bounds JavaScript recursion: past it goja throws a RangeError instead of
// growing the Go stack until the process dies.
const maxCallStack = 10000

// WorkerMain is the child side of JavaScript runs, started inside the sandbox by the command
// in Options.Worker: it lowers its own resource limits (flags), reads the request from stdin,
// runs the code on goja, calls main(inputs) and writes the result document on fd 3. It returns
// the process exit code.
func WorkerMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("code-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	memory := fs.Int64("memory", 0, "address space budget in bytes (0: none)")
	cpu := fs.Int64("cpu", 0, "CPU seconds (0: none)")
	fsize := fs.Int64("fsize", 0, "largest file in bytes (0: none)")
	nofile := fs.Int("nofile", 0, "open files (0: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The hard limits are lowered too, so the code cannot raise them again. Past the memory
	// budget the runtime dies with "out of memory", which the parent reports as the memory
	// limit; past the CPU time the kernel kills the worker.
	limits := rlimit.Limits{CPU: time.Duration(*cpu) * time.Second, Memory: *memory, FileSize: *fsize, OpenFiles: *nofile, NoCore: true}
	if err := rlimit.Apply(limits); err != nil {
		fmt.Fprintln(stderr, "code-worker: limits:", err)
		return 1
	}
	var req struct {
		Code   string          `json:"code"`
		Inputs json.RawMessage `json:"inputs"`
	}
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		fmt.Fprintln(stderr, "code-worker: read request:", err)
		return 1
	}
	out := os.NewFile(3, "result")
	if out == nil {
		fmt.Fprintln(stderr, "code-worker: no result descriptor")
		return 1
	}
	var once sync.Once
	write := func(doc childDoc) (code int) {
		code = 1
		once.Do(func() {
			data, err := json.Marshal(doc)
			if err == nil {
				_, err = out.Write(data)
			}
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				fmt.Fprintln(stderr, "code-worker: write result:", err)
				return
			}
			code = 0
		})
		return code
	}
	// At the soft CPU limit the kernel sends SIGXCPU: report it and stop, rather than wait a
	// second for the SIGKILL of the hard limit and leave the parent guessing.
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		text := "SIGXCPU"
		write(childDoc{Error: &text, Kind: KindCPU})
		os.Exit(3)
	}()
	return write(runJS(req.Code, string(req.Inputs), stdout))
}

// runJS runs code as Dify does: the script defines main, main receives the inputs as one
// object, and the result is what JSON.stringify makes of main's return value.
func runJS(code, inputs string, stdout io.Writer) childDoc {
	fail := func(kind, text string) childDoc { return childDoc{Error: &text, Kind: kind} }
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStack)
	installConsole(vm, stdout)
	jsonObj := vm.Get("JSON").ToObject(vm)
	parse, _ := goja.AssertFunction(jsonObj.Get("parse"))
	stringify, _ := goja.AssertFunction(jsonObj.Get("stringify"))
	in, err := parse(goja.Undefined(), vm.ToValue(inputs))
	if err != nil {
		return fail(KindRuntime, "The inputs cannot be read: "+err.Error())
	}
	if _, err := vm.RunScript("<code>", code); err != nil {
		return jsFailure(err)
	}
	mainVal := vm.Get("main")
	if mainVal == nil || goja.IsUndefined(mainVal) {
		return fail(KindResult, "ReferenceError: main is not defined")
	}
	main, ok := goja.AssertFunction(mainVal)
	if !ok {
		return fail(KindResult, "TypeError: main is not a function")
	}
	ret, err := main(goja.Undefined(), in)
	if err != nil {
		return jsFailure(err)
	}
	text, err := stringify(goja.Undefined(), ret)
	if err != nil {
		return jsFailure(err)
	}
	if goja.IsUndefined(text) {
		return fail(KindResult, "Result must be a dict, got undefined")
	}
	s := text.String()
	if kind := jsonKind(s); kind != "dict" {
		return fail(KindResult, "Result must be a dict, got "+kind)
	}
	return childDoc{Result: json.RawMessage(s)}
}

// jsonKind names the type of a JSON text as Python would after json.loads.
func jsonKind(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "NoneType"
	}
	switch s[0] {
	case '{':
		return "dict"
	case '[':
		return "list"
	case '"':
		return "str"
	case 't', 'f':
		return "bool"
	case 'n':
		return "NoneType"
	}
	if strings.ContainsAny(s, ".eE") {
		return "float"
	}
	return "int"
}

func jsFailure(err error) childDoc {
	text := err.Error()
	var overflow *goja.StackOverflowError
	if errors.As(err, &overflow) {
		text = "RangeError: Maximum call stack size exceeded"
	}
	kind := KindRuntime
	if strings.Contains(text, "out of memory") {
		kind = KindMemory
	}
	text = strings.TrimRight(text, "\n")
	return childDoc{Error: &text, Kind: kind}
}

// installConsole gives the script a console whose output goes to stdout, which the parent
// drops (Dify ignores what code prints); without it console.log would throw.
func installConsole(vm *goja.Runtime, stdout io.Writer) {
	console := vm.NewObject()
	logf := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = a.String()
		}
		fmt.Fprintln(stdout, strings.Join(parts, " "))
		return goja.Undefined()
	}
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(name, logf)
	}
	_ = vm.Set("console", console)
}
