package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// These tests import Dify DSL exports written as Dify writes them and check, through the fake
// upstream, that the model receives exactly what Dify would send it.

// advancedChatExport is a Chatbot with an advanced prompt for a chat model: a system message
// with an input, {{#query#}} (which Dify leaves as text in chat messages) and {{#context#}}, and
// an example exchange. Its completion parameters carry an empty stop list, as exports do.
const advancedChatExport = `app:
  description: ''
  icon: "\U0001F6CE"
  icon_background: '#FFEAD5'
  mode: chat
  name: Concierge
  use_icon_as_answer_icon: false
kind: app
model_config:
  agent_mode: {enabled: false, max_iteration: 5, strategy: function_call, tools: []}
  annotation_reply: {enabled: false}
  chat_prompt_config:
    prompt:
    - role: system
      text: "You are the concierge of {{hotel}}. Guests ask about {{#query#}}.\n{{#context#}}"
    - role: user
      text: What can you do?
    - role: assistant
      text: I book tables at {{hotel}}.
  completion_prompt_config: {}
  dataset_configs: {datasets: {datasets: []}, retrieval_model: multiple}
  dataset_query_variable: ''
  external_data_tools: []
  model:
    completion_params: {max_tokens: 512, stop: [], temperature: 0.2}
    mode: chat
    name: gpt-4o-mini
    provider: langgenius/openai/openai
  more_like_this: {enabled: false}
  opening_statement: Welcome!
  pre_prompt: ''
  prompt_type: advanced
  retriever_resource: {enabled: true}
  sensitive_word_avoidance: {configs: [], enabled: false, type: ''}
  speech_to_text: {enabled: false}
  suggested_questions: []
  suggested_questions_after_answer: {enabled: false}
  text_to_speech: {enabled: false, language: '', voice: ''}
  user_input_form:
  - text-input: {default: '', label: Hotel, max_length: 48, required: true, variable: hotel}
version: 0.1.5
`

// completionModelChatExport is a Chatbot whose model is a completion model: its prompt is a text
// with the history (turns labelled by the file's prefixes) and the query.
const completionModelChatExport = `app: {mode: chat, name: Old School Bot}
kind: app
model_config:
  chat_prompt_config: {}
  completion_prompt_config:
    conversation_histories_role: {assistant_prefix: Bot, user_prefix: Guest}
    prompt:
      text: "You chat with guests.\n<histories>\n{{#histories#}}\n</histories>\nGuest: {{#query#}}\nBot: "
  model: {completion_params: {stop: []}, mode: completion, name: gpt-3.5-turbo-instruct, provider: openai}
  prompt_type: advanced
version: 0.1.2
`

// completionExport is a Completion app with a completion-model prompt.
const completionExport = `app: {mode: completion, name: Sloganeer, icon: "\u270D", icon_background: '#FEF3C7'}
kind: app
model_config:
  completion_prompt_config:
    conversation_histories_role: {assistant_prefix: '', user_prefix: ''}
    prompt:
      text: "Write one slogan for {{product}}.\nHuman: {{#query#}}\nAssistant: "
  model: {completion_params: {max_tokens: 64, stop: []}, mode: completion, name: gpt-3.5-turbo-instruct, provider: langgenius/openai/openai}
  more_like_this: {enabled: false}
  prompt_type: advanced
  user_input_form:
  - paragraph: {label: Product, variable: product, required: true, default: ''}
version: 0.3.0
`

// importFile writes a DSL file and imports it with the CLI, returning a key of the app.
func importFile(t *testing.T, p *Parley, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := p.cliOut("apps", "import", path)
	if err != nil || stdout != name+"\n" {
		t.Fatalf("apps import: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}
	if strings.Contains(stderr, "not run:") {
		t.Errorf("import notes a setting as not run:\n%s", stderr)
	}
	return p.CLI(t, "keys", "create", "--app", name)
}

// upstreamCall is the last chat call the fake upstream received whose last user message
// contains mark.
func upstreamCall(t *testing.T, mark string) openaitest.Request {
	t.Helper()
	reqs := upstream.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].Path, "/chat/completions") && strings.Contains(reqs[i].LastUserMessage(), mark) {
			return reqs[i]
		}
	}
	t.Fatalf("the upstream never received %q", mark)
	return openaitest.Request{}
}

// prompt is a request's messages as "role: text" lines.
func prompt(r openaitest.Request) []string {
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.Role + ": " + m.Text()
	}
	return out
}

func wantPrompt(t *testing.T, what string, r openaitest.Request, want ...string) {
	t.Helper()
	got := prompt(r)
	if strings.Join(got, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Errorf("%s: the model received\n%s\nwant\n%s", what, strings.Join(got, "\n---\n"), strings.Join(want, "\n---\n"))
	}
}

// TestImportedAdvancedPrompts imports Chatbot and Completion exports with advanced prompts,
// for a chat model and for a completion model, and checks the messages the model receives on a
// conversation's first and second message, and the parameters.
func TestImportedAdvancedPrompts(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		noName := false
		chat := func(c *client.ClientWithResponses, query, conv string, inputs map[string]any) *client.ChatCompletionResponse {
			t.Helper()
			body := client.SendChatMessageJSONRequestBody{Query: query, User: "guest", Inputs: inputs,
				ResponseMode: ptr(client.Blocking), AutoGenerateName: &noName}
			if conv != "" {
				body.ConversationId = &conv
			}
			resp, err := c.SendChatMessageWithResponse(ctx, nil, body)
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("chat: %v %s", err, resp.Body)
			}
			return resp.JSON200
		}

		// A chat model: the prompt messages filled in, the history, then the query.
		bot := newClient(t, p, importFile(t, p, "Concierge", advancedChatExport))
		q1, q2 := marker(t, "a table for two"), marker(t, "and for four")
		upstream.On(q1, openaitest.Reply{Text: "Booked for two."})
		first := chat(bot, q1, "", map[string]any{"hotel": "the Ritz"})
		call := upstreamCall(t, q1)
		wantPrompt(t, "chat model, first message", call,
			"system: You are the concierge of the Ritz. Guests ask about {#query#}.\n",
			"user: What can you do?",
			"assistant: I book tables at the Ritz.",
			"user: "+q1)
		if _, ok := call.Params["stop"]; ok || call.Params["temperature"] != 0.2 || call.Params["max_tokens"] != float64(512) {
			t.Errorf("parameters sent: %s", call.Body)
		}
		chat(bot, q2, first.ConversationId.String(), map[string]any{"hotel": "the Ritz"})
		wantPrompt(t, "chat model, second message", upstreamCall(t, q2),
			"system: You are the concierge of the Ritz. Guests ask about {#query#}.\n",
			"user: What can you do?",
			"assistant: I book tables at the Ritz.",
			"user: "+q1,
			"assistant: Booked for two.",
			"user: "+q2)

		// A Chatbot on a completion model: one text, the history as labelled turns. On a
		// conversation's first message Dify has no memory yet and leaves {{#histories#}} as text.
		old := newClient(t, p, importFile(t, p, "Old School Bot", completionModelChatExport))
		q3, q4 := marker(t, "hello there"), marker(t, "how are you")
		upstream.On(q3, openaitest.Reply{Text: "Hello, guest."})
		first = chat(old, q3, "", map[string]any{})
		call = upstreamCall(t, q3)
		wantPrompt(t, "completion model, first message", call,
			"user: You chat with guests.\n<histories>\n{#histories#}\n</histories>\nGuest: "+q3+"\nBot: ")
		if call.Model != "gpt-3.5-turbo-instruct" {
			t.Errorf("model %q", call.Model)
		}
		chat(old, q4, first.ConversationId.String(), map[string]any{})
		wantPrompt(t, "completion model, second message", upstreamCall(t, q4),
			"user: You chat with guests.\n<histories>\nGuest: "+q3+"\nBot: Hello, guest.\n</histories>\nGuest: "+q4+"\nBot: ")

		// A Completion app on a completion model: the text, with the query when there is one
		// (without, {{#query#}} stays as text, as in Dify).
		writer := newClient(t, p, importFile(t, p, "Sloganeer", completionExport))
		product := marker(t, "a solar kettle")
		for _, query := range []string{"Make it short.", ""} {
			body := client.SendCompletionMessageJSONRequestBody{Inputs: map[string]any{"product": product}, User: "guest",
				ResponseMode: ptr(client.CompletionBlocking)}
			shown := "{#query#}"
			if query != "" {
				body.Query, shown = &query, query
			}
			resp, err := writer.SendCompletionMessageWithResponse(ctx, nil, body)
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("completion: %v %s", err, resp.Body)
			}
			call := upstreamCall(t, product)
			wantPrompt(t, "completion app, query "+query, call, "user: Write one slogan for "+product+".\nHuman: "+shown+"\nAssistant: ")
			if _, ok := call.Params["stop"]; ok || call.Params["max_tokens"] != float64(64) {
				t.Errorf("parameters sent: %s", call.Body)
			}
		}
	})
}

// citationsOffExport is a Chatbot that retrieves from the handbook knowledge base (named by
// its name, which resolves without a mapping) with citations turned off, and an advanced prompt
// that places the retrieved chunks itself.
const citationsOffExport = `app: {mode: chat, name: Quiet Librarian}
kind: app
model_config:
  chat_prompt_config:
    prompt:
    - {role: system, text: "Answer from the handbook:\n{{#context#}}"}
  dataset_configs:
    datasets:
      datasets:
      - dataset: {enabled: true, id: handbook}
    retrieval_model: multiple
  model: {completion_params: {temperature: 0}, mode: chat, name: gpt-4o-mini, provider: openai}
  prompt_type: advanced
  retriever_resource: {enabled: false}
version: 0.6.0
`

// knowledgeCompletionExport is a Completion app on a completion model that searches the handbook
// with its `question` input (dataset_query_variable), citations on.
const knowledgeCompletionExport = `app: {mode: completion, name: Handbook Answers}
kind: app
model_config:
  completion_prompt_config:
    prompt: {text: "Context:\n{{#context#}}\nQuestion: {{#query#}}\nAnswer:"}
  dataset_configs:
    datasets:
      datasets:
      - dataset: {enabled: true, id: handbook}
  dataset_query_variable: question
  model: {completion_params: {}, mode: completion, name: gpt-3.5-turbo-instruct, provider: openai}
  prompt_type: advanced
  retriever_resource: {enabled: true}
  user_input_form:
  - text-input: {label: Question, variable: question, required: true}
version: 0.6.0
`

// TestImportedKnowledge: an app with citations off still retrieves (the chunks reach the model,
// their hit counts go up) but returns no retriever_resources: an empty list in the blocking
// metadata, in message_end and in the history, as Dify does. A Completion app searches with its
// dataset query variable, whose value is also the prompt's query, and cites what it used.
func TestImportedKnowledge(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		kc := newClient(t, p, p.KnowledgeKey)
		ds := datasetByName(t, kc, "handbook")
		doc := indexText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: "staff handbook", Text: handbookText,
			IndexingTechnique: ptr(client.HighQuality), ProcessRule: paragraphRule()})
		vacation := listSegments(t, kc, ds, doc, nil).Data[0]

		c := newClient(t, p, importFile(t, p, "Quiet Librarian", citationsOffExport))
		params, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || params.JSON200 == nil || params.JSON200.RetrieverResource.Enabled {
			t.Fatalf("parameters: %v %s", err, params.Body)
		}
		q := marker(t, "how many days of paid vacation does every employee receive")
		upstream.On(q, openaitest.Reply{Text: "Twenty days."})
		noName := false
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "reader", Inputs: map[string]any{},
			ResponseMode: ptr(client.Blocking), AutoGenerateName: &noName}
		resp, err := c.SendChatMessageWithResponse(ctx, nil, body)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("blocking: %v %s", err, resp.Body)
		}
		var raw struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(resp.Body, &raw); err != nil || string(raw.Metadata["retriever_resources"]) != "[]" {
			t.Fatalf("blocking metadata: %v %s", err, resp.Body)
		}
		// The chunks themselves, not the simple prompt's context template, fill {{#context#}}.
		sys := upstreamCall(t, q).Messages[0]
		if sys.Role != "system" || !strings.HasPrefix(sys.Content, "Answer from the handbook:\n"+vacation.Content) ||
			strings.Contains(sys.Content, "<context>") {
			t.Fatalf("system prompt %q", sys.Content)
		}
		if n := getSegment(t, kc, ds, doc, vacation.Id.String()).HitCount; n != 1 {
			t.Errorf("hit_count %d, want 1", n)
		}

		hist, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: resp.JSON200.ConversationId.String(), User: ptr("reader")})
		if err != nil || hist.JSON200 == nil || len(hist.JSON200.Data) != 1 || len(hist.JSON200.Data[0].RetrieverResources) != 0 ||
			!strings.Contains(string(hist.Body), `"retriever_resources":[]`) {
			t.Fatalf("history: %v %s", err, hist.Body)
		}

		body.ResponseMode = ptr(client.Streaming)
		var end *client.MessageEndEvent
		for _, ev := range streamEvents(t, c, body) {
			if eventName(t, ev) == "message_end" {
				m, err := ev.AsMessageEndEvent()
				if err != nil {
					t.Fatal(err)
				}
				end = &m
			}
		}
		if end == nil || end.Metadata.RetrieverResources == nil || len(*end.Metadata.RetrieverResources) != 0 {
			t.Fatalf("message_end: %+v", end)
		}

		wc := newClient(t, p, importFile(t, p, "Handbook Answers", knowledgeCompletionExport))
		question := marker(t, "how many days of paid vacation does an employee receive each year")
		upstream.On(question, openaitest.Reply{Text: "Twenty."})
		cresp, err := wc.SendCompletionMessageWithResponse(ctx, nil, client.SendCompletionMessageJSONRequestBody{
			Inputs: map[string]any{"question": question}, Query: ptr("not what the prompt gets"), User: "reader",
			ResponseMode: ptr(client.CompletionBlocking)})
		if err != nil || cresp.JSON200 == nil || cresp.JSON200.Answer != "Twenty." {
			t.Fatalf("completion: %v %s", err, cresp.Body)
		}
		call := upstreamCall(t, question)
		text := call.LastUserMessage()
		if !strings.HasPrefix(text, "Context:\n"+vacation.Content+"\n") || !strings.HasSuffix(text, "\nQuestion: "+question+"\nAnswer:") {
			t.Fatalf("completion prompt %q", text)
		}
		if rs := cresp.JSON200.Metadata.RetrieverResources; len(rs) == 0 || rs[0].SegmentId != vacation.Id {
			t.Fatalf("completion citations: %s", cresp.Body)
		}
	})
}
