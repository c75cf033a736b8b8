package conformance

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
)

// Node ids of the trigger exports (testdata/triggers-*.yml).
const (
	orderHook   = "1761000000001"
	paymentHook = "1761000000004"
	noteHook    = "1761000000006"
	uploadHook  = "1761000000008"
	everySecond = "1762000000001"
	weekly      = "1762000000002"
)

// trigger is a line of `parley apps triggers`: node id, kind, URL or next run time, and
// "paused" for a paused trigger.
type trigger struct{ node, kind, what, paused string }

// triggersOf lists an app's triggers through the CLI, with the URLs on the server's address.
func triggersOf(t *testing.T, p *Parley, app string, args ...string) map[string]trigger {
	t.Helper()
	base := strings.TrimSuffix(p.URL, "/v1")
	out := p.CLI(t, append([]string{"apps", "triggers", app, "--url", base}, args...)...)
	got := map[string]trigger{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 {
			t.Fatalf("apps triggers: line %q", line)
		}
		tr := trigger{node: f[0], kind: f[1], what: f[2]}
		if len(f) == 4 {
			tr.paused = f[3]
		}
		got[tr.node] = tr
	}
	return got
}

// hookCall sends a request to a webhook URL over the contract-checking client.
func hookCall(t *testing.T, method, target, contentType string, body []byte, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, raw := rawDo(t, req)
	return resp.StatusCode, raw
}

// workflowLogs are all the logs of the app of key (up to 100).
func workflowLogs(t *testing.T, p *Parley, key string) []client.WorkflowLog {
	t.Helper()
	res, err := newClient(t, p, key).ListWorkflowLogsWithResponse(context.Background(), &client.ListWorkflowLogsParams{Limit: ptr(100)})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("logs: %v %s", err, res.Body)
	}
	return res.JSON200.Data
}

// TestTriggerWebhooks imports a Workflow app that starts from four webhooks (JSON, a form, text,
// multipart with a file), lists their URLs with the CLI, and calls them: requests that match the
// manifests get the declared replies and start runs, which show in the logs and run details with
// triggered_from webhook and the request's variables as outputs; requests that do not match get a
// 4xx whose message names what is wrong. The debug URL checks without running; a paused webhook
// answers 404; the body and the rate are bounded; the app cannot be run through the API. A plugin
// trigger is refused at import, naming its plugin.
func TestTriggerWebhooks(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		p.Restart(t, "WEBHOOK_REQUEST_BODY_MAX_SIZE=65536", "PARLEY_WEBHOOK_REQUESTS_PER_MINUTE=30")
		// The plugin trigger: refused, its plugin named, nothing stored.
		_, stderr, err := p.cliOut("apps", "import", "--publish", filepath.Join("testdata", "triggers-plugin.yml"))
		if err == nil || !strings.Contains(stderr, `plugin trigger langgenius/github_trigger (event "issues_opened") is not supported`) ||
			!strings.Contains(stderr, "trigger-webhook") {
			t.Fatalf("plugin trigger: %v\n%s", err, stderr)
		}

		if name := p.CLI(t, "apps", "import", "--publish", filepath.Join("testdata", "triggers-webhook.yml")); name != "Order Intake" {
			t.Fatalf("import: %q", name)
		}
		key := p.CLI(t, "keys", "create", "--app", "Order Intake")
		hooks := triggersOf(t, p, "Order Intake")
		base := strings.TrimSuffix(p.URL, "/v1")
		urlRE := regexp.MustCompile("^" + regexp.QuoteMeta(base) + `/triggers/webhook/[A-Za-z0-9_-]{24}$`)
		for _, node := range []string{orderHook, paymentHook, noteHook, uploadHook} {
			if h := hooks[node]; h.kind != "webhook" || !urlRE.MatchString(h.what) || h.paused != "" {
				t.Fatalf("webhook %s: %+v (all %+v)", node, h, hooks)
			}
		}
		// Without --url the URL starts with PARLEY_TRIGGER_URL, else the listen address.
		if out := p.CLI(t, "apps", "triggers", "Order Intake"); !strings.Contains(out, strings.TrimPrefix(hooks[orderHook].what, base)) {
			t.Fatalf("default base: %s", out)
		}
		order, payment, note, upload := hooks[orderHook].what, hooks[paymentHook].what, hooks[noteHook].what, hooks[uploadHook].what
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"apps", "triggers", "chatbot"}, `"chatbot" is a chat app: only Workflow apps start from triggers`},
			{[]string{"apps", "triggers", "Order Intake", "--pause", "nope"}, `app "Order Intake" has no trigger "nope" (its triggers: ` + orderHook},
			{[]string{"apps", "triggers", "Order Intake", "--pause", orderHook, "--resume", orderHook}, "--pause and --resume cannot go together"},
		} {
			if out, stderr, err := p.cliOut(tc.args...); err == nil || out != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("parley %s: %v %q\n%s", strings.Join(tc.args, " "), err, out, stderr)
			}
		}

		// Accepted: the declared replies.
		status, raw := hookCall(t, "POST", order+"?source=shop&priority=2", "application/json",
			[]byte(`{"customer": "Ann", "quantity": 3, "express": true, "items": ["tea", "cups"], "meta": {"gift": false}}`), "X-Api-Key", "k-123")
		if status != 202 || string(raw) != `{"accepted":true,"queue":"orders"}` {
			t.Fatalf("order: %d %s", status, raw)
		}
		status, raw = hookCall(t, "PUT", payment+"?ref=INV-7", "application/x-www-form-urlencoded", []byte("amount=19.5&paid=yes"))
		if status != 200 || string(raw) != `{"message":"received"}` {
			t.Fatalf("payment: %d %s", status, raw)
		}
		status, raw = hookCall(t, "POST", note, "text/plain; charset=utf-8", []byte("call me back"))
		if status != 200 || string(raw) != `{"message":"Webhook processed successfully","status":"success"}` {
			t.Fatalf("note: %d %s", status, raw)
		}
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		_ = mw.WriteField("label", "minutes")
		fw, _ := mw.CreateFormFile("doc", "minutes.txt")
		_, _ = fw.Write([]byte("We met."))
		_ = mw.Close()
		status, raw = hookCall(t, "POST", upload, mw.FormDataContentType(), form.Bytes())
		if status != 201 || string(raw) != `{"stored":true}` {
			t.Fatalf("upload: %d %s", status, raw)
		}

		// Refused: each 4xx names what is wrong.
		good := []byte(`{"customer": "Ann", "quantity": 3}`)
		for _, tc := range []struct {
			what               string
			method, target, ct string
			body               []byte
			headers            []string
			status             int
			code, msg          string
		}{
			{"method", "GET", order, "", nil, []string{"X-Api-Key", "k"}, 400, "bad_request", "HTTP method mismatch. Expected POST, got GET"},
			{"content type", "POST", order, "text/plain", good, []string{"X-Api-Key", "k"}, 400, "bad_request",
				"Content-type mismatch. Expected application/json, got text/plain"},
			{"header", "POST", order, "application/json", good, nil, 400, "bad_request", "Required header missing: X-Api-Key"},
			{"body member", "POST", order, "application/json", []byte(`{"quantity": 3}`), []string{"X-Api-Key", "k"}, 400, "bad_request",
				"Required body parameter missing: customer"},
			{"body type", "POST", order, "application/json", []byte(`{"customer": "Ann", "quantity": "three"}`), []string{"X-Api-Key", "k"},
				400, "bad_request", "Parameter 'quantity' validation failed: Expected number, got string"},
			{"array items", "POST", order, "application/json", []byte(`{"customer": "Ann", "quantity": 1, "items": [1]}`),
				[]string{"X-Api-Key", "k"}, 400, "bad_request", "Parameter 'items' validation failed: Expected array of strings, got array"},
			{"query type", "POST", order + "?priority=high", "application/json", good, []string{"X-Api-Key", "k"}, 400, "bad_request",
				"Parameter 'priority' validation failed: Cannot convert 'high' to number"},
			{"invalid JSON", "POST", order, "application/json", []byte(`{"customer": `), []string{"X-Api-Key", "k"}, 400, "bad_request", ""},
			{"query required", "PUT", payment, "application/x-www-form-urlencoded", []byte("amount=1"), nil, 400, "bad_request",
				"Required parameter missing: ref"},
			{"form number", "PUT", payment + "?ref=r", "application/x-www-form-urlencoded", []byte("amount=lots"), nil, 400, "bad_request",
				"Parameter 'amount' validation failed: Cannot convert 'lots' to number"},
			{"form boolean", "PUT", payment + "?ref=r", "application/x-www-form-urlencoded", []byte("amount=1&paid=maybe"), nil, 400, "bad_request",
				"Parameter 'paid' validation failed: Cannot convert 'maybe' to boolean"},
			{"text required", "POST", note, "text/plain", []byte(""), nil, 400, "bad_request",
				"Required body content missing for text/plain request (body parameter note)"},
			{"file required", "POST", upload, "multipart/form-data; boundary=x", []byte("--x--\r\n"), nil, 400, "bad_request",
				"Required body parameter missing: doc"},
			{"unknown webhook", "POST", base + "/triggers/webhook/nosuchwebhookid000000000", "application/json", good, nil, 404, "not_found",
				"Webhook not found: nosuchwebhookid000000000"},
			{"too large", "POST", note, "text/plain", bytes.Repeat([]byte("a"), 70000), nil, 413, "request_entity_too_large",
				"Webhook request too large: 70000 bytes exceeds maximum allowed size of 65536 bytes"},
		} {
			status, raw := hookCall(t, tc.method, tc.target, tc.ct, tc.body, tc.headers...)
			segErr(t, tc.what, status, raw, tc.status, tc.code, tc.msg)
			if tc.msg == "" && !strings.Contains(string(raw), "Invalid JSON body") {
				t.Errorf("%s: %s", tc.what, raw)
			}
		}

		// The runs: one per accepted request, started in the background, each logged with how it
		// was triggered and the request's variables as its outputs.
		var logs []client.WorkflowLog
		eventually(t, "four webhook runs", func() (bool, any) {
			logs = workflowLogs(t, p, key)
			done := 0
			for _, l := range logs {
				if l.WorkflowRun.Status == "succeeded" {
					done++
				}
			}
			return len(logs) == 4 && done == 4, logs
		})
		c := newClient(t, p, key)
		outputs := map[string]map[string]any{}
		for _, l := range logs {
			if l.WorkflowRun.TriggeredFrom != client.WorkflowLogWorkflowRunTriggeredFromWebhook || l.CreatedByEndUser.SessionId != "DEFAULT-USER" {
				t.Fatalf("log %+v", l)
			}
			d, err := c.GetWorkflowRunWithResponse(context.Background(), l.WorkflowRun.Id.String())
			if err != nil || d.JSON200 == nil || d.JSON200.TriggeredFrom != client.WorkflowRunDetailTriggeredFromWebhook {
				t.Fatalf("run detail: %v %s", err, d.Body)
			}
			o := d.JSON200.Outputs
			switch {
			case o["customer"] != nil:
				outputs["order"] = o
			case o["ref"] != nil:
				outputs["payment"] = o
			case o["note"] != nil:
				outputs["note"] = o
			case o["doc_name"] != nil:
				outputs["upload"] = o
			}
		}
		want := map[string]map[string]any{
			"order": {"customer": "Ann", "quantity": float64(3), "express": true, "items": []any{"tea", "cups"}, "api_key": "k-123",
				"source": "shop", "priority": float64(2), "summary": "Ann ordered 3 (from shop)", "user_id": "DEFAULT-USER"},
			"payment": {"ref": "INV-7", "amount": 19.5, "paid": true},
			"note":    {"note": "call me back"},
			"upload":  {"doc_name": "minutes.txt", "doc_size": float64(7), "label": "minutes"},
		}
		for k, w := range want {
			got, _ := json.Marshal(outputs[k])
			exp, _ := json.Marshal(w)
			if string(got) != string(exp) {
				t.Errorf("%s outputs: %s, want %s", k, got, exp)
			}
		}

		// The debug URL checks the request and replies the same, and starts no run.
		debug := strings.Replace(order, "/triggers/webhook/", "/triggers/webhook-debug/", 1)
		status, raw = hookCall(t, "POST", debug, "application/json", good, "X-Api-Key", "k")
		if status != 202 || string(raw) != `{"accepted":true,"queue":"orders"}` {
			t.Fatalf("debug: %d %s", status, raw)
		}
		status, raw = hookCall(t, "POST", debug, "application/json", []byte(`{}`), "X-Api-Key", "k")
		segErr(t, "debug, refused", status, raw, 400, "bad_request", "Required body parameter missing: customer")

		// Paused, the webhook answers 404 (its debug URL still answers); resumed, it runs again.
		if paused := triggersOf(t, p, "Order Intake", "--pause", orderHook)[orderHook]; paused.paused != "paused" || paused.what != order {
			t.Fatalf("paused: %+v", paused)
		}
		status, raw = hookCall(t, "POST", order, "application/json", good, "X-Api-Key", "k")
		segErr(t, "paused", status, raw, 404, "not_found", "")
		if status, _ = hookCall(t, "POST", debug, "application/json", good, "X-Api-Key", "k"); status != 202 {
			t.Fatalf("paused, debug: %d", status)
		}
		triggersOf(t, p, "Order Intake", "--resume", orderHook)
		if status, raw = hookCall(t, "POST", order, "application/json", good, "X-Api-Key", "k"); status != 202 {
			t.Fatalf("resumed: %d %s", status, raw)
		}
		eventually(t, "the fifth run", func() (bool, any) { l := workflowLogs(t, p, key); return len(l) == 5, len(l) })
		if len(workflowLogs(t, p, key)) != 5 {
			t.Fatal("the debug URL started a run")
		}

		// The app starts from triggers: the API has no form to run it with.
		res, err := c.RunWorkflowWithResponse(context.Background(), nil, client.RunWorkflowJSONRequestBody{Inputs: map[string]any{}, User: "u"})
		if err != nil || res.StatusCode() != 400 || !strings.Contains(string(res.Body), "starts from triggers") {
			t.Fatalf("run through the API: %v %d %s", err, res.StatusCode(), res.Body)
		}

		// A webhook takes PARLEY_WEBHOOK_REQUESTS_PER_MINUTE requests a minute; past them, 429.
		// (The count is per minute of the clock: 62 requests put 31 in one minute at least.)
		limited := false
		for i := 0; i < 62 && !limited; i++ {
			status, raw = hookCall(t, "PUT", strings.Replace(payment, "/triggers/webhook/", "/triggers/webhook-debug/", 1)+"?ref=r",
				"application/x-www-form-urlencoded", []byte("amount=1"))
			if status == 429 {
				limited = true
				segErr(t, "rate", status, raw, 429, "rate_limit_error", "")
			} else if status != 200 {
				t.Fatalf("rate: %d %s", status, raw)
			}
		}
		if !limited {
			t.Fatal("62 requests were all taken")
		}
	})
}

// scheduleRuns are the current_time outputs of the app's schedule runs, checking each is
// logged as triggered by its schedule.
func scheduleRuns(t *testing.T, p *Parley, key string) []string {
	t.Helper()
	c := newClient(t, p, key)
	var times []string
	for _, l := range workflowLogs(t, p, key) {
		if l.WorkflowRun.TriggeredFrom != client.WorkflowLogWorkflowRunTriggeredFromSchedule {
			t.Fatalf("log %+v", l)
		}
		if l.WorkflowRun.Status != "succeeded" {
			continue
		}
		d, err := c.GetWorkflowRunWithResponse(context.Background(), l.WorkflowRun.Id.String())
		if err != nil || d.JSON200 == nil || d.JSON200.TriggeredFrom != client.WorkflowRunDetailTriggeredFromSchedule {
			t.Fatalf("run detail: %v %s", err, d.Body)
		}
		s, _ := d.JSON200.Outputs["current_time"].(string)
		times = append(times, s)
	}
	slices.Sort(times)
	return times
}

// TestTriggerSchedule imports a Workflow app with an every-second schedule (in Tokyo time) and a
// weekly one in Dify's visual mode: the CLI lists their next run times in their time zones; the
// every-second one ticks, each run logged with triggered_from schedule and the tick as
// current_time; paused it stops, resumed it ticks again.
func TestTriggerSchedule(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		p.Restart(t, "PARLEY_SCHEDULE_POLL=200ms")
		if name := p.CLI(t, "apps", "import", "--publish", filepath.Join("testdata", "triggers-schedule.yml")); name != "Ticker" {
			t.Fatalf("import: %q", name)
		}
		key := p.CLI(t, "keys", "create", "--app", "Ticker")
		list := triggersOf(t, p, "Ticker")
		next, err := time.Parse(time.RFC3339, list[everySecond].what)
		if err != nil || list[everySecond].kind != "schedule" || !strings.HasSuffix(list[everySecond].what, "+09:00") ||
			time.Until(next) > 5*time.Second {
			t.Fatalf("every second: %+v %v", list[everySecond], err)
		}
		w, err := time.Parse(time.RFC3339, list[weekly].what)
		if err != nil || list[weekly].kind != "schedule" || w.Format("15:04") != "09:30" ||
			(w.Weekday() != time.Monday && w.Weekday() != time.Friday) || w.Location().String() == "UTC" {
			t.Fatalf("weekly: %+v %v", list[weekly], err)
		}
		eventually(t, "three ticks", func() (bool, any) { r := scheduleRuns(t, p, key); return len(r) >= 3, r })
		triggersOf(t, p, "Ticker", "--pause", everySecond)
		time.Sleep(time.Second) // runs already queued finish
		before := scheduleRuns(t, p, key)
		for i := 1; i < len(before); i++ {
			if before[i] == before[i-1] {
				t.Fatalf("tick %s ran twice: %v", before[i], before)
			}
		}
		if !strings.HasSuffix(before[0], "+09:00") {
			t.Fatalf("current_time %q is not Tokyo time", before[0])
		}
		time.Sleep(1500 * time.Millisecond)
		if after := scheduleRuns(t, p, key); len(after) != len(before) {
			t.Fatalf("paused, it ticked: %d runs, then %d", len(before), len(after))
		}
		if l := triggersOf(t, p, "Ticker"); l[everySecond].paused != "paused" || l[everySecond].what != "-" {
			t.Fatalf("paused listing: %+v", l[everySecond])
		}
		triggersOf(t, p, "Ticker", "--resume", everySecond)
		eventually(t, "a tick after the resume", func() (bool, any) {
			r := scheduleRuns(t, p, key)
			return len(r) > len(before), r
		})
		triggersOf(t, p, "Ticker", "--pause", everySecond)
	})
}

// TestScheduleAcrossReplicas runs the every-second schedule on two replicas on PostgreSQL and
// Redis: each tick runs the app exactly once (no tick twice, none skipped), whichever replica
// claims it.
func TestScheduleAcrossReplicas(t *testing.T) {
	r := startReplicas(t, 2, "", "PARLEY_SCHEDULE_POLL=100ms")
	a, b := r.ps[0], r.ps[1]
	if name := a.CLI(t, "apps", "import", "--publish", filepath.Join("testdata", "triggers-schedule.yml")); name != "Ticker" {
		t.Fatalf("import: %q", name)
	}
	key := a.CLI(t, "keys", "create", "--app", "Ticker")
	eventually(t, "five ticks", func() (bool, any) { r := scheduleRuns(t, b, key); return len(r) >= 5, r })
	triggersOf(t, a, "Ticker", "--pause", everySecond)
	time.Sleep(time.Second)
	var times []time.Time
	for _, s := range scheduleRuns(t, b, key) {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("current_time %q: %v", s, err)
		}
		times = append(times, at)
	}
	// No tick ran twice; and a tick is skipped only when no replica looked at the schedule for a
	// whole second (a missed tick is not caught up, as in Dify): at most one here.
	for i := 1; i < len(times); i++ {
		if !times[i].After(times[i-1]) {
			t.Fatalf("tick %s ran twice: %v", times[i], times)
		}
	}
	span := int(times[len(times)-1].Sub(times[0])/time.Second) + 1
	if len(times) < 5 || span-len(times) > 1 {
		t.Fatalf("%d runs over %d seconds: %v", len(times), span, times)
	}
	// Each run is the run of one claimed tick, and each claimed tick has its run: the claims in
	// the database are the runs' ticks, one for one.
	db, err := sql.Open("pgx", a.engine.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT tick_at FROM trigger_ticks WHERE node_id = $1 ORDER BY tick_at", everySecond)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var claimed []time.Time
	for rows.Next() {
		var at int64
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, time.Unix(at, 0))
	}
	if len(claimed) != len(times) {
		t.Fatalf("%d ticks claimed, %d runs: %v / %v", len(claimed), len(times), claimed, times)
	}
	for i := range claimed {
		if !claimed[i].Equal(times[i]) {
			t.Fatalf("tick %s claimed, run %s", claimed[i], times[i])
		}
	}
	// Both replicas serve the same logs.
	if n := len(scheduleRuns(t, a, key)); n != len(times) {
		t.Fatalf("replica A sees %d runs, B %d", n, len(times))
	}
}
