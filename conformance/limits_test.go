package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// inOneMinute returns once at least need is left of the current minute, waiting for the next
// one when less is: the per-minute counts live in fixed windows (a minute starts on the
// minute), so what a test counts against one limit must happen within one window.
func inOneMinute(t *testing.T, need time.Duration) {
	t.Helper()
	now := time.Now()
	if left := now.Truncate(time.Minute).Add(time.Minute).Sub(now); left < need {
		time.Sleep(left + 50*time.Millisecond)
	}
}

// burst sends n GET /parameters at once with key to the servers (round robin) and returns how
// many got 200 and the 429 answers.
func burst(t *testing.T, ps []*Parley, key string, n int) (int, []*http.Response) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := 0
	var refused []*http.Response
	start := make(chan struct{})
	for i := range n {
		p := ps[i%len(ps)]
		wg.Go(func() {
			req, _ := newRequest("GET", p.URL+"/parameters", "", key)
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch resp.StatusCode {
			case 200:
				ok++
			case 429:
				refused = append(refused, resp)
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	close(start)
	wg.Wait()
	return ok, refused
}

// TestKeyRequestsPerMinute: a key limited to 5 requests a minute gets exactly 5 of 12 requests
// sent at once, the others 429 rate_limit_error with Retry-After and the X-RateLimit headers; a
// key of the same app without a limit is not held back.
func TestKeyRequestsPerMinute(t *testing.T) {
	p := startParley(t, "sqlite")
	key := p.CLI(t, "keys", "create", "--app", "chatbot", "--requests-per-minute", "5")
	inOneMinute(t, 10*time.Second)
	ok, refused := burst(t, []*Parley{p}, key, 12)
	if ok != 5 || len(refused) != 7 {
		t.Fatalf("%d admitted, %d refused; want 5 and 7", ok, len(refused))
	}
	status, raw := rawCall(t, p, "GET", "/parameters", "", key)
	if status != 429 || !strings.Contains(string(raw), `"code":"rate_limit_error"`) || !strings.Contains(string(raw), "This key's limit of 5 requests per minute") {
		t.Fatalf("%d %s", status, raw)
	}
	r := refused[0]
	wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
	reset, err2 := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil || err2 != nil || wait < 1 || wait > 60 || r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != "0" ||
		reset < time.Now().Unix() || reset > time.Now().Add(61*time.Second).Unix() {
		t.Fatalf("headers %v", r.Header)
	}
	if ok, refused := burst(t, []*Parley{p}, p.AppKey, 12); ok != 12 || len(refused) != 0 {
		t.Fatalf("an unlimited key: %d admitted, %d refused", ok, len(refused))
	}
	// The OpenAI-compatible operations are limited too, with OpenAI's error object.
	status, raw = rawCall(t, p, "GET", "/models", "", key)
	if status != 429 || !strings.Contains(string(raw), `"type":"rate_limit_error"`) {
		t.Fatalf("OpenAI path: %d %s", status, raw)
	}
}

// TestRequestsPerMinuteAcrossReplicas: the limit holds across two replicas on PostgreSQL and
// Redis, exactly, however the requests are spread.
func TestRequestsPerMinuteAcrossReplicas(t *testing.T) {
	r := startReplicas(t, 2, "")
	key := r.ps[0].CLI(t, "keys", "create", "--app", "chatbot", "--requests-per-minute", "6")
	inOneMinute(t, 10*time.Second)
	if ok, refused := burst(t, r.ps, key, 20); ok != 6 || len(refused) != 14 {
		t.Fatalf("%d admitted, %d refused; want 6 and 14", ok, len(refused))
	}
}

// TestDailyQuotas: a key's tokens per day stop its next run once its answers used them; an app's
// workflow runs per day (set with `parley apps limits`) stop the run past them, whatever key
// asks; and a key's workflow runs per day do the same for the key alone.
func TestDailyQuotas(t *testing.T) {
	p := startParley(t, "sqlite")
	ctx := context.Background()
	key := p.CLI(t, "keys", "create", "--app", "chatbot", "--tokens-per-day", "20")
	c := newClient(t, p, key)
	q := marker(t, "spend tokens")
	upstream.On(q, openaitest.Reply{Text: "Spent.", Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 5}})
	res, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "u", false))
	if err != nil || res.StatusCode() != 200 {
		t.Fatalf("the first run: %v %s", err, res.Body)
	}
	res, err = c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "u", false))
	if err != nil || res.StatusCode() != 429 || res.JSON429 == nil || res.JSON429.Code != "rate_limit_error" ||
		!strings.Contains(res.JSON429.Message, "tokens per day") || res.HTTPResponse.Header.Get("Retry-After") == "" {
		t.Fatalf("past the day's tokens: %v %d %s", err, res.StatusCode(), res.Body)
	}

	name := p.CLI(t, "apps", "import", "--publish", workflowExample)
	p.CLI(t, "apps", "limits", name, "--workflow-runs-per-day", "2")
	if got := p.CLI(t, "apps", "limits", name); got != "2 runs/day" {
		t.Fatalf("apps limits shows %q", got)
	}
	if _, stderr, err := p.cliOut("apps", "limits", "chatbot", "--requests-per-minute", "3"); err == nil || !strings.Contains(stderr, "set its rate_limits there") {
		t.Fatalf("a config app's limits from the CLI: %v %s", err, stderr)
	}
	keys := []string{p.CLI(t, "keys", "create", "--app", name), p.CLI(t, "keys", "create", "--app", name)}
	topic := marker(t, "tides")
	upstream.On(topic, openaitest.Reply{Text: "Tides."})
	for i, want := range []int{200, 200, 429} {
		wc := newClient(t, p, keys[i%2])
		r, err := wc.RunWorkflowWithResponse(ctx, nil, client.RunWorkflowJSONRequestBody{Inputs: map[string]any{"topic": topic}, User: "w"})
		if err != nil || r.StatusCode() != want {
			t.Fatalf("workflow run %d: %v %d %s", i+1, err, r.StatusCode(), r.Body)
		}
		if want == 429 && (r.JSON429 == nil || !strings.Contains(r.JSON429.Message, "This app's limit of 2 workflow runs per day")) {
			t.Fatalf("workflow run %d: %s", i+1, r.Body)
		}
	}
}

// TestKeyLifetimes: a key issued to expire stops working when it does (401 unauthorized); a key
// rotated without grace stops at once and its successor works; one rotated with grace works on
// beside its successor; `keys list` shows expiry, last use and limits.
func TestKeyLifetimes(t *testing.T) {
	p := startParley(t, "sqlite")
	short := p.CLI(t, "keys", "create", "--app", "chatbot", "--expires-in", "2s")
	if status, raw := rawCall(t, p, "GET", "/parameters", "", short); status != 200 {
		t.Fatalf("a fresh key: %d %s", status, raw)
	}
	time.Sleep(2100 * time.Millisecond)
	if status, raw := rawCall(t, p, "GET", "/parameters", "", short); status != 401 || !strings.Contains(string(raw), `"code":"unauthorized"`) {
		t.Fatalf("an expired key: %d %s", status, raw)
	}

	old := p.CLI(t, "keys", "create", "--app", "chatbot", "--requests-per-minute", "100", "--expires-in", "30d")
	id := keyID(t, p, old)
	successor := p.CLI(t, "keys", "rotate", id)
	if status, _ := rawCall(t, p, "GET", "/parameters", "", old); status != 401 {
		t.Fatalf("a key rotated without grace: %d", status)
	}
	if status, _ := rawCall(t, p, "GET", "/parameters", "", successor); status != 200 {
		t.Fatalf("its successor: %d", status)
	}
	next := p.CLI(t, "keys", "rotate", keyID(t, p, successor), "--grace", "1h")
	for _, k := range []string{successor, next} {
		if status, _ := rawCall(t, p, "GET", "/parameters", "", k); status != 200 {
			t.Fatalf("during the grace period: %d", status)
		}
	}
	list := p.CLI(t, "keys", "list")
	for _, want := range []string{"EXPIRES", "LIMITS", "100/min"} {
		if !strings.Contains(list, want) {
			t.Fatalf("keys list lacks %q:\n%s", want, list)
		}
	}
	if _, stderr, err := p.cliOut("keys", "create", "--app", "chatbot", "--expires-in", "soon"); err == nil || !strings.Contains(stderr, "--expires-in") {
		t.Fatalf("a bad lifetime: %v %s", err, stderr)
	}
}

// keyID is the id `keys list` shows for a key, found by its display prefix.
func keyID(t *testing.T, p *Parley, secret string) string {
	t.Helper()
	prefix := secret[:len("app-")+8]
	for _, line := range strings.Split(p.CLI(t, "keys", "list"), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[3] == prefix+"…" {
			return f[0]
		}
	}
	t.Fatalf("no key %s… in the list", prefix)
	return ""
}

// TestResumedRunTokens: a Chatflow that pauses for a form between two model calls spends the
// tokens of both against its app's tokens per day: the segment resumed after the form counts
// what it spent (not again what the first one did), so the next run is refused.
func TestResumedRunTokens(t *testing.T) {
	p := startParley(t, "sqlite")
	name := "Costed Review " + t.Name()
	key := exampleApp(t, p, "testdata/chatflow-human-input-llm.yml", "Costed Review", name)
	p.CLI(t, "apps", "limits", name, "--tokens-per-day", "30")
	draft, polish := marker(t, "draft the memo"), marker(t, "polish the memo")
	upstream.On(draft, openaitest.Reply{Text: "A draft.", Usage: &providers.Usage{PromptTokens: 8, CompletionTokens: 2}})
	upstream.On(polish, openaitest.Reply{Text: "Polished.", Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 5}})

	body, _ := json.Marshal(map[string]any{"query": draft, "inputs": map[string]any{}, "user": "rev", "response_mode": "streaming"})
	evs := hiStream(t, "POST", p.URL+"/chat-messages", string(body), key)
	var token, runID string
	for _, ev := range evs {
		if ev.name() == "human_input_required" {
			token, _ = ev.data()["form_token"].(string)
		}
		if ev.name() == "workflow_paused" {
			runID, _ = ev["workflow_run_id"].(string)
		}
	}
	if token == "" || runID == "" {
		t.Fatalf("the run did not pause: %s", hiNames(evs))
	}
	status, raw := rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"`+polish+`"},"action":"approve","user":"rev"}`, key)
	if status != 200 {
		t.Fatalf("submit: %d %s", status, raw)
	}
	evs = hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
	if last := evs[len(evs)-1]; last.name() != "workflow_finished" || last.data()["total_tokens"] != float64(35) {
		t.Fatalf("resumed stream: %s %v", hiNames(evs), last)
	}
	// 10 tokens before the form and 25 after: 35 of 30. Without the resumed segment's 25 the
	// day would stand at 10, and this run would be admitted.
	status, raw = rawCall(t, p, "POST", "/chat-messages", string(body), key)
	wantError(t, "past the day's tokens", status, raw, 429, "rate_limit_error")
}
