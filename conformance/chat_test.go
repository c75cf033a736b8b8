package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

func ptr[T any](v T) *T { return &v }

// chatBody is a chat request for the chatbot app (its form requires `tone`).
func chatBody(query, user string, streaming bool) client.SendChatMessageJSONRequestBody {
	mode := client.Blocking
	if streaming {
		mode = client.Streaming
	}
	return client.SendChatMessageJSONRequestBody{
		Query: query, User: user, Inputs: map[string]any{"tone": "warm", "name": "Ada"}, ResponseMode: &mode,
	}
}

// marker makes a query unique to one test and engine, so upstream rules do not collide.
func marker(t *testing.T, what string) string {
	return fmt.Sprintf("%s [%s]", what, strings.ReplaceAll(t.Name(), "/", "-"))
}

// streamEvents sends a streaming message and reads the whole stream as typed events.
func streamEvents(t *testing.T, c *client.ClientWithResponses, body client.SendChatMessageJSONRequestBody) []client.ChatStreamEvent {
	t.Helper()
	return streamEventsCtx(context.Background(), t, c, body)
}

// streamEventsCtx is streamEvents bounded by ctx: a stream that does not end in time fails t.
// The editors change the request (a header of its own).
func streamEventsCtx(ctx context.Context, t *testing.T, c *client.ClientWithResponses, body client.SendChatMessageJSONRequestBody, editors ...client.RequestEditorFn) []client.ChatStreamEvent {
	t.Helper()
	resp, err := c.SendChatMessage(ctx, nil, body, editors...)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.NewEventStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var evs []client.ChatStreamEvent
	for stream.Next() {
		evs = append(evs, stream.Event())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func eventName(t *testing.T, ev client.ChatStreamEvent) string {
	t.Helper()
	name, err := ev.Discriminator()
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func TestChatBlocking(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		q := marker(t, "what is two plus two")
		upstream.On(q, openaitest.Reply{Text: "Four."})
		before := time.Now().Unix()
		resp, err := c.SendChatMessageWithResponse(context.Background(), nil, chatBody(q, "alice", false))
		if err != nil {
			t.Fatal(err)
		}
		r := resp.JSON200
		if r == nil {
			t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body)
		}
		if r.Event != client.ChatCompletionResponseEventMessage || r.Mode != client.AppModeChat || r.Answer != "Four." {
			t.Fatalf("reply %+v", r)
		}
		if r.Id != r.MessageId || r.ConversationId == uuid.Nil || r.TaskId == uuid.Nil || r.CreatedAt < before || r.CreatedAt > time.Now().Unix() {
			t.Fatalf("ids/times %+v", r)
		}
		u := r.Metadata.Usage
		// gpt-4o-mini in testdata/parley.yaml: 0.15 and 0.60 per 1M tokens.
		if u.PromptUnitPrice != "0.15" || u.CompletionUnitPrice != "0.60" || u.PromptPriceUnit != "0.000001" || u.Currency != "USD" ||
			u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.CompletionTokens == 0 || u.Latency <= 0 {
			t.Fatalf("usage %+v", u)
		}
		if len(r.Metadata.RetrieverResources) != 0 {
			t.Fatalf("retriever_resources %+v", r.Metadata.RetrieverResources)
		}

		// The conversation gets a generated name after the first exchange; with
		// auto_generate_name false it keeps the default one.
		quiet := chatBody(q, "alice2", false)
		quiet.AutoGenerateName = ptr(false)
		if r2, _ := c.SendChatMessageWithResponse(context.Background(), nil, quiet); r2.JSON200 == nil {
			t.Fatalf("second reply: %s", r2.Body)
		}
		names := func(user string) []string {
			l, _ := c.ListConversationsWithResponse(context.Background(), &client.ListConversationsParams{User: &user})
			var out []string
			for _, cv := range l.JSON200.Data {
				out = append(out, cv.Name)
			}
			return out
		}
		deadline := time.Now().Add(20 * time.Second)
		for got := names("alice"); len(got) != 1 || got[0] != generatedTitle; got = names("alice") {
			if time.Now().After(deadline) {
				t.Fatalf("conversation names %q, want the generated title", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := names("alice2"); len(got) != 1 || got[0] != "New conversation" {
			t.Fatalf("auto_generate_name false: names %q", got)
		}
	})
}

func TestChatStreaming(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		q := marker(t, "tell me a short story")
		upstream.On(q, openaitest.Reply{Chunks: []string{"Once", " upon", " a", " time."}})
		evs := streamEvents(t, c, chatBody(q, "bob", true))
		var names []string
		var answer strings.Builder
		var taskIDs, msgIDs = map[string]bool{}, map[string]bool{}
		for _, ev := range evs {
			name := eventName(t, ev)
			names = append(names, name)
			switch name {
			case "message":
				m, _ := ev.AsMessageEvent()
				answer.WriteString(m.Answer)
				taskIDs[m.TaskId.String()], msgIDs[m.MessageId.String()] = true, true
			case "message_end":
				m, _ := ev.AsMessageEndEvent()
				taskIDs[m.TaskId.String()], msgIDs[m.MessageId.String()] = true, true
				if m.Metadata.Usage.CompletionTokens == 0 || m.Metadata.RetrieverResources == nil {
					t.Fatalf("message_end metadata %+v", m.Metadata)
				}
			}
		}
		if got := strings.Join(names, ","); got != "message,message,message,message,message_end" {
			t.Fatalf("events %s", got)
		}
		if answer.String() != "Once upon a time." || len(taskIDs) != 1 || len(msgIDs) != 1 {
			t.Fatalf("answer %q, task ids %v, message ids %v", answer.String(), taskIDs, msgIDs)
		}
	})
}

// TestConversationLifecycle continues a conversation and walks it through listing, history,
// renaming, feedback, suggestions and deletion.
func TestConversationLifecycle(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		user := "carol"
		q1, q2 := marker(t, "first"), marker(t, "second")
		upstream.On(q1, openaitest.Reply{Text: "One."})
		upstream.On(q2, openaitest.Reply{Text: "Two."})
		r1, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(q1, user, false))
		if err != nil || r1.JSON200 == nil {
			t.Fatalf("first: %v %s", err, r1.Body)
		}
		conv := r1.JSON200.ConversationId.String()
		b2 := chatBody(q2, user, false)
		b2.ConversationId = &conv
		b2.AutoGenerateName = ptr(false)
		r2, err := c.SendChatMessageWithResponse(ctx, nil, b2)
		if err != nil || r2.JSON200 == nil || r2.JSON200.ConversationId.String() != conv {
			t.Fatalf("second: %v %s", err, r2.Body)
		}

		list, err := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: &user})
		if err != nil || list.JSON200 == nil || len(list.JSON200.Data) != 1 || list.JSON200.Data[0].Id.String() != conv {
			t.Fatalf("conversations: %v %s", err, list.Body)
		}
		if got := list.JSON200.Data[0]; got.Inputs["tone"] != "warm" || got.Status != "normal" {
			t.Fatalf("conversation %+v", got)
		}
		// Another user sees nothing of it.
		other := "mallory"
		if l, _ := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: &other}); l.JSON200 == nil || len(l.JSON200.Data) != 0 {
			t.Fatalf("other user's list: %s", l.Body)
		}
		if m, _ := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &other}); m.StatusCode() != 404 {
			t.Fatalf("other user's history: %d", m.StatusCode())
		}

		hist, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user})
		if err != nil || hist.JSON200 == nil {
			t.Fatalf("messages: %v %s", err, hist.Body)
		}
		h := hist.JSON200
		if len(h.Data) != 2 || h.HasMore || h.Data[0].Query != q1 || h.Data[1].Answer != "Two." || h.Data[0].Status != "normal" {
			t.Fatalf("history %s", hist.Body)
		}
		// Pages go back in time.
		page, _ := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user, Limit: ptr(1)})
		if page.JSON200 == nil || len(page.JSON200.Data) != 1 || !page.JSON200.HasMore || page.JSON200.Data[0].Query != q2 {
			t.Fatalf("page 1: %s", page.Body)
		}
		first := page.JSON200.Data[0].Id.String()
		page, _ = c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user, Limit: ptr(1), FirstId: &first})
		if page.JSON200 == nil || len(page.JSON200.Data) != 1 || page.JSON200.HasMore || page.JSON200.Data[0].Query != q1 {
			t.Fatalf("page 2: %s", page.Body)
		}

		// Feedback shows in history and in the app's list; revoking removes it.
		msgID := r2.JSON200.MessageId.String()
		like := client.FeedbackRequestRatingLike
		fb, err := c.SendMessageFeedbackWithResponse(ctx, msgID, client.SendMessageFeedbackJSONRequestBody{Rating: &like, User: user, Content: ptr("nice")})
		if err != nil || fb.JSON200 == nil {
			t.Fatalf("feedback: %v %s", err, fb.Body)
		}
		hist, _ = c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user})
		if f := hist.JSON200.Data[1].Feedback; f == nil || f.Rating != "like" || hist.JSON200.Data[0].Feedback != nil {
			t.Fatalf("history feedback: %s", hist.Body)
		}
		afb, _ := c.ListAppFeedbacksWithResponse(ctx, &client.ListAppFeedbacksParams{})
		found := false
		for _, f := range afb.JSON200.Data {
			found = found || (f.MessageId.String() == msgID && f.Rating == client.AppFeedbackRatingLike && f.Content != nil && *f.Content == "nice")
		}
		if !found {
			t.Fatalf("app feedbacks: %s", afb.Body)
		}
		if fb, _ := c.SendMessageFeedbackWithResponse(ctx, msgID, client.SendMessageFeedbackJSONRequestBody{User: user}); fb.StatusCode() != 200 {
			t.Fatalf("revoke: %s", fb.Body)
		}
		if fb, _ := c.SendMessageFeedbackWithResponse(ctx, msgID, client.SendMessageFeedbackJSONRequestBody{User: user}); fb.StatusCode() != 400 {
			t.Fatalf("revoke again: %d %s", fb.StatusCode(), fb.Body)
		}

		sug, err := c.GetSuggestedQuestionsWithResponse(ctx, msgID, &client.GetSuggestedQuestionsParams{User: user})
		if err != nil || sug.JSON200 == nil || strings.Join(sug.JSON200.Data, "|") != "Why?|How?|When?" {
			t.Fatalf("suggested: %v %s", err, sug.Body)
		}

		// Rename, explicitly and generated.
		ren, err := c.RenameConversationWithResponse(ctx, conv, client.RenameConversationJSONRequestBody{Name: ptr("Sums"), User: &user})
		if err != nil || ren.JSON200 == nil || ren.JSON200.Name != "Sums" {
			t.Fatalf("rename: %v %s", err, ren.Body)
		}
		ren, err = c.RenameConversationWithResponse(ctx, conv, client.RenameConversationJSONRequestBody{AutoGenerate: ptr(true), User: &user})
		if err != nil || ren.JSON200 == nil || ren.JSON200.Name != generatedTitle {
			t.Fatalf("auto rename: %v %s", err, ren.Body)
		}
		if ren, _ := c.RenameConversationWithResponse(ctx, conv, client.RenameConversationJSONRequestBody{User: &user}); ren.StatusCode() != 400 {
			t.Fatalf("rename without name: %d", ren.StatusCode())
		}

		// Delete: 204, then the conversation is gone everywhere.
		del, err := c.DeleteConversationWithResponse(ctx, conv, client.DeleteConversationJSONRequestBody{User: &user})
		if err != nil || del.StatusCode() != http.StatusNoContent || len(del.Body) != 0 {
			t.Fatalf("delete: %v %d %q", err, del.StatusCode(), del.Body)
		}
		if m, _ := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user}); m.StatusCode() != 404 {
			t.Fatalf("history after delete: %d", m.StatusCode())
		}
		b3 := chatBody("again", user, false)
		b3.ConversationId = &conv
		if r, _ := c.SendChatMessageWithResponse(ctx, nil, b3); r.StatusCode() != 404 {
			t.Fatalf("message to deleted conversation: %d %s", r.StatusCode(), r.Body)
		}
		if d, _ := c.DeleteConversationWithResponse(ctx, conv, client.DeleteConversationJSONRequestBody{User: &user}); d.StatusCode() != 404 {
			t.Fatalf("second delete: %d", d.StatusCode())
		}
	})
}

// TestStopStreaming stops a reply that would never end: the stream closes with message_end,
// and history keeps the partial answer.
func TestStopStreaming(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		q := marker(t, "ramble on")
		upstream.On(q, openaitest.Reply{Chunks: []string{"and", " on", " and"}, HangAfterChunks: 2})
		resp, err := c.SendChatMessage(ctx, nil, chatBody(q, "dave", true))
		if err != nil {
			t.Fatal(err)
		}
		stream, err := client.NewEventStream(resp)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		// Both chunks the upstream sends before it hangs have arrived.
		var first client.MessageEvent
		for i := range 2 {
			if !stream.Next() {
				t.Fatalf("event %d missing: %v", i+1, stream.Err())
			}
			m, _ := stream.Event().AsMessageEvent()
			if i == 0 {
				first = m
			}
		}
		// A stop by someone else is ignored (and still answers success), as in Dify.
		for _, user := range []string{"eve", "dave"} {
			st, err := c.StopChatMessageWithResponse(ctx, first.TaskId.String(), client.StopChatMessageJSONRequestBody{User: user})
			if err != nil || st.JSON200 == nil || st.JSON200.Result != "success" {
				t.Fatalf("stop by %s: %v %s", user, err, st.Body)
			}
		}
		var names []string
		for stream.Next() {
			names = append(names, eventName(t, stream.Event()))
		}
		if len(names) == 0 || names[len(names)-1] != "message_end" {
			t.Fatalf("after stop: %v (%v)", names, stream.Err())
		}
		conv := first.ConversationId.String()
		user := "dave"
		hist, _ := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user})
		if hist.JSON200 == nil || len(hist.JSON200.Data) != 1 || hist.JSON200.Data[0].Answer != "and on" || hist.JSON200.Data[0].Status != "stopped" {
			t.Fatalf("history %s", hist.Body)
		}
	})
}

// TestClientGoneKeepsAnswer closes the connection mid-stream: the answer is still generated
// to the end and shows in history.
func TestClientGoneKeepsAnswer(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		q := marker(t, "slow answer")
		upstream.On(q, openaitest.Reply{Chunks: []string{"a", "b", "c", "d", "e"}, ChunkDelay: 30 * time.Millisecond})
		resp, err := c.SendChatMessage(ctx, nil, chatBody(q, "frank", true))
		if err != nil {
			t.Fatal(err)
		}
		stream, err := client.NewEventStream(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !stream.Next() {
			t.Fatal(stream.Err())
		}
		first, _ := stream.Event().AsMessageEvent()
		stream.Close()
		user, conv := "frank", first.ConversationId.String()
		deadline := time.Now().Add(20 * time.Second)
		for {
			hist, _ := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user})
			if hist.JSON200 != nil && len(hist.JSON200.Data) == 1 && hist.JSON200.Data[0].Answer == "abcde" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("answer never completed: %s", hist.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestProviderErrors: before a stream starts a provider failure is an HTTP 400 with the mapped
// code; once streaming, it is an `error` event with the same code and HTTP 200.
func TestProviderErrors(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		for _, tc := range []struct {
			reply openaitest.Reply
			code  string
		}{
			{openaitest.Reply{Status: 401}, "provider_not_initialize"},
			{openaitest.Reply{Status: 429, ErrorCode: "insufficient_quota"}, "provider_quota_exceeded"},
			{openaitest.Reply{Status: 404, ErrorCode: "model_not_found"}, "model_currently_not_support"},
			{openaitest.Reply{Status: 503}, "completion_request_error"},
			{openaitest.Reply{Chunks: []string{"x", "y", "z"}, CutAfterChunks: 1}, "completion_request_error"},
		} {
			t.Run(tc.code, func(t *testing.T) {
				q := marker(t, "fail")
				upstream.On(q, tc.reply)
				r, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "gina", false))
				if err != nil {
					t.Fatal(err)
				}
				if r.StatusCode() != 400 || r.JSON400 == nil || r.JSON400.Code != tc.code {
					t.Fatalf("blocking: %d %s", r.StatusCode(), r.Body)
				}
				evs := streamEvents(t, c, chatBody(q, "gina", true))
				last := evs[len(evs)-1]
				if eventName(t, last) != "error" {
					t.Fatalf("stream ended with %s", eventName(t, last))
				}
				e, _ := last.AsErrorEvent()
				if e.Code != tc.code || e.Status != 400 {
					t.Fatalf("error event %+v", e)
				}
			})
		}
	})
}

// TestChatRefusals covers the app-level refusals of /chat-messages.
func TestChatRefusals(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		// The server warned at start-up that the provider without its key is not usable.
		if p.logs != nil {
			var warned bool
			for _, line := range strings.Split(p.logs.String(), "\n") {
				if strings.Contains(line, "model provider is not usable") && strings.Contains(line, `"provider":"nokey"`) &&
					strings.Contains(line, "CONFORMANCE_UNSET_KEY") {
					warned = true
				}
			}
			if !warned {
				t.Fatalf("no start-up warning about the provider nokey; log:\n%s", p.logs.String())
			}
		}
		hc := newContractClient(t)
		send := func(key, body string) (*http.Response, apiErr) {
			return p.do(t, hc, call{method: "POST", path: "/chat-messages", key: "Bearer " + key, contentType: "application/json", body: strings.NewReader(body)})
		}
		ok := `{"query":"hi","inputs":{"tone":"warm"},"user":"u"}`
		for name, tc := range map[string]struct {
			key, body string
			status    int
			code, msg string
		}{
			"missing required input": {p.AppKey, `{"query":"hi","inputs":{},"user":"u"}`, 400, "invalid_param", "tone is required in input form"},
			"bad select option":      {p.AppKey, `{"query":"hi","inputs":{"tone":"loud"},"user":"u"}`, 400, "invalid_param", "tone in input form must be one of the following: ['warm', 'dry']"},
			"unknown conversation":   {p.AppKey, `{"query":"hi","inputs":{},"user":"u","conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"}`, 404, "not_found", "Conversation Not Exists."},
			"malformed conversation": {p.AppKey, `{"query":"hi","inputs":{},"user":"u","conversation_id":"abc"}`, 400, "invalid_param", "conversation_id must be a valid UUID"},
			"completion app":         {p.CLI(t, "keys", "create", "--app", "writer"), ok, 400, "not_chat_app", ""},
			"legacy agent blocking":  {p.CLI(t, "keys", "create", "--app", "agent"), ok, 400, "bad_request", "streaming"},
			"disabled app":           {p.CLI(t, "keys", "create", "--app", "offline"), ok, 400, "app_unavailable", ""},
			// The provider has no key: known before anything starts, so even a streaming
			// request gets a plain 400, not a stream with an error event. The message says what
			// to set, not Dify's settings page.
			"provider without credentials, blocking":  {p.CLI(t, "keys", "create", "--app", "keyless"), `{"query":"hi","inputs":{},"user":"u"}`, 400, "provider_not_initialize", "set the environment variable CONFORMANCE_UNSET_KEY"},
			"provider without credentials, streaming": {p.CLI(t, "keys", "create", "--app", "keyless"), `{"query":"hi","inputs":{},"user":"u","response_mode":"streaming"}`, 400, "provider_not_initialize", `Model provider "nokey" is not usable`},
		} {
			t.Run(name, func(t *testing.T) {
				resp, e := send(tc.key, tc.body)
				if resp.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
					t.Fatalf("got %d %+v, want %d %s %q", resp.StatusCode, e, tc.status, tc.code, tc.msg)
				}
			})
		}
	})
}

// TestConcurrencyCap: the `limited` app allows one request at a time, streaming included; the
// slot is freed when the stream ends, however it ends.
func TestConcurrencyCap(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		key := p.CLI(t, "keys", "create", "--app", "limited")
		c := newClient(t, p, key)
		ctx := context.Background()
		q := marker(t, "hold on")
		upstream.On(q, openaitest.Reply{Chunks: []string{"a", "b"}, HangAfterChunks: 1})
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "h", Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)}
		resp, err := c.SendChatMessage(ctx, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		stream, err := client.NewEventStream(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !stream.Next() {
			t.Fatal(stream.Err())
		}
		second, _ := c.SendChatMessageWithResponse(ctx, nil, client.SendChatMessageJSONRequestBody{Query: "x", User: "i", Inputs: map[string]any{}})
		if second.StatusCode() != 429 || second.JSON429 == nil || second.JSON429.Code != "too_many_requests" {
			t.Fatalf("second request: %d %s", second.StatusCode(), second.Body)
		}
		// The client goes away; the hung upstream is then stopped, which ends the run.
		first, _ := stream.Event().AsMessageEvent()
		stream.Close()
		if _, err := c.StopChatMessageWithResponse(ctx, first.TaskId.String(), client.StopChatMessageJSONRequestBody{User: "h"}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			r, _ := c.SendChatMessageWithResponse(ctx, nil, client.SendChatMessageJSONRequestBody{Query: marker(t, "after"), User: "i", Inputs: map[string]any{}})
			if r.StatusCode() == 200 {
				return
			}
			if r.StatusCode() != 429 || time.Now().After(deadline) {
				t.Fatalf("after the stream ended: %d %s", r.StatusCode(), r.Body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestEndedConversation ends a conversation with the CLI while the server runs: the next
// message gets conversation_completed, history stays readable.
func TestEndedConversation(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		if p.engine.Name == "" {
			t.Skip("needs the CLI")
		}
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		r, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "hello"), "jo", false))
		if err != nil || r.JSON200 == nil {
			t.Fatalf("%v %s", err, r.Body)
		}
		conv := r.JSON200.ConversationId.String()
		p.CLI(t, "conversations", "end", "--app", "chatbot", conv)
		next := chatBody("again", "jo", false)
		next.ConversationId = &conv
		again, _ := c.SendChatMessageWithResponse(ctx, nil, next)
		if again.StatusCode() != 400 || again.JSON400 == nil || again.JSON400.Code != "conversation_completed" {
			t.Fatalf("message to ended conversation: %d %s", again.StatusCode(), again.Body)
		}
		user := "jo"
		if h, _ := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conv, User: &user}); h.JSON200 == nil || len(h.JSON200.Data) != 1 {
			t.Fatalf("history of ended conversation: %s", h.Body)
		}
		if out, err := p.run("conversations", "end", "--app", "chatbot", "7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"); err == nil || !strings.Contains(out, "has no conversation") {
			t.Fatalf("ending an unknown conversation: %v %q", err, out)
		}
	})
}
