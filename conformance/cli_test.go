package conformance

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestCLI runs the administration commands against a fresh database on each engine.
func TestCLI(t *testing.T) {
	if binary == "" {
		t.Skip("needs the locally built binary")
	}
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		p := &Parley{engine: e, env: cliEnv(e)}
		for range 2 { // migrate is idempotent
			p.CLI(t, "migrate")
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"keys", "create"}, "exactly one of --app NAME or --knowledge"},
			{[]string{"keys", "create", "--app", "chatbot", "--knowledge"}, "exactly one of"},
			{[]string{"keys", "create", "--app", "nope"}, `no app named "nope"`},
			{[]string{"keys", "revoke", "7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"}, "no active key"},
			{[]string{"serve", "--addr", "not-an-address"}, "PARLEY_ADDR"},
		} {
			out, err := p.run(tc.args...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("parley %s: err %v, output %q; want failure mentioning %q", strings.Join(tc.args, " "), err, out, tc.want)
			}
		}
		app := p.CLI(t, "keys", "create", "--app", "chatbot")
		kb := p.CLI(t, "keys", "create", "--knowledge")
		if !strings.HasPrefix(app, "app-") || !strings.HasPrefix(kb, "dataset-") || strings.ContainsAny(app+kb, " \n") {
			t.Fatalf("keys create printed %q and %q; want only the key", app, kb)
		}
		list := p.CLI(t, "keys", "list")
		if strings.Contains(list, app) || strings.Contains(list, kb) {
			t.Fatal("keys list shows a secret")
		}
		if !strings.Contains(list, "chatbot") || strings.Count(list, "\n") != 2 {
			t.Fatalf("keys list:\n%s", list)
		}
	})
}

func cliEnv(e storetest.Engine) []string {
	return []string{
		"PARLEY_DATA_DIR=" + e.DataDir,
		"PARLEY_DATABASE_URL=" + e.DatabaseURL,
		"PARLEY_CONFIG=testdata/parley.yaml",
		"CONFORMANCE_OPENAI_KEY=sk-conformance",
	}
}

// run runs the binary and returns its combined output and error.
func (p *Parley) run(args ...string) (string, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = p.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestCLIOutput: what a command produces is on stdout alone (scripts capture it), everything
// else on stderr: an import prints the app's name and says that a Chatflow refuses runs until
// published, publish prints the new version's id, an unknown app is reported with the config
// file read and the apps known, an unresolvable model suggests --model-fallback, and debug logs
// never reach stdout.
func TestCLIOutput(t *testing.T) {
	if binary == "" {
		t.Skip("needs the locally built binary")
	}
	p := &Parley{engine: storetest.NewEngine(t, storetest.SQLite)}
	p.env = append(cliEnv(p.engine), "PARLEY_LOG_LEVEL=debug")
	flow := filepath.Join("..", "docs", "examples", "chatflow-basic.yml")

	stdout, stderr, err := p.cliOut("apps", "import", flow)
	if err != nil || stdout != "Turn Counter\n" {
		t.Fatalf("import: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, `"Turn Counter" is not published: it refuses runs until it is (parley apps publish 'Turn Counter')`) {
		t.Errorf("import without --publish says nothing of publishing:\n%s", stderr)
	}
	stdout, stderr, err = p.cliOut("apps", "publish", "Turn Counter")
	if id, perr := uuid.Parse(strings.TrimSuffix(stdout, "\n")); err != nil || perr != nil || stdout != id.String()+"\n" {
		t.Fatalf("publish printed %q on stdout (%v); want the version id alone\nstderr %s", stdout, err, stderr)
	}
	if !strings.Contains(stderr, `published "Turn Counter" version 1 (`+strings.TrimSpace(stdout)+`)`) {
		t.Errorf("publish stderr: %s", stderr)
	}
	stdout, stderr, err = p.cliOut("apps", "import", "--name", "Second Counter", "--publish", flow)
	if err != nil || stdout != "Second Counter\n" || strings.Contains(stderr, "not published") || !strings.Contains(stderr, "version 1") {
		t.Errorf("import --publish: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}

	for _, args := range [][]string{{"apps", "publish", "Turn Countr"}, {"apps", "export", "Turn Countr"}, {"keys", "create", "--app", "Turn Countr"}} {
		stdout, stderr, err := p.cliOut(args...)
		if err == nil || stdout != "" || !strings.Contains(stderr, `no app named "Turn Countr" in the config file (testdata/parley.yaml)`) ||
			!strings.Contains(stderr, "chatbot (chat)") || !strings.Contains(stderr, "Turn Counter (advanced-chat)") {
			t.Errorf("parley %s: %v\nstdout %q\nstderr %s", strings.Join(args, " "), err, stdout, stderr)
		}
	}

	data, err := os.ReadFile(flow)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing-model.yml")
	if err := os.WriteFile(missing, bytes.Replace(data, []byte("name: gpt-4o-mini"), []byte("name: gpt-nowhere"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err = p.cliOut("apps", "import", "--name", "Nowhere", missing)
	if err == nil || stdout != "" || !strings.Contains(stderr, `model "gpt-nowhere" is not configured`) || !strings.Contains(stderr, "--model-fallback PROVIDER:MODEL") {
		t.Errorf("unresolvable model: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}
	stdout, stderr, err = p.cliOut("apps", "import", "--name", "Nowhere", "--model-fallback", "openai:gpt-4o-mini", missing)
	if err != nil || stdout != "Nowhere\n" || !strings.Contains(stderr, "substituted") {
		t.Errorf("with a fallback: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}

	stdout, stderr, err = p.cliOut("keys", "create", "--knowledge")
	if err != nil || !strings.HasPrefix(stdout, "dataset-") || strings.Count(stdout, "\n") != 1 || !strings.Contains(stderr, "key created") {
		t.Errorf("keys create with debug logs: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}
}

// TestStartupBanner: a starting server says where it listens, which apps it serves (name and
// mode) and how to make a key for one; the replica's internals stay at debug level.
func TestStartupBanner(t *testing.T) {
	if binary == "" {
		t.Skip("needs the server's logs")
	}
	p := startParley(t, storetest.SQLite)
	logs := p.logs.String()
	var listening, serving map[string]any
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec["msg"] {
		case "listening":
			listening = rec
		case "serving apps":
			serving = rec
		}
	}
	if listening == nil || serving == nil {
		t.Fatalf("no listening or serving line:\n%s", logs)
	}
	for _, internal := range []string{"jobs_owner", "shared_coordination", "response_validation"} {
		if _, ok := listening[internal]; ok || strings.Contains(logs, `"`+internal+`"`) {
			t.Errorf("%s is logged at info level:\n%s", internal, logs)
		}
	}
	if listening["version"] == "" || listening["url"] != p.URL {
		t.Errorf("listening: %v", listening)
	}
	apps, _ := serving["apps"].(string)
	for _, want := range []string{"chatbot (chat)", "writer (completion)", "limited (chat)"} {
		if !strings.Contains(apps, want) {
			t.Errorf("serving apps %q lacks %q", apps, want)
		}
	}
	if key, _ := serving["key"].(string); !strings.HasPrefix(key, "parley keys create --app ") {
		t.Errorf("serving apps: key hint %q", serving["key"])
	}
}

// TestDebugListener: with PARLEY_DEBUG_ADDR the server serves Go's profiles there, and only
// there: the API's listener knows nothing of them.
func TestDebugListener(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	t.Parallel()
	addr := freeAddr(t)
	p := newParley(storetest.NewEngine(t, storetest.SQLite), "PARLEY_DEBUG_ADDR="+addr)
	p.Start(t)
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(string(body), "heap profile") {
		t.Errorf("heap profile: %d %.200s", resp.StatusCode, body)
	}
	api := strings.TrimSuffix(p.URL, "/v1")
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/v1/debug/pprof/"} {
		resp, err := http.Get(api + path)
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, "the API listener's "+path, resp, readAll(t, resp), 404, "not_found")
	}
	if !strings.Contains(p.logs.String(), `"msg":"debug listener","url":"http://`+addr+`/debug/pprof/"`) {
		t.Errorf("the debug listener is not in the log:\n%s", p.logs.String())
	}
}
