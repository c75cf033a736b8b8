package triggers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow"
)

func TestParseWebhookDefaults(t *testing.T) {
	t.Parallel()
	w, err := ParseWebhook("n", map[string]any{"type": "trigger-webhook"})
	if err != nil || w.Method != "GET" || w.ContentType != ContentJSON || w.StatusCode != 200 || w.ResponseBody != "" {
		t.Fatalf("defaults: %+v %v", w, err)
	}
	w, err = ParseWebhook("n", map[string]any{"method": "post", "content_type": "Text/Plain", "status_code": float64(202),
		"headers": []any{map[string]any{"name": "X-Token", "required": true}},
		"params":  []any{map[string]any{"name": "page", "type": "number"}},
		"body":    []any{map[string]any{"name": "doc", "type": "file", "required": true}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Webhook{NodeID: "n", Method: "POST", ContentType: ContentText, StatusCode: 202,
		Headers: []Param{{Name: "X-Token", Type: "string", Required: true}}, Params: []Param{{Name: "page", Type: "number"}},
		Body: []Param{{Name: "doc", Type: "file", Required: true}}}
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("got %+v\nwant %+v", w, want)
	}
}

func TestParseWebhookRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		data map[string]any
		want string
	}{
		{map[string]any{"method": "options"}, "method: options"},
		{map[string]any{"content_type": "application/xml"}, "content_type: application/xml"},
		{map[string]any{"body": map[string]any{"name": "string"}}, "body: a list"},
		{map[string]any{"body": []any{map[string]any{"type": "string"}}}, "body[0]: no name"},
		{map[string]any{"body": []any{map[string]any{"name": "a", "type": "date"}}}, `body[0] (a): type "date"`},
		{map[string]any{"headers": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}}, `headers[1]: "a" is declared twice`},
		{map[string]any{"params": []any{map[string]any{"name": "q", "type": "object"}}}, "params[0] (q): a query parameter"},
		{map[string]any{"status_code": int64(600)}, "status_code: 600"},
		{map[string]any{"status_code": int64(404)}, "status_code: 404"},
		{map[string]any{"response_body": int64(1)}, "response_body"},
	} {
		if _, err := ParseWebhook("n", tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestWebhookReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want string
	}{
		{"", `{"message":"Webhook processed successfully","status":"success"}`},
		{`{"ok": true}`, `{"ok":true}`},
		{` [1, 2] `, `[1,2]`},
		{"thanks", `{"message":"thanks"}`},
		// Not JSON after all: the text as the message, as Dify answers it.
		{"{broken", `{"message":"{broken"}`},
	} {
		status, body := (&Webhook{StatusCode: 201, ResponseBody: tc.body}).Reply()
		raw, _ := json.Marshal(body)
		if status != 201 || string(raw) != tc.want {
			t.Errorf("%q: %d %s, want %s", tc.body, status, raw, tc.want)
		}
	}
}

func graphOf(t *testing.T, nodes ...map[string]any) *workflow.Graph {
	t.Helper()
	var ns []any
	for _, n := range nodes {
		ns = append(ns, n)
	}
	g, err := workflow.Parse(map[string]any{"nodes": ns})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCheck(t *testing.T) {
	t.Parallel()
	webhook := func(id string) map[string]any {
		return map[string]any{"id": id, "data": map[string]any{"type": "trigger-webhook", "method": "POST"}}
	}
	g := graphOf(t,
		webhook("w1"), webhook("w2"), webhook("w3"), webhook("w4"), webhook("w5"), webhook("w6"),
		map[string]any{"id": "bad", "data": map[string]any{"type": "trigger-webhook", "method": "TRACE"}},
		map[string]any{"id": "s", "data": map[string]any{"type": "trigger-schedule", "mode": "cron", "cron_expression": "0 9 * * *"}},
		map[string]any{"id": "s2", "data": map[string]any{"type": "trigger-schedule", "mode": "cron", "cron_expression": "nope"}},
		map[string]any{"id": "p", "data": map[string]any{"type": "trigger-plugin", "plugin_id": "langgenius/github_trigger",
			"provider_id": "langgenius/github_trigger/github", "event_name": "issues"}},
	)
	got := Check(g)
	if len(got) != 4 {
		t.Fatalf("problems: %v", got)
	}
	for id, want := range map[string]string{
		"w6":  "more than 5 webhook triggers",
		"bad": "webhook trigger: method: TRACE",
		"s2":  "schedule trigger: cron expression",
		"p":   `plugin trigger langgenius/github_trigger (event "issues") is not supported`,
	} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}
}

func TestPluginRefusalNamesThePlugin(t *testing.T) {
	t.Parallel()
	for data, want := range map[*map[string]any]string{
		{"plugin_id": "acme/slack_trigger", "event_name": "message"}: `plugin trigger acme/slack_trigger (event "message")`,
		{"provider_id": "acme/slack_trigger/slack"}:                  "plugin trigger acme/slack_trigger/slack is not",
		{}: "(the node names no plugin)",
	} {
		if got := ParsePlugin(*data).Refusal(); !strings.Contains(got, want) || !strings.Contains(got, "trigger-webhook") {
			t.Errorf("%v: %q, want %q and the webhook suggestion", *data, got, want)
		}
	}
}
