package conformance

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestREADMEQuickstart runs the README's quickstart as a new user would: the shell blocks of each
// section marked `<!-- quickstart: NAME -->` are taken from the README itself and run in order by
// bash, in an empty directory holding only the built binary as bin/parley and the repository's
// docs/, against a fake OpenAI-compatible upstream that takes the README's own placeholder key.
// Only the address changes (the server listens on a free port instead of 5001), and `make build`
// is the binary the suite built. The README therefore cannot drift from what works.
func TestREADMEQuickstart(t *testing.T) {
	if binary == "" {
		t.Skip("needs the locally built binary")
	}
	sections := quickstartSections(t)
	for _, name := range []string{"chat", "chatflow"} {
		if strings.TrimSpace(sections[name]) == "" {
			t.Fatalf("the README has no quickstart section %q", name)
		}
	}

	// The README exports OPENAI_API_KEY=sk-... : the fake upstream takes exactly that key.
	up := openaitest.NewServer(openaitest.WithAPIKey("sk-..."))
	t.Cleanup(up.Close)
	up.On("What can you do?", openaitest.Reply{Text: "I answer questions about anything."})
	up.On("Say it shorter.", openaitest.Reply{Text: "I answer questions."})

	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary, filepath.Join(dir, "bin", "parley")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "docs"), filepath.Join(dir, "docs")); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	// The server listens where the script is told it does.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8", "OPENAI_BASE_URL=" + up.URL(), "PARLEY_ADDR=" + addr}

	run := func(name string) string {
		t.Helper()
		script := "set -euo pipefail\n" +
			// The suite built the binary already; any other make is not part of the quickstart.
			"make() { [ \"$*\" = build ] || { echo \"unexpected: make $*\" >&2; return 1; }; }\n" +
			strings.ReplaceAll(sections[name], "127.0.0.1:5001", addr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		// Its own process group, so that a server the script left behind is found and ended.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		leftover := syscall.Kill(-cmd.Process.Pid, 0) == nil
		if leftover {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "parley.log"))
		if err != nil {
			t.Fatalf("quickstart %q: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s\nparley.log:\n%s", name, err, script, out.String(), errOut.String(), log)
		}
		// kill $PARLEY ends the server: it shuts down and its port is free again.
		eventually(t, "the server stopped by the quickstart", func() (bool, any) {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				return false, "still listening"
			}
			return true, nil
		})
		if !strings.Contains(string(log), "stopped") {
			t.Errorf("quickstart %q: the server did not shut down cleanly:\n%s", name, log)
		}
		return out.String()
	}

	out := run("chat")
	for _, want := range []string{
		`"event":"message"`, `"event":"message_end"`, // the streamed answer
		"I answer questions.\n", // the continued conversation's blocking answer
		"What can you do? -> I answer questions about anything.\nSay it shorter. -> I answer questions.\n",
		"204\n", // the deletion
	} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart chat: output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^[0-9a-f-]{36} \S`).MatchString(out) {
		t.Errorf("quickstart chat: no conversation listed:\n%s", out)
	}

	out = run("chatflow")
	paused, _ := os.ReadFile(filepath.Join(dir, "paused.sse"))
	for what, check := range map[string]bool{
		"the Chatflow's stream":      strings.Contains(out, `"event":"workflow_started"`) && strings.Count(out, `"event":"workflow_finished"`) == 2,
		"the paused stream":          strings.Contains(string(paused), `"event":"human_input_required"`) && strings.Contains(string(paused), `"event":"workflow_paused"`),
		"the form":                   strings.Contains(out, `"Please review the draft for the launch post.`) && strings.Contains(out, `"approve",`),
		"the resumed run's events":   strings.Contains(out, `"answer":"Approved: Ship it."`) || strings.Contains(out, "Ship it."),
		"the answer of Turn Counter": strings.Contains(out, `"event":"message_end"`),
	} {
		if !check {
			t.Errorf("quickstart chatflow: %s is not in the output:\n%s\npaused.sse:\n%s", what, out, paused)
		}
	}
}

// quickstartSections maps each quickstart section of the README to its shell blocks, joined in
// order.
func quickstartSections(t *testing.T) map[string]string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := regexp.MustCompile(`(?m)^<!-- quickstart: ([a-z-]+)[^>]*-->$`)
	block := regexp.MustCompile("(?ms)^```sh\n(.*?)^```$")
	out := map[string]string{}
	text := string(raw)
	for _, m := range start.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		rest := text[m[1]:]
		end := strings.Index(rest, "<!-- /quickstart -->")
		if end < 0 {
			t.Fatalf("README: quickstart %q is not closed", name)
		}
		var b strings.Builder
		for _, c := range block.FindAllStringSubmatch(rest[:end], -1) {
			b.WriteString(c[1])
		}
		if _, dup := out[name]; dup {
			t.Fatalf("README: quickstart %q twice", name)
		}
		out[name] = b.String()
	}
	return out
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr())
}

// TestDocsIndex: docs/README.md links every page of docs/ and every example, and every link of
// the README and the docs index leads to a file that exists.
func TestDocsIndex(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..")
	index, err := os.ReadFile(filepath.Join(repo, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	examples, _ := filepath.Glob(filepath.Join(repo, "docs", "examples", "*"))
	for _, f := range append(pages, examples...) {
		rel, _ := filepath.Rel(filepath.Join(repo, "docs"), f)
		if rel != "README.md" && !strings.Contains(string(index), "]("+filepath.ToSlash(rel)+")") {
			t.Errorf("docs/README.md does not link %s", rel)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, doc := range []string{"README.md", filepath.Join("docs", "README.md")} {
		raw, err := os.ReadFile(filepath.Join(repo, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			if _, err := os.Stat(filepath.Join(repo, filepath.Dir(doc), m[1])); err != nil {
				t.Errorf("%s links %s, which does not exist", doc, m[1])
			}
		}
	}
}
