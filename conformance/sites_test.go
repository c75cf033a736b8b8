package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
)

// sitePageURL matches what `parley apps site` prints: the page's full URL.
var sitePageURL = regexp.MustCompile(`^https?://[^/]+/(chat|completion|workflow)/([0-9A-Za-z]{16})$`)

// siteCode runs `parley apps site NAME ARGS...` and returns the page's kind and code.
func siteCode(t *testing.T, p *Parley, name string, args ...string) (kind, code string) {
	t.Helper()
	out := p.CLI(t, append([]string{"apps", "site", name}, args...)...)
	m := sitePageURL.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("parley apps site %s printed %q, not a page URL alone", name, out)
	}
	return m[1], m[2]
}

// passportCall is GET /passport with the code, passcode and previous passport given ("" for
// none); it returns the status and the body.
func passportCall(t *testing.T, p *Parley, code, passcode, previous string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.URL+"/passport", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code != "" {
		req.Header.Set("X-App-Code", code)
	}
	if passcode != "" {
		req.Header.Set("X-Site-Passcode", passcode)
	}
	if previous != "" {
		req.Header.Set("Authorization", "Bearer "+previous)
	}
	resp, raw := rawDo(t, req)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET /passport: %d %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, body
}

// passport gets a passport of the site (new end user unless previous is given) and its end user.
func passport(t *testing.T, p *Parley, code, previous string) (token, endUser string) {
	t.Helper()
	status, body := passportCall(t, p, code, "", previous)
	token, _ = body["access_token"].(string)
	endUser, _ = body["end_user_id"].(string)
	if status != http.StatusOK || !strings.HasPrefix(token, "pp-") || endUser == "" {
		t.Fatalf("GET /passport: %d %v", status, body)
	}
	return token, endUser
}

// conversationIDs lists the conversations key (an app key or a passport) sees, as user.
func conversationIDs(t *testing.T, p *Parley, key, query string) []string {
	t.Helper()
	status, raw := rawCall(t, p, "GET", "/conversations"+query, "", key)
	if status != http.StatusOK {
		t.Fatalf("GET /conversations%s: %d %s", query, status, raw)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, c := range list.Data {
		ids = append(ids, c.ID)
	}
	return ids
}

// chatAs sends a blocking chat message with key as user and returns its conversation.
func chatAs(t *testing.T, p *Parley, key, user, query string) string {
	t.Helper()
	body, _ := json.Marshal(chatBody(query, user, false))
	status, raw := rawCall(t, p, "POST", "/chat-messages", string(body), key)
	if status != http.StatusOK {
		t.Fatalf("POST /chat-messages: %d %s", status, raw)
	}
	var out struct {
		ConversationID string `json:"conversation_id"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.ConversationID == "" {
		t.Fatalf("%s %v", raw, err)
	}
	return out.ConversationID
}

// TestSitePassport: `parley apps site` prints the page's URL by the app's kind; GET /passport
// gives a passport for the site code (404 for an unknown code, 400 without one); the passport
// reaches the page's operations (a streamed chat with the Go client and with raw HTTP, /site
// with the app's settings) and nothing else; a previous passport keeps the end user.
func TestSitePassport(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		kind, code := siteCode(t, p, "chatbot")
		if kind != "chat" {
			t.Fatalf("the chatbot's page is /%s/", kind)
		}
		if again, code2 := siteCode(t, p, "chatbot"); again != kind || code2 != code {
			t.Fatalf("a second call printed another URL: %s/%s", again, code2)
		}
		if kind, _ := siteCode(t, p, "writer"); kind != "completion" {
			t.Fatalf("the Completion app's page is /%s/", kind)
		}
		if status, body := passportCall(t, p, "NoSuchCode000000", "", ""); status != 404 || body["code"] != "not_found" {
			t.Fatalf("an unknown code: %d %v", status, body)
		}
		if status, body := passportCall(t, p, "", "", ""); status != 400 {
			t.Fatalf("no code: %d %v", status, body)
		}
		token, endUser := passport(t, p, code, "")

		// The Go client with the passport as its bearer: a streamed chat.
		c := newClient(t, p, token)
		mark := marker(t, "site chat")
		evs := streamEvents(t, c, chatBody(mark, "whoever-the-page-says", true))
		if len(evs) == 0 || eventName(t, evs[len(evs)-1]) != "message_end" {
			t.Fatalf("stream: %d events", len(evs))
		}
		// Raw HTTP, streamed.
		body, _ := json.Marshal(chatBody(mark+" again", "someone", true))
		req, _ := newRequest("POST", p.URL+"/chat-messages", string(body), token)
		resp, raw := rawDo(t, req)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
			!strings.Contains(string(raw), "event: message_end") && !strings.Contains(string(raw), `"event":"message_end"`) {
			t.Fatalf("raw stream: %d %s", resp.StatusCode, raw)
		}
		convs := conversationIDs(t, p, token, "")
		if len(convs) != 2 {
			t.Fatalf("the passport's conversations: %v", convs)
		}
		// The page's other reads.
		for _, path := range []string{"/parameters", "/meta", "/info", "/site"} {
			if status, raw := rawCall(t, p, "GET", path, "", token); status != 200 {
				t.Fatalf("GET %s: %d %s", path, status, raw)
			}
		}
		site, err := c.GetSiteWithResponse(context.Background(), nil)
		if err != nil || site.JSON200 == nil || site.JSON200.Title != "chatbot" || site.JSON200.DefaultLanguage != "en-US" {
			t.Fatalf("GET /site: %v %s", err, site.Body)
		}
		if strings.Contains(string(site.Body), "passcode") {
			t.Fatalf("GET /site shows a passcode: %s", site.Body)
		}
		// Nothing else takes a passport.
		for _, path := range []string{"/apps/annotations", "/datasets", "/app/feedbacks", "/workflows/logs"} {
			status, raw := rawCall(t, p, "GET", path, "", token)
			if status != 401 || !strings.Contains(string(raw), `"code":"unauthorized"`) {
				t.Fatalf("GET %s with a passport: %d %s", path, status, raw)
			}
		}
		// A forged passport.
		forged := token[:len(token)-4] + "AAAA"
		if status, _ := rawCall(t, p, "GET", "/parameters", "", forged); status != 401 {
			t.Fatalf("a forged passport: %d", status)
		}
		// The previous passport keeps the end user and its conversations.
		again, sameUser := passport(t, p, code, token)
		if sameUser != endUser || again == "" {
			t.Fatalf("a passport given the previous one: end user %s, want %s", sameUser, endUser)
		}
		if got := conversationIDs(t, p, again, ""); len(got) != 2 {
			t.Fatalf("the renewed passport's conversations: %v", got)
		}
		// Without it, a new end user.
		if _, other := passport(t, p, code, ""); other == endUser {
			t.Fatal("a new passport without the previous one kept its end user")
		}
	})
}

// TestSitePassportIsolation: a passport acts for its own end user whatever `user` the request
// gives, so a page cannot read, rename, pin or delete another end user's conversations; pin and
// unpin work per end user, with a passport and with an app key.
func TestSitePassportIsolation(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		_, code := siteCode(t, p, "chatbot")
		a, _ := passport(t, p, code, "")
		b, _ := passport(t, p, code, "")
		convA := chatAs(t, p, a, "bob", marker(t, "from A"))
		convBob := chatAs(t, p, p.AppKey, "bob", marker(t, "from bob"))

		if got := conversationIDs(t, p, a, "?user=bob"); len(got) != 1 || got[0] != convA {
			t.Fatalf("A asking as bob sees %v, want only its own %s", got, convA)
		}
		if got := conversationIDs(t, p, p.AppKey, "?user=bob"); len(got) != 1 || got[0] != convBob {
			t.Fatalf("bob sees %v, want only %s", got, convBob)
		}
		if got := conversationIDs(t, p, b, "?user=bob"); len(got) != 0 {
			t.Fatalf("B sees %v", got)
		}
		for _, tc := range []struct{ method, path, body string }{
			{"GET", "/messages?user=bob&conversation_id=" + convBob, ""},
			{"GET", "/messages?conversation_id=" + convA, ""},
			{"POST", "/conversations/" + convA + "/name", `{"name":"x","user":"bob"}`},
			{"PATCH", "/conversations/" + convA + "/pin?user=bob", ""},
			{"DELETE", "/conversations/" + convBob, `{"user":"bob"}`},
		} {
			status, raw := rawCall(t, p, tc.method, tc.path, tc.body, b)
			if status != 404 {
				t.Fatalf("B: %s %s: %d %s", tc.method, tc.path, status, raw)
			}
		}
		if status, raw := rawCall(t, p, "GET", "/messages?user=bob&conversation_id="+convA, "", a); status != 200 {
			t.Fatalf("A reads its conversation: %d %s", status, raw)
		}

		// Pinning.
		if status, raw := rawCall(t, p, "PATCH", "/conversations/"+convA+"/pin", "", a); status != 200 || !strings.Contains(string(raw), `"result":"success"`) {
			t.Fatalf("pin: %d %s", status, raw)
		}
		convA2 := chatAs(t, p, a, "anything", marker(t, "second"))
		if got := conversationIDs(t, p, a, "?pinned=true"); len(got) != 1 || got[0] != convA {
			t.Fatalf("pinned: %v", got)
		}
		if got := conversationIDs(t, p, a, "?pinned=false"); len(got) != 1 || got[0] != convA2 {
			t.Fatalf("not pinned: %v", got)
		}
		if got := conversationIDs(t, p, a, ""); len(got) != 2 {
			t.Fatalf("all: %v", got)
		}
		if status, raw := rawCall(t, p, "PATCH", "/conversations/"+convA+"/unpin", "", a); status != 200 {
			t.Fatalf("unpin: %d %s", status, raw)
		}
		if got := conversationIDs(t, p, a, "?pinned=true"); len(got) != 0 {
			t.Fatalf("pinned after unpin: %v", got)
		}
		// With an app key, for the user it names.
		if status, raw := rawCall(t, p, "PATCH", "/conversations/"+convBob+"/pin?user=bob", "", p.AppKey); status != 200 {
			t.Fatalf("pin with the app key: %d %s", status, raw)
		}
		// The Service API ignores `pinned`, as Dify's does (its SDKs send it).
		if got := conversationIDs(t, p, p.AppKey, "?user=bob&pinned=false"); len(got) != 1 || got[0] != convBob {
			t.Fatalf("bob's with pinned=false and an app key: %v", got)
		}
		if status, _ := rawCall(t, p, "PATCH", "/conversations/"+convBob+"/pin?user=alice", "", p.AppKey); status != 404 {
			t.Fatalf("pinning bob's conversation as alice: %d", status)
		}
		// The Go client's pin.
		c := newClient(t, p, a)
		if r, err := c.PinConversationWithResponse(context.Background(), convA2, &client.PinConversationParams{}); err != nil || r.JSON200 == nil {
			t.Fatalf("client pin: %v %d", err, r.StatusCode())
		}
	})
}

// TestSiteSwitches: a new code, disabling the site and a passcode end the passports issued
// before; the passcode is asked for (401 passcode_required) and then accepted; the per-end-user
// rate limit holds each end user of the page to the site's requests per minute.
func TestSiteSwitches(t *testing.T) {
	p := startParley(t, "sqlite")
	_, code := siteCode(t, p, "chatbot")
	old, _ := passport(t, p, code, "")

	_, rotated := siteCode(t, p, "chatbot", "--rotate")
	if rotated == code {
		t.Fatal("--rotate kept the code")
	}
	if status, _ := rawCall(t, p, "GET", "/parameters", "", old); status != 401 {
		t.Fatalf("a passport of the old code: %d", status)
	}
	if status, _ := passportCall(t, p, code, "", ""); status != 404 {
		t.Fatalf("the old code: %d", status)
	}
	// A passport of the old code does not carry its end user over.
	if status, body := passportCall(t, p, rotated, "", old); status != 200 || body["end_user_id"] == "" {
		t.Fatalf("%d %v", status, body)
	}

	cur, _ := passport(t, p, rotated, "")
	p.CLI(t, "apps", "site", "chatbot", "--disable")
	if status, body := passportCall(t, p, rotated, "", ""); status != 404 || body["code"] != "not_found" {
		t.Fatalf("a disabled site: %d %v", status, body)
	}
	if status, _ := rawCall(t, p, "GET", "/parameters", "", cur); status != 401 {
		t.Fatalf("a passport of a disabled site: %d", status)
	}
	p.CLI(t, "apps", "site", "chatbot", "--enable")
	if status, _ := rawCall(t, p, "GET", "/parameters", "", cur); status != 401 {
		t.Fatalf("a passport issued before the site was disabled, after it is enabled again: %d", status)
	}
	cur, _ = passport(t, p, rotated, "")

	p.CLI(t, "apps", "site", "chatbot", "--passcode", "open sesame")
	if status, _ := rawCall(t, p, "GET", "/parameters", "", cur); status != 401 {
		t.Fatalf("a passport issued before the passcode: %d", status)
	}
	for _, given := range []string{"", "wrong"} {
		if status, body := passportCall(t, p, rotated, given, ""); status != 401 || body["code"] != "passcode_required" {
			t.Fatalf("passcode %q: %d %v", given, status, body)
		}
	}
	status, body := passportCall(t, p, rotated, "open sesame", "")
	withCode, _ := body["access_token"].(string)
	if status != 200 || withCode == "" {
		t.Fatalf("the right passcode: %d %v", status, body)
	}
	if status, raw := rawCall(t, p, "GET", "/site", "", withCode); status != 200 || strings.Contains(string(raw), "sesame") {
		t.Fatalf("GET /site: %d %s", status, raw)
	}
	p.CLI(t, "apps", "site", "chatbot", "--no-passcode")

	// The rate limit of each end user.
	p.CLI(t, "apps", "site", "chatbot", "--requests-per-minute", "3")
	inOneMinute(t, 15*time.Second)
	limited, _ := passport(t, p, rotated, "")
	ok, refused := burst(t, []*Parley{p}, limited, 5)
	if ok != 3 || len(refused) != 2 {
		t.Fatalf("%d admitted, %d refused; want 3 and 2", ok, len(refused))
	}
	r := refused[0]
	if r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("headers %v", r.Header)
	}
	status, raw := rawCall(t, p, "GET", "/parameters", "", limited)
	if status != 429 || !strings.Contains(string(raw), `"code":"rate_limit_error"`) || !strings.Contains(string(raw), "This end user's limit of 3") {
		t.Fatalf("%d %s", status, raw)
	}
	// Another end user of the page has its own count.
	other, _ := passport(t, p, rotated, "")
	if status, _ := rawCall(t, p, "GET", "/parameters", "", other); status != 200 {
		t.Fatalf("another end user: %d", status)
	}
	// A bad origin is refused by the CLI.
	if _, _, err := p.cliOut("apps", "site", "chatbot", "--allow-origin", "not an origin"); err == nil {
		t.Fatal("--allow-origin took a non-origin")
	}
	p.CLI(t, "apps", "site", "chatbot", "--allow-origin", "https://example.com/", "--allow-origin", "http://localhost:8080")
}

// TestSiteSettingsFromConfigAndDSL: a config app's `site` block sets its page (GET /site shows
// it, and `parley apps site` refuses to change what it sets); an imported app's DSL `site`
// section sets the page of the new app, and the export gives the section back.
func TestSiteSettingsFromConfigAndDSL(t *testing.T) {
	p := startParley(t, "sqlite")
	key := p.CLI(t, "keys", "create", "--app", "limited")
	site, err := newClient(t, p, key).GetSiteWithResponse(context.Background(), nil)
	if err != nil || site.JSON200 == nil || site.JSON200.Title != "Limited Help" || site.JSON200.Copyright == nil ||
		*site.JSON200.Copyright != "ACME Inc." {
		t.Fatalf("GET /site of the config app: %v %s", err, site.Body)
	}
	if _, stderr, err := p.cliOut("apps", "site", "limited", "--allow-origin", "https://other.test"); err == nil ||
		!strings.Contains(stderr, "allowed_origins") {
		t.Fatalf("changing what the config sets: %v %s", err, stderr)
	}
	if _, stderr, err := p.cliOut("apps", "site", "limited", "--passcode", "x"); err != nil {
		t.Fatalf("a passcode the config does not set: %v %s", err, stderr)
	}

	dsl := importedChatbot(marker(t, "site dsl")) + `site:
  title: Imported Page
  copyright: Imported Inc.
  privacy_policy: https://imported.test/privacy
  default_language: de-DE
  custom_disclaimer: Check the answers.
  show_workflow_steps: false
`
	ikey := importFile(t, p, "Imported Bot", dsl)
	site, err = newClient(t, p, ikey).GetSiteWithResponse(context.Background(), nil)
	if err != nil || site.JSON200 == nil {
		t.Fatalf("GET /site of the imported app: %v %s", err, site.Body)
	}
	s := site.JSON200
	if s.Title != "Imported Page" || s.Copyright == nil || *s.Copyright != "Imported Inc." || s.DefaultLanguage != "de-DE" ||
		s.CustomDisclaimer != "Check the answers." || s.ShowWorkflowSteps || s.PrivacyPolicy == nil {
		t.Fatalf("GET /site of the imported app: %s", site.Body)
	}
	if kind, _ := siteCode(t, p, "Imported Bot"); kind != "chat" {
		t.Fatalf("the imported app's page is /%s/", kind)
	}
	if out := p.CLI(t, "apps", "export", "Imported Bot"); !strings.Contains(out, "title: Imported Page") {
		t.Fatalf("the export lost the site section:\n%s", out)
	}
}

// TestSiteWorkflowPassport: a Workflow app's page is /workflow/CODE; a passport runs the app and
// reads its own run, not another end user's.
func TestSiteWorkflowPassport(t *testing.T) {
	p := startParley(t, "sqlite")
	name := "Site Workflow"
	key := exampleApp(t, p, workflowExample, "Topic Writer", name)
	kind, code := siteCode(t, p, name)
	if kind != "workflow" {
		t.Fatalf("the Workflow app's page is /%s/", kind)
	}
	mine, _ := passport(t, p, code, "")
	theirs, _ := passport(t, p, code, "")
	r, err := newClient(t, p, mine).RunWorkflowWithResponse(context.Background(), nil, client.RunWorkflowJSONRequestBody{
		Inputs: bodyFixtures["inputs"].(map[string]any), User: "not-me", ResponseMode: ptr(client.WorkflowBlocking)})
	if err != nil || r.JSON200 == nil || r.JSON200.Data.Status != "succeeded" {
		t.Fatalf("run with a passport: %v %s", err, r.Body)
	}
	run := r.JSON200.WorkflowRunId.String()
	for who, k := range map[string]string{"its end user": mine, "the app key": key} {
		if status, raw := rawCall(t, p, "GET", "/workflows/run/"+run, "", k); status != 200 {
			t.Fatalf("%s reads the run: %d %s", who, status, raw)
		}
	}
	if status, raw := rawCall(t, p, "GET", "/workflows/run/"+run, "", theirs); status != 404 {
		t.Fatalf("another end user reads the run: %d %s", status, raw)
	}
}

// TestSitePassportAcrossReplicas: a passport one replica gives works on the other (the key is in
// the database), the end user's rate limit is counted across both (in Redis), and a new code set
// through the CLI ends it on both at once.
func TestSitePassportAcrossReplicas(t *testing.T) {
	r := startReplicas(t, 2, "")
	a, b := r.ps[0], r.ps[1]
	_, code := siteCode(t, a, "chatbot", "--requests-per-minute", "4")
	inOneMinute(t, 20*time.Second)
	token, endUser := passport(t, a, code, "")
	if _, same := passport(t, b, code, token); same != endUser {
		t.Fatalf("the other replica gave end user %s, want %s", same, endUser)
	}
	conv := chatAs(t, a, token, "x", marker(t, "replica A"))
	if got := conversationIDs(t, b, token, ""); len(got) != 1 || got[0] != conv {
		t.Fatalf("replica B sees %v", got)
	}
	// Two requests are spent; two more pass on either replica, then both refuse.
	ok, refused := burst(t, r.ps, token, 4)
	if ok != 2 || len(refused) != 2 {
		t.Fatalf("%d admitted, %d refused; want 2 and 2", ok, len(refused))
	}
	fresh, _ := passport(t, b, code, "")
	siteCode(t, a, "chatbot", "--rotate")
	for _, p := range r.ps {
		if status, _ := rawCall(t, p, "GET", "/parameters", "", fresh); status != 401 {
			t.Fatalf("a passport of the old code: %d", status)
		}
	}
}

// TestSiteHumanInputPassport: a paused Chatflow's form and the events of its resumed run reach
// the passport of the end user who started it, and not another end user's.
func TestSiteHumanInputPassport(t *testing.T) {
	p := startParley(t, "sqlite")
	name := "Site Review Desk"
	exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", name)
	_, code := siteCode(t, p, name)
	mine, _ := passport(t, p, code, "")
	theirs, _ := passport(t, p, code, "")
	runID, token, _, _ := hiPause(t, p, mine, marker(t, "the page's post"), "anyone")

	status, raw := rawCall(t, p, "GET", "/form/human_input/"+token, "", theirs)
	wantError(t, "another end user's form", status, raw, 404, "not_found")
	status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"x"},"action":"approve","user":"x"}`, theirs)
	wantError(t, "submitting another end user's form", status, raw, 404, "not_found")
	status, raw = rawCall(t, p, "GET", "/workflow/"+runID+"/events?user=anyone", "", theirs)
	wantError(t, "another end user's events", status, raw, 404, "not_found")
	if status, raw := rawCall(t, p, "GET", "/form/human_input/"+token, "", mine); status != 200 {
		t.Fatalf("the form: %d %s", status, raw)
	}
	status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"fine"},"action":"approve","user":"x"}`, mine)
	if status != 200 {
		t.Fatalf("submit: %d %s", status, raw)
	}
	evs := hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=whoever", "", mine)
	if got := hiNames(evs); !strings.HasSuffix(got, "message_end workflow_finished") {
		t.Fatalf("resumed stream: %s", got)
	}
}

// TestSiteNewEndUserBound: passports need no key, and each new one stores an end user, so one
// client address makes a site create at most ten per minute for each request per minute the
// site gives an end user; a page renewing its passport (sending the previous one) is not
// counted.
func TestSiteNewEndUserBound(t *testing.T) {
	p := startParley(t, "sqlite")
	_, code := siteCode(t, p, "chatbot", "--requests-per-minute", "1")
	inOneMinute(t, 15*time.Second)
	var first string
	for i := range 10 {
		token, _ := passport(t, p, code, "")
		if i == 0 {
			first = token
		}
	}
	status, body := passportCall(t, p, code, "", "")
	if status != http.StatusTooManyRequests || body["code"] != "rate_limit_error" ||
		!strings.Contains(fmt.Sprint(body["message"]), "limit of 10 new end users per minute") {
		t.Fatalf("the eleventh new end user: %d %v", status, body)
	}
	if _, _ = passport(t, p, code, first); t.Failed() {
		return
	}
}
