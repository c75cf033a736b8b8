package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"

	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// The app pages in a real browser: Debian's chromium, headless, driven with chromedp. Set
// PARLEY_UPDATE_SCREENSHOTS=1 to write the screenshots of docs/web-pages.md again.

// chromiumPath is the browser the tests drive (PARLEY_CHROMIUM names another).
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PARLEY_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no browser at %s (scripts/services.sh installs Debian's chromium): %v", path, err)
		}
		t.Skipf("no browser at %s (apt-get install chromium): %v", path, err)
	}
	return path
}

// step is a browser action that returns nothing.
type step = chromedp.Action[chromedp.Void]

// browser is the one headless chromium the page tests share, started on first use (each test
// gets its own tab) and stopped when the tests end (stopBrowser, from TestMain).
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

// stopBrowser stops the shared browser, if one was started, and removes its profile.
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// newBrowser returns the context of a new tab of the shared headless chromium (started with a
// fresh profile on first use), bounded by d; the tab closes when t ends. The flags keep the
// browser off the network it would otherwise try to reach (updates, sync, QUIC probes), on
// which a closed network makes it hang.
func newBrowser(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browser.once.Do(func() {
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Flag("headless", true),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("metrics-recording-only", true),
			chromedp.Flag("mute-audio", true),
			chromedp.Flag("hide-scrollbars", true),
			chromedp.WindowSize(1280, 860),
			// No user-data-dir: the allocator makes a fresh temporary profile and removes it.
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		browser.ctx = ctx
		browser.cancel = func() { cancelBrowser(); cancelAlloc() }
		// The first action starts the browser; the context of that call lives as long as it does.
		browser.err = chromedp.Do(ctx)
	})
	if browser.err != nil {
		t.Fatalf("start chromium: %v", browser.err)
	}
	tab, cancelTab := chromedp.NewContext(browser.ctx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tctx, cancel := context.WithTimeout(tab, d)
	t.Cleanup(cancel)
	return tctx
}

// run runs steps in the browser; a failure (or the time running out) fails t with the page's
// text, for the log.
func run(t *testing.T, ctx context.Context, what string, steps ...step) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		text, _ := chromedp.Run(sctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
	}
}

// within bounds steps: a wait that never ends fails the step, not the test's whole budget.
func within(d time.Duration, steps ...step) step {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		_, err := chromedp.Steps(steps...)(ctx, t)
		return err
	})
}

// into runs an action that returns a value and keeps the value in out.
func into[T any](a chromedp.Action[T], out *T) step {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		v, err := a(ctx, t)
		if err == nil {
			*out = v
		}
		return err
	})
}

// evalInto evaluates a JavaScript expression in the page into out.
func evalInto[T any](js string, out *T) step { return into(chromedp.Evaluate[T](js), out) }

// waitJS polls a JavaScript condition until it is true.
func waitJS(cond string) step {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond))(ctx, t)
		return err
	})
}

// screenshot writes docs/screenshots/name.png when PARLEY_UPDATE_SCREENSHOTS is set.
func screenshot(name string) step {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if os.Getenv("PARLEY_UPDATE_SCREENSHOTS") == "" {
			return nil
		}
		// Let the last frame settle (a focus ring, a transition).
		time.Sleep(200 * time.Millisecond)
		png, err := chromedp.CaptureScreenshot()(ctx, t)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join("..", "docs", "screenshots", name+".png"), png, 0o644)
	})
}

// pageBase is the server's root (its pages' base), without /v1.
func pageBase(p *Parley) string { return strings.TrimSuffix(p.URL, "/v1") }

// pageCode is the code of an app's site, from the URL `parley apps site NAME ARGS...` prints.
func pageCode(t *testing.T, p *Parley, app string, args ...string) string {
	t.Helper()
	_, code := siteCode(t, p, app, args...)
	return code
}

// lastAnswer is JavaScript for the text of the last answer on the page.
const lastAnswer = `(() => { const a = [...document.querySelectorAll(".msg.answer .content")].pop(); return a ? a.textContent : "" })()`

// answerHelpers defines lastA() and answerN(i) in the page: the last answer and the i-th.
const answerHelpers = `window.lastA = () => [...document.querySelectorAll(".msg.answer")].pop(); window.answerN = (i) => document.querySelectorAll(".msg.answer")[i]; true`

// TestPagesChat drives the chat page of the conformance `chatbot` app: the input form, a
// streamed answer, stop, the conversation after a reload, a hostile answer that must not run,
// feedback, the conversation list, and the page on a phone.
func TestPagesChat(t *testing.T) {
	if binary == "" {
		t.Skip("needs the server's CLI")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	code := pageCode(t, p, "chatbot")
	ctx := newBrowser(t, 4*time.Minute)
	page := pageBase(p) + "/chat/" + code

	q1 := marker(t, "first question")
	upstream.On(q1, openaitest.Reply{Chunks: []string{"Here ", "is ", "a ", "**table**:\n\n", "| a | b |\n|---|---|\n| 1 | 2 |\n\n", "and math $x^2$ ", "done."}, ChunkDelay: 250 * time.Millisecond})
	var text, busy string
	run(t, ctx, "open the chat page",
		chromedp.EmulateViewport(1280, 860),
		chromedp.Navigate(page),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#composer")), chromedp.WaitVisible(chromedp.CSS("select[name=tone]"))),
		waitJS(`document.querySelector(".msg.answer .content")?.textContent.includes("Hello from the conformance bot.")`),
		evalInto(answerHelpers, new(bool)),
	)
	run(t, ctx, "the form's required input",
		chromedp.SendKeys(chromedp.CSS("#query"), q1),
		chromedp.Click(chromedp.CSS("#send")),
		within(5*time.Second, waitJS(`document.querySelector("#error").textContent.includes("tone")`)),
		screenshot("chat-form"),
	)
	run(t, ctx, "fill the form and send",
		chromedp.SendKeys(chromedp.CSS("input[name=name]"), "Ada"),
		evalInto(`(() => { const s = document.querySelector("select[name=tone]"); s.value = "warm"; s.dispatchEvent(new Event("change")); return s.value })()`, new(string)),
		chromedp.Click(chromedp.CSS("#send")),
		// Streaming: part of the answer is there while the answer is still busy.
		within(20*time.Second, waitJS(lastAnswer+`.includes("Here is")`)),
		evalInto(`lastA().getAttribute("aria-busy")`, &busy),
		screenshot("chat-streaming"),
		within(20*time.Second, waitJS(`lastA().getAttribute("aria-busy") === "false"`)),
		evalInto(lastAnswer, &text),
	)
	if busy != "true" || !strings.Contains(text, "done.") {
		t.Fatalf("streamed answer: busy %q, text %q", busy, text)
	}
	var cells, maths int
	run(t, ctx, "markdown", evalInto(`lastA().querySelectorAll("td").length`, &cells), evalInto(`lastA().querySelectorAll("math").length`, &maths))
	if cells != 2 || maths != 1 {
		t.Fatalf("rendered markdown: %d cells, %d math", cells, maths)
	}
	run(t, ctx, "suggested questions after the answer", within(15*time.Second, waitJS(`document.querySelectorAll(".suggestion").length === 3`)), screenshot("chat-answer"))

	// Stop: a long answer is cut short.
	q2 := marker(t, "long question")
	chunks := make([]string, 30)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("word%d ", i)
	}
	upstream.On(q2, openaitest.Reply{Chunks: chunks, ChunkDelay: 300 * time.Millisecond})
	start := time.Now()
	run(t, ctx, "stop an answer",
		chromedp.SendKeys(chromedp.CSS("#query"), q2),
		chromedp.Click(chromedp.CSS("#send")),
		within(20*time.Second, waitJS(lastAnswer+`.includes("word1 ")`)),
		chromedp.Click(chromedp.CSS("#stop")),
		within(8*time.Second, waitJS(`lastA().getAttribute("aria-busy") === "false"`)),
		evalInto(lastAnswer, &text),
	)
	if strings.Contains(text, "word29") || time.Since(start) > 8*time.Second {
		t.Fatalf("stopped answer after %v: %q", time.Since(start), text)
	}

	// Feedback on the first answer.
	var pressed string
	run(t, ctx, "like", evalInto(`answerN(1).querySelector(".like").click(); true`, new(bool)),
		within(5*time.Second, waitJS(`answerN(1).querySelector(".like").getAttribute("aria-pressed") === "true"`)),
		evalInto(`answerN(1).querySelector(".like").getAttribute("aria-pressed")`, &pressed))

	// A reload continues the conversation: the same end user, the same messages, the list.
	var conv, conv2 string
	var users int
	run(t, ctx, "reload",
		evalInto(`localStorage.getItem("parley.conv.`+code+`")`, &conv),
		chromedp.Reload(),
		evalInto(answerHelpers, new(bool)),
		within(20*time.Second, waitJS(`document.querySelectorAll(".msg.user").length === 2`)),
		within(10*time.Second, waitJS(`document.querySelectorAll(".conv-open").length === 1`)),
		evalInto(`document.querySelectorAll(".msg.user").length`, &users),
		evalInto(`localStorage.getItem("parley.conv.`+code+`")`, &conv2),
		evalInto(`answerN(1).querySelector(".content").textContent`, &text),
	)
	if conv == "" || conv != conv2 || !strings.Contains(text, "done.") {
		t.Fatalf("after reload: conversation %q then %q, first answer %q", conv, conv2, text)
	}
	run(t, ctx, "liked after the reload", within(5*time.Second, waitJS(`answerN(1).querySelector(".like").getAttribute("aria-pressed") === "true"`)))

	// A hostile answer: nothing in it runs, no element of it keeps a handler or a script URL.
	q3 := marker(t, "hostile question")
	upstream.On(q3, openaitest.Reply{Text: "Look: <script>window.__pwned=1</script> <img src=x onerror=\"window.__pwned=1\"> " +
		"[click me](javascript:window.__pwned=1) <a href=\"javascript:window.__pwned=1\">and me</a> <iframe src=\"javascript:window.parent.__pwned=1\"></iframe> " +
		"<svg onload=\"window.__pwned=1\"></svg> <form action=\"javascript:1\"><button>go</button></form> end."})
	var pwned bool
	var bad int
	run(t, ctx, "hostile answer",
		chromedp.SendKeys(chromedp.CSS("#query"), q3),
		chromedp.Click(chromedp.CSS("#send")),
		within(20*time.Second, waitJS(lastAnswer+`.includes("end.")`)),
		chromedp.Sleep(500*time.Millisecond),
		evalInto(`lastA().querySelector(".content a").click(); true`, new(bool)),
		chromedp.Sleep(300*time.Millisecond),
		evalInto(`window.__pwned !== undefined`, &pwned),
		evalInto(`document.querySelectorAll(".msg.answer script, .msg.answer iframe, .msg.answer svg [onload], .msg.answer [onerror], .msg.answer [onload], .msg.answer form, .msg.answer a[href^='javascript' i]").length`, &bad),
	)
	if pwned || bad != 0 {
		t.Fatalf("hostile answer: pwned %v, %d hostile elements", pwned, bad)
	}
	var rel string
	run(t, ctx, "links", evalInto(`[...document.querySelectorAll(".msg.answer a[href]")].map(a => a.rel + "|" + a.target).join(",")`, &rel))
	for _, r := range strings.Split(rel, ",") {
		if r != "" && r != "noopener noreferrer nofollow|_blank" {
			t.Fatalf("answer link rel/target %q", rel)
		}
	}

	// The conversation list: rename, pin, new chat, delete.
	run(t, ctx, "rename and pin",
		evalInto(`window.prompt = () => "Renamed chat"; window.confirm = () => true; true`, new(bool)),
		chromedp.Click(chromedp.CSS(".conv .rename")),
		within(5*time.Second, waitJS(`document.querySelector(".conv-open")?.textContent === "Renamed chat"`)),
		chromedp.Click(chromedp.CSS(".conv .pin")),
		within(5*time.Second, waitJS(`document.querySelector(".conv .unpin") !== null`)),
		screenshot("chat-conversations"),
	)

	// On a phone: the sidebar folds away behind the menu button.
	var sidebarLeft float64
	run(t, ctx, "phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Sleep(300*time.Millisecond),
		evalInto(`document.getElementById("sidebar").getBoundingClientRect().right`, &sidebarLeft),
		screenshot("chat-phone"),
		chromedp.EmulateViewport(1280, 860),
	)
	if sidebarLeft > 1 {
		t.Fatalf("on a phone the sidebar shows (right edge at %v)", sidebarLeft)
	}
	run(t, ctx, "delete",
		chromedp.Click(chromedp.CSS(".conv .delete")),
		within(5*time.Second, waitJS(`document.querySelectorAll(".conv-open").length === 0 && document.querySelectorAll(".msg.user").length === 0`)),
	)
}

// TestPagesUploadAndHumanInput uploads a file on the chat page of an app that takes files, opens
// a cited chunk of a knowledge app's answer, and answers the human-input form of a paused
// Chatflow in the conversation, shown again after a reload: the run resumes and its answer
// streams in.
func TestPagesUploadAndHumanInput(t *testing.T) {
	if binary == "" {
		t.Skip("needs the server's CLI")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	ctx := newBrowser(t, 3*time.Minute)

	// Upload.
	name := "Page Files " + strings.ReplaceAll(t.Name(), "/", "-")
	doc := `app: {name: ` + name + `, mode: chat}
kind: app
version: 0.6.0
model_config:
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You read files.
  file_upload:
    enabled: true
    allowed_file_types: [image]
    allowed_file_upload_methods: [local_file]
    number_limits: 3
`
	path := filepath.Join(t.TempDir(), "app.yml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	p.CLI(t, "apps", "import", path)
	// A 1×1 PNG: the model gets it as an image part.
	file := filepath.Join(t.TempDir(), "dot.png")
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	if err := os.WriteFile(file, png, 0o600); err != nil {
		t.Fatal(err)
	}
	q := marker(t, "read the file")
	upstream.On(q, openaitest.Reply{Text: "I read it."})
	run(t, ctx, "upload a file",
		chromedp.Navigate(pageBase(p)+"/chat/"+pageCode(t, p, name)),
		within(20*time.Second, chromedp.WaitReady(chromedp.CSS("#file-input"))),
		chromedp.SetUploadFiles(chromedp.CSS("#file-input"), []string{file}, chromedp.NodeReady),
		within(10*time.Second, waitJS(`document.querySelector(".chips .chip button") !== null`)),
		screenshot("chat-upload"),
		chromedp.SendKeys(chromedp.CSS("#query"), q),
		chromedp.Click(chromedp.CSS("#send")),
		within(20*time.Second, waitJS(lastAnswer+`.includes("I read it.")`)),
	)
	seen := false
	for _, r := range upstream.Requests() {
		if strings.Contains(string(r.Body), q) && strings.Contains(string(r.Body), "data:image/png;base64,") {
			seen = true
		}
	}
	if !seen {
		t.Fatalf("the model never saw the uploaded image")
	}

	// Citations: the librarian app retrieves from the handbook; the cited chunk opens in a
	// dialog.
	kc := newClient(t, p, p.KnowledgeKey)
	indexText(t, kc, datasetByName(t, kc, "handbook"), client.CreateDocumentByTextJSONRequestBody{Name: "staff handbook", Text: handbookText,
		IndexingTechnique: ptr(client.HighQuality), ProcessRule: paragraphRule()})
	vq := marker(t, "how many days of paid vacation does every employee receive")
	upstream.On(vq, openaitest.Reply{Text: "Twenty days."})
	var chunk string
	run(t, ctx, "citations",
		chromedp.Navigate(pageBase(p)+"/chat/"+pageCode(t, p, "librarian")),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#composer"))),
		chromedp.SendKeys(chromedp.CSS("#query"), vq+"\r"),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS(".citation"))),
		chromedp.Click(chromedp.CSS(".citation")),
		within(5*time.Second, chromedp.WaitVisible(chromedp.CSS("#citation-panel .chunk"))),
		into(chromedp.Text(chromedp.CSS("#citation-panel .chunk")), &chunk),
		screenshot("chat-citation"),
		chromedp.KeyEvent(kb.Escape),
		within(5*time.Second, waitJS(`!document.querySelector("#citation-panel").open`)),
	)
	if !strings.Contains(chunk, "twenty days of paid vacation") {
		t.Fatalf("cited chunk %q", chunk)
	}

	// A paused Chatflow's form, answered in the conversation.
	flow := "Page Review " + strings.ReplaceAll(t.Name(), "/", "-")
	exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", flow)
	topic := marker(t, "the page post")
	run(t, ctx, "human input",
		chromedp.Navigate(pageBase(p)+"/chat/"+pageCode(t, p, flow)),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#composer"))),
		chromedp.SendKeys(chromedp.CSS("#query"), topic),
		chromedp.Click(chromedp.CSS("#send")),
		within(30*time.Second, chromedp.WaitVisible(chromedp.CSS(".hi-form textarea, .hi-form input"))),
		within(5*time.Second, waitJS(lastAnswer+`.includes("Draft for")`)),
		// A reload shows the waiting form again.
		chromedp.Reload(),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS(".hi-form [name=comment]"))),
		chromedp.SendKeys(chromedp.CSS(".hi-form [name=comment]"), "looks good"),
		screenshot("chat-human-input"),
		chromedp.Click(chromedp.CSS(".hi-form button[data-action=approve]")),
		within(30*time.Second, waitJS(lastAnswer+`.includes("Approved: looks good")`)),
	)
}

// TestPagesWorkflow runs the Workflow example on its page (the form, the nodes' progress and
// the outputs) and the Completion app on its page.
func TestPagesWorkflow(t *testing.T) {
	if binary == "" {
		t.Skip("needs the server's CLI")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	ctx := newBrowser(t, 2*time.Minute)
	name := "Page Topic " + strings.ReplaceAll(t.Name(), "/", "-")
	exampleApp(t, p, "../docs/examples/workflow-basic.yml", "Topic Writer", name)
	topic := marker(t, "otters")
	upstream.On(topic, openaitest.Reply{Chunks: []string{"Otters ", "hold hands."}, ChunkDelay: 100 * time.Millisecond})
	var nodes int
	var out string
	run(t, ctx, "run the workflow",
		chromedp.Navigate(pageBase(p)+"/workflow/"+pageCode(t, p, name)),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("input[name=topic]"))),
		chromedp.SendKeys(chromedp.CSS("input[name=topic]"), topic),
		chromedp.Click(chromedp.CSS("#run")),
		within(30*time.Second, waitJS(`document.querySelector("#run-status").textContent === "Done"`)),
		evalInto(`document.querySelectorAll("#nodes .node.succeeded").length`, &nodes),
		evalInto(`document.querySelector("#outputs").textContent`, &out),
		screenshot("workflow"),
	)
	if nodes != 4 || !strings.Contains(out, "Otters hold hands.") {
		t.Fatalf("workflow page: %d nodes succeeded, outputs %q", nodes, out)
	}

	// The Completion app `writer`: its form, then the streamed result.
	to := marker(t, "Grace")
	upstream.On(to, openaitest.Reply{Chunks: []string{"Dear Grace, ", "*thank you*."}, ChunkDelay: 100 * time.Millisecond})
	var html string
	run(t, ctx, "completion page",
		chromedp.Navigate(pageBase(p)+"/completion/"+pageCode(t, p, "writer")),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("input[name=name]"))),
		chromedp.SendKeys(chromedp.CSS("input[name=name]"), to),
		evalInto(`(() => { const s = document.querySelector("select[name=tone]"); s.value = "warm"; return s.value })()`, new(string)),
		chromedp.Click(chromedp.CSS("#run")),
		within(20*time.Second, waitJS(`document.querySelector("#result").getAttribute("aria-busy") === "false" && document.querySelector("#result").textContent.includes("thank you")`)),
		evalInto(`document.querySelector("#result").innerHTML`, &html),
		screenshot("completion"),
	)
	if !strings.Contains(html, "<em>thank you</em>") {
		t.Fatalf("completion result %s", html)
	}
}

// TestPagesEmbed embeds the chat bubble in a page of another origin with Dify's
// difyChatbotConfig (inputs travel compressed in the iframe's URL) and chats through it; a page
// of an origin the site does not list cannot frame the chatbot; the iframe variant works; a
// site with a passcode asks for it.
func TestPagesEmbed(t *testing.T) {
	if binary == "" {
		t.Skip("needs the server's CLI")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	ctx := newBrowser(t, 2*time.Minute)
	base := pageBase(p)

	host := func(body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var allowedSrv *httptest.Server
	allowedSrv = host("")
	allowedOrigin := allowedSrv.URL
	code := pageCode(t, p, "chatbot", "--allow-origin", allowedOrigin)
	allowedSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Shop</title></head><body><h1>A shop</h1>
<script>
window.__ready = 0;
window.addEventListener("message", (e) => { if (e.data && e.data.type === "dify-chatbot-iframe-ready") window.__ready++; });
window.difyChatbotConfig = { token: %q, baseUrl: %q, inputs: { name: "Bob", tone: "dry" }, systemVariables: { user_id: "shop-42" } };
</script>
<script src="%s/embed.min.js" id="%s" defer></script>
</body></html>`, code, base, base, code)
	})
	q := marker(t, "bubble question")
	upstream.On(q, openaitest.Reply{Text: "Hello through the bubble."})
	var iframes []*chromedp.Node
	var src chromedp.AttributeResult
	var text string
	run(t, ctx, "open the bubble",
		chromedp.Navigate(allowedOrigin+"/"),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#dify-chatbot-bubble-button"))),
		chromedp.Click(chromedp.CSS("#dify-chatbot-bubble-button")),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#dify-chatbot-bubble-window"))),
		within(20*time.Second, waitJS(`window.__ready > 0`)),
		into(chromedp.AttributeValue(chromedp.CSS("#dify-chatbot-bubble-window"), "src"), &src),
		into(chromedp.Nodes(chromedp.CSS("#dify-chatbot-bubble-window")), &iframes),
	)
	if src := src.Value; !strings.HasPrefix(src, base+"/chatbot/"+code+"?") || !strings.Contains(src, "name=H4sI") || !strings.Contains(src, "sys.user_id=") {
		t.Fatalf("iframe src %s", src)
	}
	in := chromedp.FromNode(iframes[0])
	run(t, ctx, "chat in the bubble",
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#query"), in)),
		screenshot("bubble"),
		chromedp.SendKeys(chromedp.CSS("#query"), q, in),
		chromedp.Click(chromedp.CSS("#send"), in),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS(".msg.answer .actions .like"), in)),
		into(chromedp.Text(chromedp.CSS(".messages"), in), &text),
		screenshot("bubble-answer"),
	)
	if !strings.Contains(text, "Hello through the bubble.") {
		t.Fatalf("bubble conversation: %q", text)
	}

	// Another origin cannot frame it: its frame never loads the page.
	other := host(fmt.Sprintf(`<!doctype html><html><body>
<script>window.__ready = 0; window.addEventListener("message", (e) => { if (e.data && e.data.type === "dify-chatbot-iframe-ready") window.__ready++; });</script>
<iframe id="f" src="%s/chatbot/%s" title="chatbot"></iframe></body></html>`, base, code))
	var ready int
	run(t, ctx, "refused origin",
		chromedp.Navigate(other.URL+"/"),
		chromedp.Sleep(3*time.Second),
		evalInto(`window.__ready`, &ready),
	)
	if ready != 0 {
		t.Fatalf("a page of %s framed the chatbot", other.URL)
	}
	// A script of that origin may still call the Service API with an app key, as Dify's allows
	// (a preflight, then the call), and read the headers Parley exposes.
	var api string
	var started float64
	run(t, ctx, "cross-origin API call",
		evalInto(fmt.Sprintf(`window.__api = null; fetch(%q, {headers: {Authorization: "Bearer %s"}})
  .then(r => { window.__api = r.status + " " + (r.headers.get("X-Version") ? "version" : "hidden"); }, e => { window.__api = "failed: " + e; }); 0`,
			p.URL+"/parameters", p.AppKey), &started),
		within(20*time.Second, waitJS(`window.__api !== null`)),
		evalInto(`window.__api`, &api),
	)
	if api != "200 version" {
		t.Fatalf("a cross-origin call of the Service API: %s", api)
	}
	// The iframe variant on the allowed origin works too.
	allowedSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body>
<script>window.__ready = 0; window.addEventListener("message", (e) => { if (e.data && e.data.type === "dify-chatbot-iframe-ready") window.__ready++; });</script>
<iframe id="f" src="%s/chatbot/%s" title="chatbot" style="width:400px;height:600px"></iframe></body></html>`, base, code)
	})
	run(t, ctx, "iframe variant", chromedp.Navigate(allowedOrigin+"/iframe"), within(20*time.Second, waitJS(`window.__ready > 0`)))

	// A site with a passcode asks for it before anything else; a wrong one is refused.
	locked := pageCode(t, p, "limited", "--passcode", "open sesame")
	run(t, ctx, "passcode",
		chromedp.Navigate(base+"/chat/"+locked),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#passcode"))),
		screenshot("passcode"),
		chromedp.SendKeys(chromedp.CSS("#passcode"), "guess\r"),
		within(10*time.Second, waitJS(`document.querySelector(".passcode .error")?.textContent.includes("not right")`)),
		chromedp.SendKeys(chromedp.CSS("#passcode"), "open sesame\r"),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#composer"))),
	)
}

// TestPagesAgentAndSpeech shows an Agent app's steps collapsed in its answer, and reads an
// answer aloud on the page of an app with text to speech (which also offers speech to text).
func TestPagesAgentAndSpeech(t *testing.T) {
	if binary == "" {
		t.Skip("needs the server's CLI")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	ctx := newBrowser(t, 2*time.Minute)

	path := filepath.Join(t.TempDir(), "agent.yml")
	if err := os.WriteFile(path, []byte(importedAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSpace(p.CLI(t, "apps", "import", path))
	q := marker(t, "what is six times seven")
	upstream.OnEach(q, openaitest.Reply{
		ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"6*7"}`}},
	}, openaitest.Reply{Chunks: []string{"It is ", "42."}})
	var steps int
	var open bool
	var summary string
	run(t, ctx, "agent steps",
		chromedp.Navigate(pageBase(p)+"/chat/"+pageCode(t, p, name)),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("input[name=who]"))),
		chromedp.SendKeys(chromedp.CSS("input[name=who]"), "Ada"),
		chromedp.SendKeys(chromedp.CSS("#query"), q+"\r"),
		within(20*time.Second, waitJS(lastAnswer+`.includes("It is 42.") && document.querySelectorAll(".msg.answer .actions .like").length > 0`)),
		evalInto(`document.querySelectorAll(".msg.answer details.thought").length`, &steps),
		evalInto(`[...document.querySelectorAll(".msg.answer details.thought")].some(d => d.open)`, &open),
		evalInto(`[...document.querySelectorAll(".msg.answer details.thought summary")].map(s => s.textContent).join("|")`, &summary),
		screenshot("chat-agent"),
	)
	if steps == 0 || open || !strings.Contains(summary, "eval_expression") {
		t.Fatalf("agent steps: %d (open %v): %s", steps, open, summary)
	}

	// Text to speech: the play button asks the server to read the answer (beside the speech
	// the app streams with the answer, as it plays them automatically).
	sq := marker(t, "say something")
	upstream.On(sq, openaitest.Reply{Text: "Something to hear."})
	spoken := func() int {
		n := 0
		for _, r := range upstream.Requests() {
			if strings.HasSuffix(r.Path, "/audio/speech") && strings.Contains(string(r.Body), "Something to hear.") {
				n++
			}
		}
		return n
	}
	run(t, ctx, "speech",
		chromedp.Navigate(pageBase(p)+"/chat/"+pageCode(t, p, "speaker")),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS("#composer .mic"))),
		chromedp.SendKeys(chromedp.CSS("#query"), sq+"\r"),
		within(20*time.Second, chromedp.WaitVisible(chromedp.CSS(".msg.answer .speak"))),
		chromedp.Sleep(time.Second),
	)
	before := spoken()
	run(t, ctx, "play", chromedp.Click(chromedp.CSS(".msg.answer .speak")))
	for deadline := time.Now().Add(10 * time.Second); spoken() == before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the play button never asked for the answer's speech")
		}
	}
}
