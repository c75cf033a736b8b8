package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// The moderation every app of these tests declares: keywords on both sides.
const (
	inputPreset  = "Let us talk about something else."
	outputPreset = "The answer was withheld."
)

func moderationRule(typ string) string {
	return `{enabled: true, type: ` + typ + `, config: {keywords: "blasphemy\nHeresy", ` +
		`inputs_config: {enabled: true, preset_response: "` + inputPreset + `"}, ` +
		`outputs_config: {enabled: true, preset_response: "` + outputPreset + `"}}}`
}

// importApp imports doc under the test's own name and returns a key of the app.
func importApp(t *testing.T, p *Parley, doc string, args ...string) *client.ClientWithResponses {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.yml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	name := p.CLI(t, append(append([]string{"apps", "import"}, args...), path)...)
	return newClient(t, p, p.CLI(t, "keys", "create", "--app", name))
}

func guardedChat(name, mode, typ string) string {
	doc := `app: {name: ` + name + `, mode: ` + mode + `}
kind: app
version: 0.6.0
model_config:
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You are careful.
  sensitive_word_avoidance: ` + moderationRule(typ) + "\n"
	if mode == "agent-chat" {
		doc += "  agent_mode: {enabled: true, strategy: function_call, max_iteration: 3, tools: []}\n"
	}
	return doc
}

// trace is a stream as a line: each event's name, runs of message (or agent_message) events
// merged as name×count[text], message_replace with its answer and reason; node events are left
// out. It also returns the message id.
func trace(t *testing.T, evs []client.ChatStreamEvent) (string, string) {
	t.Helper()
	var parts []string
	var run, text, id string
	n := 0
	flush := func() {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s×%d[%s]", run, n, text))
		}
		run, text, n = "", "", 0
	}
	for _, ev := range evs {
		name := eventName(t, ev)
		switch name {
		case "message", "agent_message":
			var answer string
			if name == "message" {
				m, _ := ev.AsMessageEvent()
				answer, id = m.Answer, m.MessageId.String()
			} else {
				m, _ := ev.AsAgentMessageEvent()
				answer, id = m.Answer, m.MessageId.String()
			}
			if run != name {
				flush()
				run = name
			}
			n++
			text += answer
		case "node_started", "node_finished", "agent_thought":
		case "message_replace":
			flush()
			m, _ := ev.AsMessageReplaceEvent()
			s := "message_replace[" + m.Answer + "]"
			if m.Reason != nil {
				s += "(" + *m.Reason + ")"
			}
			parts = append(parts, s)
		case "workflow_finished":
			flush()
			f, _ := ev.AsWorkflowFinishedEvent()
			s := "workflow_finished(" + string(f.Data.Status)
			if f.Data.Error != nil {
				s += ": " + *f.Data.Error
			}
			parts = append(parts, s+")")
		case "error":
			flush()
			e, _ := ev.AsErrorEvent()
			parts = append(parts, "error("+e.Code+")")
		default:
			flush()
			parts = append(parts, name)
		}
	}
	flush()
	return strings.Join(parts, " "), id
}

// chatCalls counts the chat requests the upstream got whose user message contains q.
func chatCalls(q string) int {
	n := 0
	for _, r := range upstream.Requests() {
		if strings.HasSuffix(r.Path, "/chat/completions") && strings.Contains(r.LastUserMessage(), q) {
			n++
		}
	}
	return n
}

// storedAnswer is the answer GET /messages lists for the conversation's last message.
func storedAnswer(t *testing.T, c *client.ClientWithResponses, conversation string) string {
	t.Helper()
	msgs, err := c.ListMessagesWithResponse(context.Background(), &client.ListMessagesParams{ConversationId: conversation, User: ptr("u1")})
	if err != nil || msgs.JSON200 == nil || len(msgs.JSON200.Data) == 0 {
		t.Fatalf("messages: %v %s", err, msgs.Body)
	}
	return msgs.JSON200.Data[len(msgs.JSON200.Data)-1].Answer
}

func moderationBody(q string, streaming bool, inputs map[string]any) client.SendChatMessageJSONRequestBody {
	mode := client.Blocking
	if streaming {
		mode = client.Streaming
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	return client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: inputs, ResponseMode: &mode, AutoGenerateName: ptr(false)}
}

// boundedStream reads a stream that must end within a minute (a run the moderation must stop).
func boundedStream(t *testing.T, c *client.ClientWithResponses, body client.SendChatMessageJSONRequestBody) []client.ChatStreamEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return streamEventsCtx(ctx, t, c, body)
}

// conversationOf is the conversation id of a chat stream's first event that has one.
func conversationOf(t *testing.T, evs []client.ChatStreamEvent) string {
	t.Helper()
	for _, ev := range evs {
		if m, err := ev.AsMessageEndEvent(); err == nil && m.Event == "message_end" {
			return m.ConversationId.String()
		}
	}
	t.Fatal("no message_end")
	return ""
}

// TestModerationChatbot: a Chatbot with keywords moderation answers a flagged query with the
// preset response, one character per message event, then message_end, without calling the model,
// and stores it; blocking returns it as the answer. A flagged answer is followed by
// message_replace (no reason) before message_end and stored as the preset; blocking returns the
// preset. An answer flagged while the model still streams stops the model.
func TestModerationChatbot(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := importApp(t, p, guardedChat("Guarded Bot", "chat", "keywords"))
		ctx := context.Background()
		par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || par.JSON200 == nil || !par.JSON200.SensitiveWordAvoidance.Enabled {
			t.Fatalf("parameters: %v %s", err, par.Body)
		}

		q := marker(t, "tell me about BLASPHEMY")
		evs := streamEvents(t, c, moderationBody(q, true, nil))
		got, _ := trace(t, evs)
		if want := fmt.Sprintf("message×%d[%s] message_end", len(inputPreset), inputPreset); got != want {
			t.Fatalf("flagged query:\n got %s\nwant %s", got, want)
		}
		if n := chatCalls(q); n != 0 {
			t.Fatalf("the model was called %d times", n)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != inputPreset {
			t.Fatalf("stored %q", a)
		}
		r, err := c.SendChatMessageWithResponse(ctx, nil, moderationBody(q+" again", false, nil))
		if err != nil || r.JSON200 == nil || r.JSON200.Answer != inputPreset {
			t.Fatalf("blocking flagged query: %v %s", err, r.Body)
		}

		q = marker(t, "what do heretics say")
		upstream.On(q, openaitest.Reply{Chunks: []string{"They speak ", "of heresy", "."}})
		evs = streamEvents(t, c, moderationBody(q, true, nil))
		got, _ = trace(t, evs)
		if want := "message×3[They speak of heresy.] message_replace[" + outputPreset + "] message_end"; got != want {
			t.Fatalf("flagged answer:\n got %s\nwant %s", got, want)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != outputPreset {
			t.Fatalf("stored %q", a)
		}
		r, err = c.SendChatMessageWithResponse(ctx, nil, moderationBody(q, false, nil))
		if err != nil || r.JSON200 == nil || r.JSON200.Answer != outputPreset {
			t.Fatalf("blocking flagged answer: %v %s", err, r.Body)
		}

		// Over 300 characters the answer is checked while it streams; this model then hangs,
		// and only the moderation ends the run.
		q = marker(t, "a long sermon")
		long := []string{"Heresy ", strings.Repeat("and more words ", 25)}
		upstream.On(q, openaitest.Reply{Chunks: append(long, "never sent"), HangAfterChunks: 2})
		evs = boundedStream(t, c, moderationBody(q, true, nil))
		got, _ = trace(t, evs)
		if want := "message×2[" + strings.Join(long, "") + "] message_replace[" + outputPreset + "] message_end"; got != want {
			t.Fatalf("flagged while streaming:\n got %s\nwant %s", got, want)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != outputPreset {
			t.Fatalf("stored %q", a)
		}

		// Clean both ways: untouched.
		q = marker(t, "a calm question")
		upstream.On(q, openaitest.Reply{Text: "A calm answer."})
		if got, _ := trace(t, streamEvents(t, c, moderationBody(q, true, nil))); got != "message×3[A calm answer.] message_end" {
			t.Fatalf("clean: %s", got)
		}
	})
}

// TestModerationOpenAI: openai_moderation asks the config's moderation model (the fake upstream's
// /moderations): a flagged query gets the preset, a flagged answer is replaced; a moderation
// model that fails refuses the query (error event) but lets an answer through.
func TestModerationOpenAI(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := importApp(t, p, guardedChat("Moderated Bot", "chat", "openai_moderation"))
		flag := marker(t, "flag-this")
		upstream.On(flag, openaitest.Reply{Flagged: true})
		broken := marker(t, "moderation-down")
		upstream.On(broken, openaitest.Reply{Status: 503, ErrorMessage: "moderation unavailable"})

		q := "about " + flag
		got, _ := trace(t, streamEvents(t, c, moderationBody(q, true, map[string]any{})))
		if want := fmt.Sprintf("message×%d[%s] message_end", len(inputPreset), inputPreset); got != want {
			t.Fatalf("flagged query:\n got %s\nwant %s", got, want)
		}
		if n := chatCalls(q); n != 0 {
			t.Fatalf("the model was called %d times", n)
		}

		q = marker(t, "say something rude")
		upstream.On(q, openaitest.Reply{Text: "Here it is: " + flag})
		got, _ = trace(t, streamEvents(t, c, moderationBody(q, true, nil)))
		if !strings.HasSuffix(got, "message_replace["+outputPreset+"] message_end") {
			t.Fatalf("flagged answer: %s", got)
		}

		got, _ = trace(t, streamEvents(t, c, moderationBody("about "+broken, true, nil)))
		if got != "error(completion_request_error)" {
			t.Fatalf("failing input moderation: %s", got)
		}
		q = marker(t, "an answer moderation cannot check")
		upstream.On(q, openaitest.Reply{Text: "Unchecked " + broken})
		evs := streamEvents(t, c, moderationBody(q, true, nil))
		got, _ = trace(t, evs)
		if strings.Contains(got, "message_replace") || !strings.HasSuffix(got, "message_end") {
			t.Fatalf("failing output moderation: %s", got)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); !strings.HasPrefix(a, "Unchecked ") {
			t.Fatalf("stored %q", a)
		}
	})
}

// TestModerationLegacyAgent: a Legacy Agent answers a flagged query with the preset as message
// events (not agent_message), as Dify does, and replaces a flagged answer.
func TestModerationLegacyAgent(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := importApp(t, p, guardedChat("Guarded Agent", "agent-chat", "keywords"))
		q := marker(t, "explain heresy")
		got, _ := trace(t, streamEvents(t, c, moderationBody(q, true, nil)))
		if want := fmt.Sprintf("message×%d[%s] message_end", len(inputPreset), inputPreset); got != want {
			t.Fatalf("flagged query:\n got %s\nwant %s", got, want)
		}
		if n := chatCalls(q); n != 0 {
			t.Fatalf("the model was called %d times", n)
		}
		q = marker(t, "what is forbidden")
		upstream.On(q, openaitest.Reply{Chunks: []string{"It is ", "blasphemy."}})
		evs := streamEvents(t, c, moderationBody(q, true, nil))
		got, _ = trace(t, evs)
		if want := "agent_message×2[It is blasphemy.] message_replace[" + outputPreset + "] message_end"; got != want {
			t.Fatalf("flagged answer:\n got %s\nwant %s", got, want)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != outputPreset {
			t.Fatalf("stored %q", a)
		}
	})
}

// TestModerationChatflow: a Chatflow answers a flagged query with the preset in one message and
// message_end, before any workflow event (the graph never runs); a flagged answer gets
// message_replace with reason output_moderation before message_end and workflow_finished; one
// flagged while the LLM node streams stops the run (workflow_finished stopped, then
// message_end). Blocking returns the preset.
func TestModerationChatflow(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		raw, err := os.ReadFile(filepath.Join("..", "docs", "examples", "chatflow-basic.yml"))
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(raw), "    file_upload: {enabled: false}\n",
			"    file_upload: {enabled: false}\n    sensitive_word_avoidance: "+moderationRule("keywords")+"\n", 1)
		c := importApp(t, p, doc, "--publish")
		inputs := map[string]any{"name": "Ada"}

		q := marker(t, "a question on heresy")
		evs := streamEvents(t, c, moderationBody(q, true, inputs))
		got, _ := trace(t, evs)
		if want := "message×1[" + inputPreset + "] message_end"; got != want {
			t.Fatalf("flagged query:\n got %s\nwant %s", got, want)
		}
		if n := chatCalls(q); n != 0 {
			t.Fatalf("the model was called %d times", n)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != inputPreset {
			t.Fatalf("stored %q", a)
		}
		r, err := c.SendChatMessageWithResponse(context.Background(), nil, moderationBody(q, false, map[string]any{"name": "Blasphemy"}))
		if err != nil || r.JSON200 == nil || r.JSON200.Answer != inputPreset {
			t.Fatalf("blocking flagged input: %v %s", err, r.Body)
		}

		q = marker(t, "what do heretics say in a flow")
		upstream.On(q, openaitest.Reply{Chunks: []string{"They speak ", "of heresy."}})
		evs = streamEvents(t, c, moderationBody(q, true, inputs))
		got, _ = trace(t, evs)
		if !strings.HasPrefix(got, "workflow_started message×") ||
			!strings.HasSuffix(got, "They speak of heresy.] message_replace["+outputPreset+"](output_moderation) message_end workflow_finished(succeeded)") {
			t.Fatalf("flagged answer: %s", got)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != outputPreset {
			t.Fatalf("stored %q", a)
		}
		r, err = c.SendChatMessageWithResponse(context.Background(), nil, moderationBody(q, false, inputs))
		if err != nil || r.JSON200 == nil || r.JSON200.Answer != outputPreset {
			t.Fatalf("blocking flagged answer: %v %s", err, r.Body)
		}

		q = marker(t, "a long flow sermon")
		upstream.On(q, openaitest.Reply{Chunks: []string{"Heresy ", strings.Repeat("and more words ", 25), "never sent"}, HangAfterChunks: 2})
		got, _ = trace(t, boundedStream(t, c, moderationBody(q, true, inputs)))
		if !strings.HasSuffix(got, "message_replace["+outputPreset+"](output_moderation) workflow_finished(stopped: Stopped by output moderation.) message_end") {
			t.Fatalf("flagged while streaming: %s", got)
		}
	})
}

// TestModerationCompletion: a Completion app answers a flagged input with the preset, one
// character per message event, and replaces a flagged text with message_replace (its own
// contract event, without conversation_id) before message_end; blocking returns the preset.
func TestModerationCompletion(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := importApp(t, p, `app: {name: Guarded Writer, mode: completion}
kind: app
version: 0.6.0
model_config:
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: Write about {{topic}}.
  user_input_form:
  - text-input: {label: Topic, variable: topic, required: true}
  sensitive_word_avoidance: `+moderationRule("keywords")+"\n")
		body := func(topic string, streaming bool) client.SendCompletionMessageJSONRequestBody {
			mode := client.CompletionBlocking
			if streaming {
				mode = client.CompletionStreaming
			}
			return client.SendCompletionMessageJSONRequestBody{Inputs: map[string]any{"topic": topic}, User: "u1", ResponseMode: &mode}
		}
		line := func(evs []client.CompletionStreamEvent) string {
			var parts []string
			text, n := "", 0
			for _, ev := range evs {
				switch completionEventName(t, ev) {
				case "message":
					m, _ := ev.AsCompletionMessageEvent()
					text, n = text+m.Answer, n+1
				case "message_replace":
					m, _ := ev.AsCompletionMessageReplaceEvent()
					parts = append(parts, fmt.Sprintf("message×%d[%s]", n, text), "message_replace["+m.Answer+"]")
					text, n = "", 0
				default:
					if n > 0 {
						parts = append(parts, fmt.Sprintf("message×%d[%s]", n, text))
					}
					text, n = "", 0
					parts = append(parts, completionEventName(t, ev))
				}
			}
			return strings.Join(parts, " ")
		}

		topic := marker(t, "heresy")
		if got, want := line(completionEvents(t, c, body(topic, true))), fmt.Sprintf("message×%d[%s] message_end", len(inputPreset), inputPreset); got != want {
			t.Fatalf("flagged input:\n got %s\nwant %s", got, want)
		}
		if n := chatCalls(topic); n != 0 {
			t.Fatalf("the model was called %d times", n)
		}
		r, err := c.SendCompletionMessageWithResponse(context.Background(), nil, body(topic, false))
		if err != nil || r.JSON200 == nil || r.JSON200.Answer != inputPreset {
			t.Fatalf("blocking flagged input: %v %s", err, r.Body)
		}

		topic = marker(t, "old sermons")
		upstream.On(topic, openaitest.Reply{Chunks: []string{"Full of ", "blasphemy."}})
		if got, want := line(completionEvents(t, c, body(topic, true))), "message×2[Full of blasphemy.] message_replace["+outputPreset+"] message_end"; got != want {
			t.Fatalf("flagged text:\n got %s\nwant %s", got, want)
		}
		r, err = c.SendCompletionMessageWithResponse(context.Background(), nil, body(topic, false))
		if err != nil || r.JSON200 == nil || r.JSON200.Answer != outputPreset {
			t.Fatalf("blocking flagged text: %v %s", err, r.Body)
		}
	})
}

// TestModerationAgentApp: an Agent app moderates with its published Agent's features: a flagged
// query gets the preset in one message event, as Dify's Agent app sends it, and a flagged answer
// is replaced after its closing message.
func TestModerationAgentApp(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		doc := strings.Replace(agentAppDSL("Be careful with {{who}}.", "Hello."),
			"        retriever_resource: {enabled: true}\n",
			"        retriever_resource: {enabled: true}\n        sensitive_word_avoidance: "+moderationRule("keywords")+"\n", 1)
		c := importApp(t, p, doc, "--lenient")
		p.CLI(t, "apps", "publish", "Desk Agent")
		inputs := map[string]any{"who": "Ada"}

		q := marker(t, "agent, explain heresy")
		got, _ := trace(t, streamEvents(t, c, moderationBody(q, true, inputs)))
		if want := "message×1[" + inputPreset + "] message_end"; got != want {
			t.Fatalf("flagged query:\n got %s\nwant %s", got, want)
		}
		if n := chatCalls(q); n != 0 {
			t.Fatalf("the model was called %d times", n)
		}

		q = marker(t, "agent, what is forbidden")
		upstream.On(q, openaitest.Reply{Chunks: []string{"It is ", "blasphemy."}})
		evs := streamEvents(t, c, moderationBody(q, true, inputs))
		got, _ = trace(t, evs)
		if !strings.HasSuffix(got, "message×1[It is blasphemy.] message_replace["+outputPreset+"] message_end") {
			t.Fatalf("flagged answer: %s", got)
		}
		if a := storedAnswer(t, c, conversationOf(t, evs)); a != outputPreset {
			t.Fatalf("stored %q", a)
		}
	})
}
