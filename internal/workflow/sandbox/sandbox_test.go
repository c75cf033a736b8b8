package sandbox_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// loudly, except under CI, where .ci/run installs the sandbox's packages and it must work.
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
			tb.Skipf("SKIPPING: the code sandbox cannot run on this machine: %v", err)
		}
		tb.Fatal(err)
	}
	return r
}

// run runs code and returns its result JSON or its *sandbox.Error.
func run(t *testing.T, r *sandbox.Runner, lang, code string, inputs map[string]any) (string, *sandbox.Error) {
	t.Helper()
	res, err := r.Run(context.Background(), sandbox.Request{Language: lang, Code: code, Inputs: inputs})
	if err != nil {
		var se *sandbox.Error
		if !errors.As(err, &se) {
			t.Fatalf("error is not a *sandbox.Error: %v", err)
		}
		if se.Type != sandbox.TypeExecution {
			t.Errorf("error type %q, want %q", se.Type, sandbox.TypeExecution)
		}
		return "", se
	}
	return string(res.JSON), nil
}

// mustFail runs code that must fail with kind and a message containing want.
func mustFail(t *testing.T, r *sandbox.Runner, lang, code, kind, want string) {
	t.Helper()
	mustFailWith(t, r, lang, code, nil, kind, want)
}

func mustFailWith(t *testing.T, r *sandbox.Runner, lang, code string, inputs map[string]any, kind, want string) {
	t.Helper()
	out, err := run(t, r, lang, code, inputs)
	if err == nil {
		t.Fatalf("%s code succeeded with %s; want a %s error", lang, out, kind)
	}
	if err.Kind != kind || !strings.Contains(err.Message, want) {
		t.Fatalf("%s code failed with %s: %q; want %s containing %q", lang, err.Kind, err.Message, kind, want)
	}
}

func TestPythonMainContract(t *testing.T) {
	t.Parallel()
	r := newRunner(t, sandbox.Options{})
	code := `import json, re, datetime

def main(text: str, n: int, items: list, obj: dict) -> dict:
    print("printed text never reaches the result")
    d = datetime.datetime(2024, 5, 17, 8, 30) + datetime.timedelta(days=n)
    return {
        "words": re.findall(r"\w+", text),
        "date": d.strftime("%Y-%m-%d"),
        "zeta": n * 2,
        "alpha": json.loads('{"k": [1, 2.5]}'),
        "count": len(items) + len(obj),
    }
`
	out, serr := run(t, r, sandbox.Python3, code, map[string]any{
		"text": "héllo, wörld", "n": 3, "items": []any{1, "a"}, "obj": map[string]any{"x": nil}})
	if serr != nil {
		t.Fatal(serr)
	}
	// Keys stay in the order main built them; ints stay ints.
	want := `{"words": ["héllo", "wörld"], "date": "2024-05-20", "zeta": 6, "alpha": {"k": [1, 2.5]}, "count": 3}`
	if out != want {
		t.Fatalf("result\n%s\nwant\n%s", out, want)
	}
	vals, err := sandbox.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := vals["zeta"].(int64); !ok || v != 6 {
		t.Fatalf("zeta = %#v, want int64 6", vals["zeta"])
	}
	if v := vals["alpha"].(map[string]any)["k"].([]any)[1]; v != 2.5 {
		t.Fatalf("alpha.k[1] = %#v, want 2.5", v)
	}

	mustFail(t, r, sandbox.Python3, "def handler():\n    return {}\n", sandbox.KindResult, "NameError: name 'main' is not defined")
	mustFail(t, r, sandbox.Python3, "def main():\n    return [1, 2]\n", sandbox.KindResult, "Result must be a dict, got list")
	mustFail(t, r, sandbox.Python3, "def main():\n    return None\n", sandbox.KindResult, "Result must be a dict, got NoneType")
	mustFail(t, r, sandbox.Python3, "def main():\n    x = 1\n    return {'r': x / 0}\n", sandbox.KindRuntime,
		"File \"<code>\", line 3, in main\n    return {'r': x / 0}\n                 ~~^~~\nZeroDivisionError: division by zero")
	mustFail(t, r, sandbox.Python3, "def main(:\n", sandbox.KindRuntime, "SyntaxError")
	mustFail(t, r, sandbox.Python3, "def main():\n    return {'x': float('nan')}\n", sandbox.KindRuntime,
		"ValueError: Out of range float values are not JSON compliant")
	mustFail(t, r, sandbox.Python3, "import os\ndef main():\n    os._exit(3)\n", sandbox.KindCrash,
		"the process exited with status 3 and no result")
	mustFail(t, r, sandbox.Python3, "import sys\ndef main():\n    sys.exit(2)\n", sandbox.KindRuntime, "SystemExit: 2")
	mustFail(t, r, sandbox.Python3, "import datetime\ndef main():\n    return {'d': datetime.date.today()}\n", sandbox.KindRuntime,
		"TypeError: Object of type date is not JSON serializable")
	// main(**inputs): an input main does not take is Python's own error.
	_, serr = run(t, r, sandbox.Python3, "def main(a):\n    return {'a': a}\n", map[string]any{"a": 1, "b": 2})
	if serr == nil || !strings.Contains(serr.Message, "TypeError: main() got an unexpected keyword argument 'b'") {
		t.Fatalf("extra input: %v", serr)
	}
}

func TestJavaScriptMainContract(t *testing.T) {
	t.Parallel()
	r := newRunner(t, sandbox.Options{})
	code := `function main({text, n, items}) {
  console.log("printed text never reaches the result");
  const words = text.match(/\w+/g);
  return {words: words, zeta: n * 2, half: n / 2, nested: {list: items.map(x => x + 1)}};
}`
	out, serr := run(t, r, sandbox.JavaScript, code, map[string]any{"text": "hello, world", "n": 3, "items": []any{1, 2}})
	if serr != nil {
		t.Fatal(serr)
	}
	want := `{"words":["hello","world"],"zeta":6,"half":1.5,"nested":{"list":[2,3]}}`
	if out != want {
		t.Fatalf("result\n%s\nwant\n%s", out, want)
	}
	mustFail(t, r, sandbox.JavaScript, "function handler() { return {} }", sandbox.KindResult, "ReferenceError: main is not defined")
	mustFail(t, r, sandbox.JavaScript, "function main() { return [1, 2] }", sandbox.KindResult, "Result must be a dict, got list")
	mustFail(t, r, sandbox.JavaScript, "function main() { return 'x' }", sandbox.KindResult, "Result must be a dict, got str")
	mustFail(t, r, sandbox.JavaScript, "function main() { return null.x }", sandbox.KindRuntime, "TypeError")
	mustFail(t, r, sandbox.JavaScript, "function main() { throw new Error('boom') }", sandbox.KindRuntime, "Error: boom")
	mustFail(t, r, sandbox.JavaScript, "function main() { return f() } function f() { return f() }", sandbox.KindRuntime, "RangeError")
}

// TestForkBomb: the seccomp filter refuses every new process, so a fork bomb stops at its first
// fork instead of filling the process table until the deadline.
func TestForkBomb(t *testing.T) {
	t.Parallel()
	r := newRunner(t, sandbox.Options{Timeout: 20 * time.Second})
	mustFail(t, r, sandbox.Python3, "import os\ndef main():\n    while True:\n        os.fork()\n",
		sandbox.KindRuntime, "PermissionError: [Errno 1] Operation not permitted")
	mustFail(t, r, sandbox.Python3, "import subprocess\ndef main():\n    subprocess.run(['/bin/true'])\n    return {}\n",
		sandbox.KindRuntime, "Operation not permitted")
	mustFail(t, r, sandbox.Python3, "import multiprocessing\ndef main():\n    p = multiprocessing.Process(target=print)\n    p.start()\n    return {}\n",
		sandbox.KindRuntime, "Operation not permitted")
	// Threads share the process and its limits: they are allowed.
	out, serr := run(t, r, sandbox.Python3, `import threading
def main():
    got = []
    ts = [threading.Thread(target=got.append, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    return {"n": len(got)}
`, nil)
	if serr != nil || out != `{"n": 4}` {
		t.Fatalf("threads: %s %v", out, serr)
	}
}

// TestInfiniteLoop: a busy loop is killed at the CPU limit, a sleeping one at the wall-clock
// limit; either fails the run with a clear error.
func TestInfiniteLoop(t *testing.T) {
	t.Parallel()
	cpu := newRunner(t, sandbox.Options{CPU: time.Second, Timeout: 2 * time.Minute})
	mustFail(t, cpu, sandbox.Python3, "def main():\n    while True:\n        pass\n", sandbox.KindCPU, "CPU time limit of 1s")
	// Code that ignores SIGXCPU meets the SIGKILL of the hard limit a second later.
	mustFail(t, cpu, sandbox.Python3, "import signal\ndef main():\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    while True:\n        pass\n",
		sandbox.KindCPU, "CPU time limit of 1s")
	mustFail(t, cpu, sandbox.JavaScript, "function main() { for (;;) {} }", sandbox.KindCPU, "CPU time limit of 1s")
	wall := newRunner(t, sandbox.Options{Timeout: time.Second})
	mustFail(t, wall, sandbox.Python3, "import time\ndef main():\n    while True:\n        time.sleep(10)\n", sandbox.KindTimeout, "timed out")
}

// TestBigAllocation: allocating 2 GB fails at the memory limit.
func TestBigAllocation(t *testing.T) {
	t.Parallel()
	r := newRunner(t, sandbox.Options{Memory: 256 << 20})
	mustFail(t, r, sandbox.Python3, "def main():\n    b = bytearray(2 * 1024 ** 3)\n    return {'n': len(b)}\n",
		sandbox.KindMemory, "memory limit of 256 MB")
	mustFail(t, r, sandbox.Python3, "def main():\n    chunks = []\n    while True:\n        chunks.append(' ' * (64 << 20))\n",
		sandbox.KindMemory, "memory limit of 256 MB")
	js := "function main() { const a = []; for (;;) { a.push(new Array(1 << 20).fill(1)) } }"
	if raceEnabled {
		// The worker is then a race build, whose detector allocates memory of its own and may
		// be what meets the limit first: the code still fails, as a crash of the worker.
		if out, serr := run(t, r, sandbox.JavaScript, js, nil); serr == nil ||
			(serr.Kind != sandbox.KindMemory && !strings.Contains(serr.Message, "ThreadSanitizer failed to allocate")) {
			t.Fatalf("javascript allocation under the race detector: %s %v", out, serr)
		}
	} else {
		mustFail(t, r, sandbox.JavaScript, js, sandbox.KindMemory, "memory limit of 256 MB")
	}
	// The sandbox is fine afterwards.
	if out, serr := run(t, r, sandbox.Python3, "def main():\n    return {'ok': True}\n", nil); serr != nil || out != `{"ok": true}` {
		t.Fatalf("after the allocation: %s %v", out, serr)
	}
}

// TestFilesystem: the host's files are not visible, and nothing but the scratch /tmp is
// writable, within its size.
func TestFilesystem(t *testing.T) {
	t.Parallel()
	r := newRunner(t, sandbox.Options{Scratch: 8 << 20, MaxFileSize: 4 << 20})
	mustFail(t, r, sandbox.Python3, "def main():\n    return {'p': open('/etc/passwd').read()}\n",
		sandbox.KindRuntime, "FileNotFoundError: [Errno 2] No such file or directory: '/etc/passwd'")
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFailWith(t, r, sandbox.Python3, "def main(p):\n    return {'s': open(p).read()}\n",
		map[string]any{"p": secret}, sandbox.KindRuntime, "FileNotFoundError")
	for _, p := range []string{"/usr/evil", "/evil", "/dev/evil", "/proc/evil", filepath.Join(dir, "evil")} {
		_, serr := run(t, r, sandbox.Python3, "def main(p):\n    open(p, 'w').write('x')\n    return {}\n", map[string]any{"p": p})
		if serr == nil || serr.Kind != sandbox.KindRuntime || !strings.Contains(serr.Message, "Error: [Errno") {
			t.Fatalf("writing %s: %v", p, serr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file appeared on the host: %v", err)
	}
	// The scratch directory works, within the file size and scratch limits.
	out, serr := run(t, r, sandbox.Python3, `import os, tempfile
def main():
    with open("/tmp/a.txt", "w") as f:
        f.write("scratch")
    with tempfile.NamedTemporaryFile("w+") as f:
        f.write("more")
    return {"read": open("/tmp/a.txt").read(), "cwd": os.getcwd(), "uid": os.getuid()}
`, nil)
	if serr != nil || out != `{"read": "scratch", "cwd": "/tmp", "uid": 65534}` {
		t.Fatalf("scratch: %s %v", out, serr)
	}
	mustFail(t, r, sandbox.Python3, "def main():\n    open('/tmp/big', 'wb').write(b'x' * (5 << 20))\n    return {}\n",
		sandbox.KindRuntime, "File too large")
	mustFail(t, r, sandbox.Python3, "def main():\n    for i in range(4):\n        open('/tmp/f%d' % i, 'wb').write(b'x' * (3 << 20))\n    return {}\n",
		sandbox.KindRuntime, "No space left on device")
	// Nothing of the server's environment leaks in.
	out, serr = run(t, r, sandbox.Python3, "import os\ndef main():\n    return {'env': sorted(os.environ)}\n", nil)
	if serr != nil || out != `{"env": ["HOME", "LANG", "PATH", "PWD", "TMPDIR"]}` {
		t.Fatalf("environment: %s %v", out, serr)
	}
}

// listener accepts one connection at a time on the host's loopback and writes "hi" to it.
func listener(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- struct{}{}
			_, _ = c.Write([]byte("hi"))
			_ = c.Close()
		}
	}()
	return ln.Addr().String(), ch
}

const connectCode = `import socket
def main(host, port):
    s = socket.create_connection((host, port), timeout=5)
    return {"got": s.recv(2).decode()}
`

// TestNetwork: with the network off the sandbox has only its own loopback, so a server on the
// host's loopback is out of reach; with it on, the same code reaches it.
func TestNetwork(t *testing.T) {
	t.Parallel()
	addr, _ := listener(t)
	host, port, _ := net.SplitHostPort(addr)
	in := map[string]any{"host": host, "port": port}
	off := newRunner(t, sandbox.Options{})
	mustFailWith(t, off, sandbox.Python3, connectCode, in, sandbox.KindNetwork, "ConnectionRefusedError")
	mustFailWith(t, off, sandbox.Python3, connectCode, map[string]any{"host": "192.0.2.1", "port": "80"}, sandbox.KindNetwork, "Network is unreachable")
	on := newRunner(t, sandbox.Options{Network: true})
	out, serr := run(t, on, sandbox.Python3, connectCode, in)
	if serr != nil || out != `{"got": "hi"}` {
		t.Fatalf("network on: %s %v", out, serr)
	}
	// TLS needs the public certificates; the host's private keys stay out of reach.
	seen := "import os\ndef main():\n    return {'certs': os.path.isdir('/etc/ssl/certs'), 'private': os.path.exists('/etc/ssl/private')}\n"
	if _, err := os.Stat("/etc/ssl/private"); err == nil {
		if out, serr := run(t, on, sandbox.Python3, seen, nil); serr != nil || out != `{"certs": true, "private": false}` {
			t.Fatalf("/etc/ssl with the network on: %s %v", out, serr)
		}
	}
}

// TestNetworkOffSaysSo: code that fails on a network call while the network is off fails with
// a message that says so and names the setting, above the code's own error (issue 22: many
// exported nodes call out, which Dify's sandbox allows). Only a refused network call counts:
// an error of the same class the code raises itself, a network error the code caught before
// failing otherwise, and any failure with the network on keep the code's own message.
func TestNetworkOffSaysSo(t *testing.T) {
	t.Parallel()
	addr, _ := listener(t)
	host, port, _ := net.SplitHostPort(addr)
	closed := closedPort(t)
	off := newRunner(t, sandbox.Options{})
	on := newRunner(t, sandbox.Options{Network: true})
	urlopen := "import urllib.request\ndef main(url):\n    return {'body': urllib.request.urlopen(url, timeout=5).read().decode()}\n"
	cases := []struct {
		name   string
		r      *sandbox.Runner
		code   string
		inputs map[string]any
		kind   string
		want   string // in the message, besides the note when kind is KindNetwork
	}{
		{"refused on loopback", off, connectCode, map[string]any{"host": host, "port": port}, sandbox.KindNetwork,
			"ConnectionRefusedError: [Errno 111] Connection refused"},
		{"no route", off, connectCode, map[string]any{"host": "192.0.2.1", "port": "80"}, sandbox.KindNetwork,
			"OSError: [Errno 101] Network is unreachable"},
		{"no DNS", off, connectCode, map[string]any{"host": "api.example.com", "port": "443"}, sandbox.KindNetwork,
			"socket.gaierror: [Errno -3]"},
		{"wrapped by urllib", off, urlopen, map[string]any{"url": "http://api.example.com/x"}, sandbox.KindNetwork,
			"urllib.error.URLError: <urlopen error [Errno -3]"},
		{"at import time", off, "import socket\nsocket.create_connection(('192.0.2.1', 80))\ndef main():\n    return {}\n", nil,
			sandbox.KindNetwork, "Network is unreachable"},
		{"raised by the code", off, "def main():\n    raise ConnectionRefusedError(111, 'Connection refused')\n", nil,
			sandbox.KindRuntime, "ConnectionRefusedError: [Errno 111] Connection refused"},
		{"caught, then another error", off, `import socket
def main():
    try:
        socket.create_connection(("192.0.2.1", 80))
    except OSError:
        pass
    open("/nonexistent/file")
`, nil, sandbox.KindRuntime, "FileNotFoundError"},
		{"unix socket", off, "import socket\ndef main():\n    socket.socket(socket.AF_UNIX).connect('/tmp/none')\n", nil,
			sandbox.KindRuntime, "FileNotFoundError"},
		{"network on", on, connectCode, map[string]any{"host": "127.0.0.1", "port": closed}, sandbox.KindRuntime,
			"ConnectionRefusedError: [Errno 111] Connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, serr := run(t, c.r, sandbox.Python3, c.code, c.inputs)
			if serr == nil {
				t.Fatalf("succeeded with %s", out)
			}
			if serr.Kind != c.kind || !strings.Contains(serr.Message, c.want) {
				t.Fatalf("failed with %s: %q; want %s containing %q", serr.Kind, serr.Message, c.kind, c.want)
			}
			note := strings.Contains(serr.Message, sandbox.NetworkSetting)
			if note != (c.kind == sandbox.KindNetwork) {
				t.Fatalf("message %q: names %s = %v, want %v", serr.Message, sandbox.NetworkSetting, note, !note)
			}
			if note && !strings.HasPrefix(serr.Message, "The code failed on a network call, and the network is off for code nodes") {
				t.Fatalf("message %q does not start with the note", serr.Message)
			}
		})
	}
}

// closedPort returns a port of the host's loopback that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// TestRequests: code that imports requests (as many real exports do) runs; with the network
// allowed it fetches from an HTTP server on the host, without it the request fails.
func TestRequests(t *testing.T) {
	t.Parallel()
	if err := exec.Command(sandbox.DefaultPython, "-c", "import requests").Run(); err != nil && os.Getenv("CI") == "" {
		t.Skip("SKIPPING: python3-requests is not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"q": "` + r.URL.Query().Get("q") + `"}`))
	}))
	t.Cleanup(srv.Close)
	code := `import requests
def main(url):
    r = requests.get(url, params={"q": "ok"}, timeout=5)
    return {"status": r.status_code, "body": r.json()}
`
	in := map[string]any{"url": srv.URL}
	on := newRunner(t, sandbox.Options{Network: true})
	out, serr := run(t, on, sandbox.Python3, code, in)
	if serr != nil || out != `{"status": 200, "body": {"q": "ok"}}` {
		t.Fatalf("network on: %s %v", out, serr)
	}
	off := newRunner(t, sandbox.Options{})
	mustFailWith(t, off, sandbox.Python3, code, in, sandbox.KindNetwork, "requests.exceptions.ConnectionError")
	mustFailWith(t, off, sandbox.Python3, code, map[string]any{"url": "https://api.example.com/v1"}, sandbox.KindNetwork,
		sandbox.NetworkSetting)
}

// TestDebianPackages: a Debian python3-* package on the default interpreter is importable in
// the sandbox from Debian's dist-packages, its dependencies too (python3-requests, which .ci/run
// installs). Its CA bundle (Debian points certifi at the system's) is there with the network off
// as well, so that an https call fails on the network rather than on a missing file.
func TestDebianPackages(t *testing.T) {
	t.Parallel()
	if err := exec.Command(sandbox.DefaultPython, "-c", "import requests").Run(); err != nil && os.Getenv("CI") == "" {
		t.Skip("SKIPPING: python3-requests is not installed")
	}
	code := `import certifi, charset_normalizer, idna, os, requests, urllib3
def main():
    mods = [requests, urllib3, idna, certifi, charset_normalizer]
    return {"dist": sorted({os.path.dirname(os.path.dirname(m.__file__)) for m in mods}),
            "ca": os.path.isfile(certifi.where())}
`
	want := `{"dist": ["/usr/lib/python3/dist-packages"], "ca": true}`
	for _, network := range []bool{false, true} {
		out, serr := run(t, newRunner(t, sandbox.Options{Network: network}), sandbox.Python3, code, nil)
		if serr != nil || out != want {
			t.Fatalf("network %v: %s %v; want %s", network, out, serr, want)
		}
	}
}

// TestVirtualEnvironment: Options.Python may be the python of a virtual environment kept
// anywhere (here a temporary directory, which the sandbox's own /tmp would otherwise hide): the
// sandbox mounts the environment read-only, and code imports what is installed in it. Nothing
// else of the directory around it is visible.
func TestVirtualEnvironment(t *testing.T) {
	t.Parallel()
	// Skips only where the sandbox cannot run at all; the environment's must then work.
	system := newRunner(t, sandbox.Options{})
	for _, byHand := range []bool{false, true} {
		name := "python3 -m venv"
		if byHand {
			name = "by hand"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			venv := filepath.Join(dir, "venv")
			python := makeVenv(t, venv, byHand)
			site := pyOut(t, python, "import sysconfig; print(sysconfig.get_path('purelib'))")
			if !strings.HasPrefix(site, venv+"/") {
				t.Fatalf("site-packages %s is not in the environment %s", site, venv)
			}
			if err := os.MkdirAll(site, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(site, "parley_venv_probe.py"), []byte("GREETING = 'hello from the venv'\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			secret := filepath.Join(dir, "secret.txt")
			if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := sandbox.New(context.Background(), sandbox.Options{Python: python})
			if err != nil {
				t.Fatal(err)
			}
			out, serr := run(t, r, sandbox.Python3, `import os, sys, parley_venv_probe
def main():
    return {"greeting": parley_venv_probe.GREETING, "prefix": sys.prefix,
            "from_venv": parley_venv_probe.__file__.startswith(sys.prefix + "/")}
`, nil)
			want := `{"greeting": "hello from the venv", "prefix": "` + venv + `", "from_venv": true}`
			if serr != nil || out != want {
				t.Fatalf("import from the venv: %s %v; want %s", out, serr, want)
			}
			mustFailWith(t, r, sandbox.Python3, "def main(p):\n    return {'s': open(p).read()}\n",
				map[string]any{"p": secret}, sandbox.KindRuntime, "FileNotFoundError")
			mustFailWith(t, r, sandbox.Python3, "def main(p):\n    open(p, 'w').write('x')\n    return {}\n",
				map[string]any{"p": filepath.Join(site, "evil.py")}, sandbox.KindRuntime, "Read-only file system")
			// The default interpreter does not see the environment's packages.
			mustFail(t, system, sandbox.Python3, "import parley_venv_probe\ndef main():\n    return {}\n",
				sandbox.KindRuntime, "ModuleNotFoundError")
		})
	}
}

// makeVenv creates a virtual environment of the default interpreter at dir and returns its
// python: with the venv module (without pip, which needs Debian's python3-venv), or by hand
// (bin/python3 linked to the interpreter and a pyvenv.cfg, which is all Python looks for) when
// byHand is set or the module is missing.
func makeVenv(t *testing.T, dir string, byHand bool) string {
	t.Helper()
	python := filepath.Join(dir, "bin", "python3")
	if !byHand {
		out, err := exec.Command(sandbox.DefaultPython, "-m", "venv", "--without-pip", dir).CombinedOutput()
		if err == nil {
			return python
		}
		t.Logf("python3 -m venv failed (%v: %s); making the environment by hand", err, out)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(sandbox.DefaultPython)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(python), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, python); err != nil {
		t.Fatal(err)
	}
	version := pyOut(t, sandbox.DefaultPython, "import platform; print(platform.python_version())")
	cfg := "home = " + filepath.Dir(real) + "\ninclude-system-site-packages = false\nversion = " + version + "\n"
	if err := os.WriteFile(filepath.Join(dir, "pyvenv.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return python
}

// pyOut runs a Python program on the host and returns what it printed, trimmed.
func pyOut(t *testing.T, python, program string) string {
	t.Helper()
	out, err := exec.Command(python, "-I", "-c", program).Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", python, program, err)
	}
	return strings.TrimSpace(string(out))
}

// TestStop: ending the context kills a running sandbox and returns the context's error.
func TestStop(t *testing.T) {
	t.Parallel()
	addr, accepted := listener(t)
	host, port, _ := net.SplitHostPort(addr)
	r := newRunner(t, sandbox.Options{Network: true, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-accepted: // the code is running
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	_, err := r.Run(ctx, sandbox.Request{Language: sandbox.Python3, Inputs: map[string]any{"host": host, "port": port},
		Code: "import socket, time\ndef main(host, port):\n    socket.create_connection((host, port))\n    while True:\n        time.sleep(1)\n"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestUnavailable: a machine where bubblewrap cannot create its namespaces is a configuration
// error at start-up, never an unsandboxed run.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []sandbox.Options{{Bubblewrap: fake}, {Bubblewrap: filepath.Join(dir, "missing")}, {Python: filepath.Join(dir, "python3")}} {
		_, err := sandbox.New(context.Background(), opts)
		if !errors.Is(err, sandbox.ErrUnavailable) {
			t.Fatalf("New(%+v) = %v, want ErrUnavailable", opts, err)
		}
		t.Log(err)
	}
	_, err := sandbox.New(context.Background(), sandbox.Options{Bubblewrap: fake})
	if !strings.Contains(err.Error(), "No permissions to creating new namespace") {
		t.Fatalf("the error does not say why: %v", err)
	}
}

func BenchmarkPython(b *testing.B) {
	r := newRunner(b, sandbox.Options{})
	req := sandbox.Request{Language: sandbox.Python3, Inputs: map[string]any{"a": 1, "b": 2},
		Code: "import json, re, datetime\ndef main(a, b):\n    return {'sum': a + b}\n"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJavaScript(b *testing.B) {
	r := newRunner(b, sandbox.Options{})
	req := sandbox.Request{Language: sandbox.JavaScript, Inputs: map[string]any{"a": 1, "b": 2},
		Code: "function main({a, b}) { return {sum: a + b} }"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
