package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// completionBody is a request to the `writer` Completion app, whose prompt is "Write a {{tone}}
// note to {{name}}.": the recipient carries the test's marker to the fake upstream.
func completionBody(recipient, user string, streaming bool) client.SendCompletionMessageJSONRequestBody {
	mode := client.CompletionBlocking
	if streaming {
		mode = client.CompletionStreaming
	}
	return client.SendCompletionMessageJSONRequestBody{
		Inputs: map[string]any{"tone": "warm", "name": recipient}, User: user, ResponseMode: &mode,
	}
}

// completionEvents sends a streaming Completion and reads the whole stream as typed events.
func completionEvents(t *testing.T, c *client.ClientWithResponses, body client.SendCompletionMessageJSONRequestBody) []client.CompletionStreamEvent {
	t.Helper()
	resp, err := c.SendCompletionMessage(context.Background(), nil, body)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.NewCompletionEventStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var evs []client.CompletionStreamEvent
	for stream.Next() {
		evs = append(evs, stream.Event())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func completionEventName(t *testing.T, ev client.CompletionStreamEvent) string {
	t.Helper()
	name, err := ev.Discriminator()
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestCompletionBlocking: the reply is the whole answer with mode `completion` and no
// conversation; the model got the app's prompt filled in from the inputs as the user's message,
// and then the query after it when there is one.
func TestCompletionBlocking(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.CompletionKey(t))
		ctx := context.Background()
		who := marker(t, "Ada")
		upstream.On("note to "+who, openaitest.Reply{Text: "Dear Ada, thank you."})
		before := time.Now().Unix()
		resp, err := c.SendCompletionMessageWithResponse(ctx, nil, completionBody(who, "alice", false))
		if err != nil {
			t.Fatal(err)
		}
		r := resp.JSON200
		if r == nil {
			t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body)
		}
		if r.Event != client.CompletionResponseEventMessage || r.Mode != client.CompletionResponseModeCompletion || r.Answer != "Dear Ada, thank you." ||
			r.Id != r.MessageId || r.TaskId == uuid.Nil || r.CreatedAt < before || r.CreatedAt > time.Now().Unix() {
			t.Fatalf("reply %+v", r)
		}
		if u := r.Metadata.Usage; u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptUnitPrice != "0.15" {
			t.Fatalf("usage %+v", u)
		}
		var raw map[string]any
		if err := json.Unmarshal(resp.Body, &raw); err != nil {
			t.Fatal(err)
		}
		if _, has := raw["conversation_id"]; has {
			t.Fatalf("a completion reply names a conversation: %s", resp.Body)
		}
		if got := lastUpstreamMessages(t, "Write a warm note to "+who+"."); len(got) != 1 || got[0] != "user: Write a warm note to "+who+"." {
			t.Fatalf("prompt %q", got)
		}

		// With a query, the filled-in prompt becomes the system message and the query the user's.
		body := completionBody(who, "alice", false)
		q := marker(t, "Keep it short.")
		body.Query = &q
		upstream.On(q, openaitest.Reply{Text: "Thanks, Ada."})
		if r2, err := c.SendCompletionMessageWithResponse(ctx, nil, body); err != nil || r2.JSON200 == nil || r2.JSON200.Answer != "Thanks, Ada." {
			t.Fatalf("with a query: %v %s", err, r2.Body)
		}
		if got := lastUpstreamMessages(t, q); len(got) != 2 || got[0] != "system: Write a warm note to "+who+"." || got[1] != "user: "+q {
			t.Fatalf("prompt with a query %q", got)
		}
	})
}

// lastUpstreamMessages is the prompt of the last request the fake upstream received whose last
// user message is last, as "role: text" lines.
func lastUpstreamMessages(t *testing.T, last string) []string {
	t.Helper()
	reqs := upstream.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].LastUserMessage() != last {
			continue
		}
		var out []string
		for _, m := range reqs[i].Messages {
			out = append(out, m.Role+": "+m.Text())
		}
		return out
	}
	t.Fatalf("the upstream never received %q", last)
	return nil
}

// TestCompletionStreaming: message chunks then message_end, one task and one message, and no
// conversation anywhere (the contract checker also validates each event against the completion
// stream's own schemas).
func TestCompletionStreaming(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.CompletionKey(t))
		who := marker(t, "Bob")
		upstream.On("note to "+who, openaitest.Reply{Chunks: []string{"Dear", " Bob,", " hello."}})
		evs := completionEvents(t, c, completionBody(who, "bob", true))
		var names []string
		var answer strings.Builder
		tasks, messages := map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
		for _, ev := range evs {
			name := completionEventName(t, ev)
			names = append(names, name)
			switch name {
			case "message":
				m, err := ev.AsCompletionMessageEvent()
				if err != nil {
					t.Fatal(err)
				}
				answer.WriteString(m.Answer)
				tasks[m.TaskId], messages[m.MessageId], messages[m.Id] = true, true, true
			case "message_end":
				m, err := ev.AsCompletionMessageEndEvent()
				if err != nil {
					t.Fatal(err)
				}
				tasks[m.TaskId], messages[m.MessageId] = true, true
				if m.Metadata.Usage.CompletionTokens == 0 {
					t.Fatalf("message_end metadata %+v", m.Metadata)
				}
			}
		}
		if got := strings.Join(names, ","); got != "message,message,message,message_end" {
			t.Fatalf("events %s", got)
		}
		if answer.String() != "Dear Bob, hello." || len(tasks) != 1 || len(messages) != 1 {
			t.Fatalf("answer %q, tasks %v, messages %v", answer.String(), tasks, messages)
		}
		for _, ev := range evs {
			if raw, _ := ev.MarshalJSON(); strings.Contains(string(raw), "conversation_id") {
				t.Fatalf("event names a conversation: %s", raw)
			}
		}
	})
}

// TestCompletionStop stops a completion that would never end: a stop by someone else is
// ignored, the owner's ends the stream with message_end; the stop operation answers success for
// any task, as Dify's does.
func TestCompletionStop(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.CompletionKey(t))
		ctx := context.Background()
		who := marker(t, "Carol")
		upstream.On("note to "+who, openaitest.Reply{Chunks: []string{"Dear", " Carol", " …"}, HangAfterChunks: 2})
		resp, err := c.SendCompletionMessage(ctx, nil, completionBody(who, "carol", true))
		if err != nil {
			t.Fatal(err)
		}
		stream, err := client.NewCompletionEventStream(resp)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		var first client.CompletionMessageEvent
		for i := range 2 {
			if !stream.Next() {
				t.Fatalf("event %d missing: %v", i+1, stream.Err())
			}
			m, err := stream.Event().AsCompletionMessageEvent()
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = m
			}
		}
		for _, user := range []string{"mallory", "carol"} {
			st, err := c.StopCompletionMessageWithResponse(ctx, first.TaskId.String(), client.StopCompletionMessageJSONRequestBody{User: user})
			if err != nil || st.JSON200 == nil || st.JSON200.Result != "success" {
				t.Fatalf("stop by %s: %v %s", user, err, st.Body)
			}
		}
		var names []string
		for stream.Next() {
			names = append(names, completionEventName(t, stream.Event()))
		}
		if len(names) == 0 || names[len(names)-1] != "message_end" {
			t.Fatalf("after stop: %v (%v)", names, stream.Err())
		}
		st, err := c.StopCompletionMessageWithResponse(ctx, uuid.NewString(), client.StopCompletionMessageJSONRequestBody{User: "carol"})
		if err != nil || st.JSON200 == nil {
			t.Fatalf("stop of an unknown task: %v %s", err, st.Body)
		}
	})
}

// TestCompletionRefusals: the completion routes refuse other app kinds with app_unavailable, the
// chat routes refuse Completion apps with not_chat_app, and bad input is a 400 invalid_param.
func TestCompletionRefusals(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		writer := p.CompletionKey(t)
		const unavailable = "App unavailable, please check your app configurations."
		const notChat = "Please check if your app mode matches the right API route."
		ok := `{"inputs":{"tone":"dry"},"user":"u"}`
		task := uuid.NewString()
		for name, tc := range map[string]struct {
			key, method, path, body string
			status                  int
			code, msg               string
		}{
			"chat app on completion":       {p.AppKey, "POST", "/completion-messages", ok, 400, "app_unavailable", unavailable},
			"chat app on completion stop":  {p.AppKey, "POST", "/completion-messages/" + task + "/stop", `{"user":"u"}`, 400, "app_unavailable", unavailable},
			"legacy agent on completion":   {p.CLI(t, "keys", "create", "--app", "agent"), "POST", "/completion-messages", ok, 400, "app_unavailable", unavailable},
			"disabled app on completion":   {p.CLI(t, "keys", "create", "--app", "offline"), "POST", "/completion-messages", ok, 400, "app_unavailable", unavailable},
			"completion app on chat":       {writer, "POST", "/chat-messages", `{"query":"hi","inputs":{},"user":"u"}`, 400, "not_chat_app", notChat},
			"completion app on chat stop":  {writer, "POST", "/chat-messages/" + task + "/stop", `{"user":"u"}`, 400, "not_chat_app", notChat},
			"completion app conversations": {writer, "GET", "/conversations?user=u", "", 400, "not_chat_app", notChat},
			"missing required input":       {writer, "POST", "/completion-messages", `{"inputs":{},"user":"u"}`, 400, "invalid_param", "tone is required in input form"},
			"bad select option":            {writer, "POST", "/completion-messages", `{"inputs":{"tone":"loud"},"user":"u"}`, 400, "invalid_param", "tone in input form must be one of the following: ['warm', 'dry']"},
			"inputs missing":               {writer, "POST", "/completion-messages", `{"query":"hi","user":"u"}`, 400, "invalid_param", "inputs"},
			"user missing":                 {writer, "POST", "/completion-messages", `{"inputs":{"tone":"dry"}}`, 400, "invalid_param", "Arg user must be provided."},
			"bad response mode":            {writer, "POST", "/completion-messages", `{"inputs":{"tone":"dry"},"user":"u","response_mode":"fast"}`, 400, "invalid_param", "response_mode"},
			"stop without user":            {writer, "POST", "/completion-messages/" + task + "/stop", `{}`, 400, "invalid_param", "Arg user must be provided."},
		} {
			t.Run(name, func(t *testing.T) {
				var body *strings.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				c := call{method: tc.method, path: tc.path, key: "Bearer " + tc.key}
				if body != nil {
					c.contentType, c.body = "application/json", body
				}
				resp, e := p.do(t, hc, c)
				if resp.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
					t.Fatalf("got %d %+v, want %d %s %q", resp.StatusCode, e, tc.status, tc.code, tc.msg)
				}
			})
		}
		// A streaming request refused before it starts is a plain JSON error, not a stream.
		resp, e := p.do(t, hc, call{method: "POST", path: "/completion-messages", key: "Bearer " + writer, contentType: "application/json",
			body: strings.NewReader(`{"inputs":{},"user":"u","response_mode":"streaming"}`)})
		if resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_param" {
			t.Fatalf("streaming refusal: %d %+v", resp.StatusCode, e)
		}
	})
}
