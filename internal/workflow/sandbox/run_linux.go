//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/headtail"
)

// workerPath is where the worker's executable is mounted inside the sandbox.
const workerPath = "/run/worker/parley"

// keptOutput is how much of the child's stderr is kept to explain a crash; stdout is drained
// and dropped (prints of user code have no place in the node's outputs, as in Dify).
const keptOutput = 16 << 10

// New checks that the sandbox works on this machine — bubblewrap can create its namespaces,
// the Python interpreter starts inside it, the JavaScript worker (when configured) answers —
// and returns a Runner. When it cannot, the error wraps ErrUnavailable and says why: code is
// never run unsandboxed.
func New(ctx context.Context, opts Options) (*Runner, error) {
	opts.defaults()
	prog, err := seccompProgram()
	if err != nil {
		return nil, fmt.Errorf("%w: seccomp filter: %v", ErrUnavailable, err)
	}
	if _, err := exec.LookPath(opts.Bubblewrap); err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (%s) is not installed: %v (Debian package bubblewrap)", ErrUnavailable, opts.Bubblewrap, err)
	}
	if _, err := os.Stat(opts.Python); err != nil {
		return nil, fmt.Errorf("%w: python3 (%s) is not installed: %v (Debian package python3)", ErrUnavailable, opts.Python, err)
	}
	pyDirs, err := interpreterDirs(opts.Python, slices.Concat(systemDirs, opts.ReadOnly))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	r := &Runner{opts: opts, seccomp: prog, slots: make(chan struct{}, opts.MaxConcurrent), pythonDirs: pyDirs}
	probe := func(lang, code string) error {
		// The probe is bounded by its own limit, not the code's: a short code timeout must not
		// refuse a sandbox that is merely slow to start on a loaded machine.
		res, err := r.run(ctx, Request{Language: lang, Code: code, Inputs: map[string]any{"x": 1}}, probeTimeout)
		if err != nil {
			return err
		}
		if string(res.JSON) != `{"x":2}` && string(res.JSON) != `{"x": 2}` {
			return fmt.Errorf("unexpected result %s", res.JSON)
		}
		return nil
	}
	if err := probe(Python3, "def main(x):\n    return {'x': x + 1}\n"); err != nil {
		return nil, fmt.Errorf("%w: a python3 probe failed under bubblewrap (%s): %v", ErrUnavailable, opts.Bubblewrap, err)
	}
	if opts.Worker.Path != "" {
		if err := probe(JavaScript, "function main({x}) { return {x: x + 1} }"); err != nil {
			return nil, fmt.Errorf("%w: a javascript probe failed under bubblewrap: %v", ErrUnavailable, err)
		}
	}
	return r, nil
}

// bwrapArgs is the sandbox: new user, pid, network, ipc, uts and cgroup namespaces, uid and gid
// 65534 inside, the code as the pid namespace's first process (bwrap then waits for it itself,
// so the CPU time it used is in bwrap's resource usage; with no fork allowed it needs no reaper), /usr and the interpreter's files read-only, a fresh /proc and minimal /dev, a
// size-capped tmpfs on /tmp (the only writable place), the root itself read-only, no
// environment, and the seccomp filter read from fd 4.
func (r *Runner) bwrapArgs() []string {
	o := r.opts
	a := []string{"--unshare-all"}
	if o.Network {
		a = append(a, "--share-net")
	}
	a = append(a, "--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns",
		"--die-with-parent", "--new-session", "--as-pid-1", "--clearenv",
		"--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
		"--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp",
		"--ro-bind", "/usr", "/usr")
	// /bin, /lib… are symlinks into /usr on merged-/usr systems, directories elsewhere.
	for _, dir := range systemDirs[1:] {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				a = append(a, "--symlink", target, dir)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", dir, dir)
		}
	}
	if o.Network {
		// Name resolution and TLS need these; nothing else of /etc is visible. Only the public
		// certificates of /etc/ssl and /etc/pki: their private directories hold the host's keys,
		// which code run as root (the sandbox's root is the server's user) could otherwise read.
		for _, p := range []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf",
			"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/pki/ca-trust", "/etc/pki/tls/certs",
			"/etc/pki/tls/cert.pem", "/etc/pki/tls/openssl.cnf"} {
			a = append(a, "--ro-bind-try", p, p)
		}
	} else {
		// The public CA certificates only: requests (Debian's) checks that its bundle exists
		// before it opens a connection, so without them an https call would fail on a missing
		// file instead of on the network, and not be reported as the network being off.
		a = append(a, "--ro-bind-try", "/etc/ssl/certs", "/etc/ssl/certs")
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
		"--size", strconv.FormatInt(o.Scratch, 10), "--tmpfs", "/tmp", "--chdir", "/tmp")
	// After the scratch /tmp, which would hide a path under /tmp mounted before it.
	return appendReadOnly(a, o.ReadOnly)
}

// appendReadOnly adds bwrap arguments that mount each host path read-only at the same place.
func appendReadOnly(args, paths []string) []string {
	for _, p := range paths {
		args = append(args, "--ro-bind", p, p)
	}
	return args
}

// probeTimeout bounds each start-up probe of New.
const probeTimeout = 30 * time.Second

// run runs one request in the sandbox, for at most timeout of wall-clock time.
func (r *Runner) run(ctx context.Context, req Request, timeout time.Duration) (Result, error) {
	o := r.opts
	start := time.Now()
	input, err := json.Marshal(struct {
		Code   string         `json:"code"`
		Inputs map[string]any `json:"inputs"`
	}{req.Code, orEmpty(req.Inputs)})
	if err != nil {
		return Result{}, execErr(KindRuntime, "The inputs cannot be encoded as JSON: %v", err)
	}
	cpuSecs := int64((o.CPU + time.Second - 1) / time.Second)
	args := r.bwrapArgs()
	switch req.Language {
	case Python3:
		args = appendReadOnly(args, r.pythonDirs)
		args = append(args, "--remount-ro", "/", "--seccomp", "4", "--", o.Python, "-I", "-B", "-c", pythonRunner,
			strconv.FormatInt(o.Memory, 10), strconv.FormatInt(cpuSecs, 10),
			strconv.FormatInt(o.MaxFileSize, 10), strconv.Itoa(o.MaxOpenFiles), onOff(o.Network))
	case JavaScript:
		args = append(args, "--ro-bind", o.Worker.Path, workerPath)
		for _, kv := range o.Worker.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				args = append(args, "--setenv", k, v)
			}
		}
		args = append(args, "--remount-ro", "/", "--seccomp", "4", "--", workerPath)
		args = append(args, o.Worker.Args...)
		args = append(args, "-memory="+strconv.FormatInt(o.Memory, 10), "-cpu="+strconv.FormatInt(cpuSecs, 10),
			"-fsize="+strconv.FormatInt(o.MaxFileSize, 10), "-nofile="+strconv.Itoa(o.MaxOpenFiles))
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	// The sandbox dies with the OS thread that started bwrap (Pdeathsig, then bwrap's
	// --die-with-parent): hold this goroutine on that thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(runCtx, o.Bubblewrap, args...)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = bytes.NewReader(input)
	stderr := &headtail.Buffer{Max: keptOutput}
	cmd.Stderr = stderr // stdout stays nil: the null device, prints are dropped

	resR, resW, err := os.Pipe()
	if err != nil {
		return Result{}, execErr(KindUnavailable, "code sandbox: %v", err)
	}
	defer resR.Close()
	filterR, filterW, err := os.Pipe()
	if err != nil {
		resW.Close()
		return Result{}, execErr(KindUnavailable, "code sandbox: %v", err)
	}
	defer filterR.Close()
	// The filter is a few hundred bytes: it fits the pipe's buffer before bwrap reads it.
	_, werr := filterW.Write(r.seccomp)
	filterW.Close()
	if werr != nil {
		resW.Close()
		return Result{}, execErr(KindUnavailable, "code sandbox: %v", werr)
	}
	cmd.ExtraFiles = []*os.File{resW, filterR}
	if err := cmd.Start(); err != nil {
		resW.Close()
		if ctx.Err() != nil {
			return Result{}, context.Cause(ctx)
		}
		return Result{}, execErr(KindUnavailable, "The code sandbox could not be started: %v", err)
	}
	resW.Close()
	filterR.Close()
	type read struct {
		data     []byte
		overflow bool
		err      error
	}
	got := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(resR, int64(o.MaxResult)+1))
		// Drain the rest so a writer blocked on a full pipe sees it consumed, then discard.
		_, _ = io.Copy(io.Discard, resR)
		got <- read{data: data, overflow: len(data) > o.MaxResult, err: err}
	}()
	waitErr := cmd.Wait()
	var res read
	select {
	case res = <-got:
	case <-time.After(2 * time.Second):
		// A grandchild kept the pipe open: the sandbox is dead, its pid namespace with it.
		res = read{err: errors.New("result pipe still open")}
	}
	elapsed := time.Since(start)

	if ctx.Err() != nil {
		return Result{}, context.Cause(ctx)
	}
	if errors.Is(context.Cause(runCtx), errTimedOut) {
		return Result{}, execErr(KindTimeout, "Code execution timed out: it ran longer than the %s limit.", timeout)
	}
	var ee *exec.ExitError
	exited := errors.As(waitErr, &ee)
	if res.overflow {
		return Result{}, execErr(KindOutput, "The code's result is larger than the %d-byte limit.", o.MaxResult)
	}
	if waitErr == nil || (exited && len(res.data) > 0) {
		var doc childDoc
		if err := json.Unmarshal(res.data, &doc); err == nil {
			switch {
			case doc.Error != nil && doc.Kind == KindCPU:
				return Result{}, execErr(KindCPU, "Code execution exceeded the CPU time limit of %s.", time.Duration(cpuSecs)*time.Second)
			case doc.Error != nil && doc.Kind == KindMemory:
				return Result{}, execErr(KindMemory, "Code execution exceeded the memory limit of %d MB (%s).", o.Memory>>20, *doc.Error)
			case doc.Error != nil && doc.Kind == KindNetwork && !o.Network:
				return Result{}, execErr(KindNetwork, "%s", networkOff(*doc.Error))
			case doc.Error != nil:
				kind := doc.Kind
				if kind != KindResult {
					kind = KindRuntime
				}
				return Result{}, execErr(kind, "%s", *doc.Error)
			case len(doc.Result) > 0 && doc.Result[0] == '{':
				return Result{JSON: doc.Result, Duration: elapsed}, nil
			}
		}
	}
	// No usable result: say why the process ended.
	if exited {
		ps := ee.ProcessState
		used := ps.UserTime() + ps.SystemTime()
		code := ps.ExitCode()
		sig := 0
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = int(ws.Signal())
		} else if code > 128 {
			sig = code - 128 // bwrap reports a child killed by signal s as 128+s
		}
		errText := stderr.String()
		if debugSandbox {
			fmt.Fprintf(os.Stderr, "sandbox: exit %d sig %d cpu %s stderr %q\n", code, sig, used, errText)
		}
		switch {
		case sig == int(syscall.SIGXCPU) || (sig == int(syscall.SIGKILL) && used >= o.CPU):
			return Result{}, execErr(KindCPU, "Code execution exceeded the CPU time limit of %s.", time.Duration(cpuSecs)*time.Second)
		case outOfMemory(errText):
			return Result{}, execErr(KindMemory, "Code execution exceeded the memory limit of %d MB.", o.Memory>>20)
		case strings.Contains(errText, "bwrap:"):
			return Result{}, execErr(KindUnavailable, "The code sandbox could not be set up: %s", strings.TrimSpace(lastLine(errText)))
		case sig > 0:
			return Result{}, execErr(KindCrash, "Code execution failed: the process was killed by signal %d (%s).", sig, syscall.Signal(sig))
		default:
			msg := fmt.Sprintf("Code execution failed: the process exited with status %d and no result.", code)
			if t := strings.TrimSpace(lastLine(errText)); t != "" {
				msg += " " + t
			}
			return Result{}, execErr(KindCrash, "%s", msg)
		}
	}
	if waitErr != nil {
		return Result{}, execErr(KindCrash, "Code execution failed: %v", waitErr)
	}
	return Result{}, execErr(KindCrash, "Code execution failed: the process ended without a result.")
}

var errTimedOut = errors.New("code execution timed out")

// onOff is how the Python runner is told whether the network is on.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// outOfMemory reports whether a crash report says memory ran out (Go: "out of memory"; the race
// detector's runtime reports exhausted address space its own way).
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space collisions", "MemoryError"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

var debugSandbox = os.Getenv("PARLEY_SANDBOX_DEBUG") != ""
