package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// agentAppDSL is a Dify DSL 0.7.0 export of an Agent app: the app names an agent package whose
// soul has a model, a prompt, a built-in tool and one Parley does not have, a knowledge base,
// app features (citations on, which an Agent app never gives) and one app variable.
func agentAppDSL(prompt, greeting string) string {
	return `version: 0.7.0
kind: app
app: {name: Desk Agent, mode: agent, description: Computes and looks up.}
agent: {package_ref: agent-1}
agent_packages:
  agent-1:
    schema_version: 1
    metadata: {name: Desk, role: Clerk}
    soul:
      schema_version: 1
      model: {plugin_id: langgenius/openai, model_provider: langgenius/openai/openai, model: gpt-4o-mini, model_settings: {}}
      prompt: {system_prompt: '` + prompt + `'}
      tools:
        dify_tools:
        - {provider_type: builtin, provider_id: maths, tool_name: eval_expression, runtime_parameters: {}}
        - {provider_type: builtin, provider_id: wikipedia, tool_name: wikipedia_search, runtime_parameters: {}}
        cli_tools: []
      knowledge: {datasets: [{id: handbook, name: handbook}]}
      app_features:
        opening_statement: '` + greeting + `'
        suggested_questions: [Add two numbers]
        suggested_questions_after_answer: {enabled: true}
        retriever_resource: {enabled: true}
      app_variables: [{name: who, type: string, required: true}]
    omitted_assets: []
`
}

// TestAgentApp imports an Agent app (mode agent) and runs it over HTTP: the imported agent is an
// unpublished draft, so the API refuses it with agent_not_published; once published, a stream
// (response_mode omitted) carries the steps and chunks, one closing message with the whole
// answer and a message_end without retriever_resources; the API keeps running the published
// version while the draft changes, until the draft is published; an archived agent leaves the
// app without a bound agent.
func TestAgentApp(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		dir := t.TempDir()
		v1, v2 := filepath.Join(dir, "v1.yml"), filepath.Join(dir, "v2.yml")
		mark := strings.ReplaceAll(t.Name(), "/", "-")
		if err := os.WriteFile(v1, []byte(agentAppDSL("First instructions for {{who}} "+mark+".", "Version one.")), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(v2, []byte(agentAppDSL("Second instructions for {{who}} "+mark+".", "Version two.")), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := p.cliOut("apps", "import", "--strict", v1); err == nil ||
			!strings.Contains(stderr, `agent_packages.agent-1.soul.tools.dify_tools[1]: tool "wikipedia_search" of provider "wikipedia" (builtin) is not available on this server`) {
			t.Fatalf("import with a missing tool: %v\n%s", err, stderr)
		}
		if name := p.CLI(t, "apps", "import", v1); name != "Desk Agent" {
			t.Fatalf("import printed %q", name)
		}
		key := p.CLI(t, "keys", "create", "--app", "Desk Agent")
		c := newClient(t, p, key)

		info, err := c.GetAppInfoWithResponse(ctx, &client.GetAppInfoParams{})
		if err != nil || info.JSON200 == nil || info.JSON200.Mode != "agent" || info.JSON200.Name != "Desk Agent" {
			t.Fatalf("info: %v %s", err, info.Body)
		}
		meta, err := c.GetAppMetaWithResponse(ctx, &client.GetAppMetaParams{})
		if err != nil || meta.JSON200 == nil || len(meta.JSON200.ToolIcons) != 0 {
			t.Fatalf("meta: %v %s", err, meta.Body)
		}
		params := func() *client.GetAppParametersResponse {
			t.Helper()
			r, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		send := func(body string) (int, []byte) {
			t.Helper()
			return rawCall(t, p, "POST", "/chat-messages", body, key)
		}
		q := marker(t, "what is six times seven")
		msg := func(query, mode string) string {
			b := `{"query":` + jsonString(query) + `,"inputs":{"who":"Ada"},"user":"u1"`
			if mode != "" {
				b += `,"response_mode":"` + mode + `"`
			}
			return b + "}"
		}

		// Imported as a draft: not published yet. Blocking is refused first, and a blank query.
		r := params()
		segErr(t, "parameters of a draft", r.StatusCode(), r.Body, 400, "agent_not_published",
			"Agent has not been published. Please publish the Agent before using the API.")
		st, body := send(msg(q, ""))
		segErr(t, "message to a draft", st, body, 400, "agent_not_published",
			"Agent has not been published. Please publish the Agent before using the API.")
		st, body = send(msg(q, "blocking"))
		segErr(t, "blocking", st, body, 400, "bad_request", "Agent App only supports streaming response mode.")
		st, body = send(msg("  ", "streaming"))
		segErr(t, "blank query", st, body, 400, "invalid_param", "query is required")
		st, body = send(`{"inputs":{},"user":"u1","response_mode":"streaming"}`)
		wantError(t, "no query", st, body, 400, "invalid_param")

		p.CLI(t, "apps", "publish", "Desk Agent")
		r = params()
		if r.JSON200 == nil || r.JSON200.OpeningStatement != "Version one." || len(r.JSON200.UserInputForm) != 1 ||
			r.JSON200.UserInputForm[0]["text-input"].Variable != "who" || r.JSON200.RetrieverResource.Enabled {
			t.Fatalf("parameters of version 1: %s", r.Body)
		}

		// Published: the stream, response_mode omitted, with a file that is accepted and not
		// given to the model.
		img := pngBytes(t)
		remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(img)
		}))
		defer remote.Close()
		upstream.OnEach(q, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"6*7"}`}},
		}, openaitest.Reply{Chunks: []string{"It is ", "42."}})
		seen := len(upstream.Requests())
		sb := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"who": "Ada"},
			Files: &[]client.FileReference{{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodRemoteUrl, Url: ptr(remote.URL + "/dot.png")}}}
		var names []string
		var closing, answer, conversation string
		var end client.MessageEndEvent
		for _, ev := range streamEvents(t, c, sb) {
			name := eventName(t, ev)
			names = append(names, name)
			switch name {
			case "agent_thought":
				th, _ := ev.AsAgentThoughtEvent()
				conversation = th.ConversationId.String()
			case "agent_message":
				m, _ := ev.AsAgentMessageEvent()
				answer += m.Answer
			case "message":
				m, _ := ev.AsMessageEvent()
				closing = m.Answer
			case "message_end":
				end, _ = ev.AsMessageEndEvent()
			}
		}
		if got := strings.Join(names, " "); got != "agent_thought agent_thought agent_thought agent_thought agent_message agent_message agent_thought message message_end" {
			t.Fatalf("events %s", got)
		}
		if answer != "It is 42." || closing != "It is 42." || end.Metadata.RetrieverResources != nil {
			t.Fatalf("answer %q, closing message %q, message_end metadata %+v", answer, closing, end.Metadata)
		}
		systemOf := func(from int, query string) string {
			t.Helper()
			for _, req := range upstream.Requests()[from:] {
				if req.LastUserMessage() != query {
					continue
				}
				for _, m := range req.Messages {
					if m.Role == providers.RoleUser && len(m.Parts) > 0 {
						t.Fatalf("the model was given the message's files: %+v", m.Parts)
					}
				}
				if len(req.Messages) > 0 && req.Messages[0].Role == providers.RoleSystem {
					return req.Messages[0].Text()
				}
				return ""
			}
			t.Fatalf("no model call saw %q", query)
			return ""
		}
		if sys := systemOf(seen, q); !strings.Contains(sys, "First instructions for Ada") {
			t.Fatalf("system prompt %q", sys)
		}
		msgs, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conversation, User: ptr("u1")})
		if err != nil || msgs.JSON200 == nil || len(msgs.JSON200.Data) != 1 || msgs.JSON200.Data[0].Answer != "It is 42." ||
			len(msgs.JSON200.Data[0].AgentThoughts) != 2 || len(msgs.JSON200.Data[0].MessageFiles) != 1 {
			t.Fatalf("messages: %v %s", err, msgs.Body)
		}
		convs, err := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: ptr(client.User("u1"))})
		if err != nil || convs.JSON200 == nil || len(convs.JSON200.Data) != 1 {
			t.Fatalf("conversations: %v %s", err, convs.Body)
		}
		// The routes that call the model use the published agent's model and features.
		sug, err := c.GetSuggestedQuestionsWithResponse(ctx, end.MessageId.String(), &client.GetSuggestedQuestionsParams{User: "u1"})
		if err != nil || sug.JSON200 == nil || strings.Join(sug.JSON200.Data, "|") != "Why?|How?|When?" {
			t.Fatalf("suggested: %v %s", err, sug.Body)
		}
		ren, err := c.RenameConversationWithResponse(ctx, conversation, client.RenameConversationJSONRequestBody{AutoGenerate: ptr(true), User: ptr("u1")})
		if err != nil || ren.JSON200 == nil || ren.JSON200.Name != generatedTitle {
			t.Fatalf("auto rename: %v %s", err, ren.Body)
		}

		// A new draft is not what the API runs, until it is published.
		p.CLI(t, "agents", "draft", "--lenient", "Desk Agent", v2)
		if r = params(); r.JSON200 == nil || r.JSON200.OpeningStatement != "Version one." {
			t.Fatalf("parameters with a newer draft: %s", r.Body)
		}
		q2 := marker(t, "draft or published")
		upstream.OnEach(q2, openaitest.Reply{Chunks: []string{"Fine."}}, openaitest.Reply{Chunks: []string{"Fine."}})
		seen = len(upstream.Requests())
		sb = client.SendChatMessageJSONRequestBody{Query: q2, User: "u1", Inputs: map[string]any{"who": "Ada"}, ResponseMode: ptr(client.Streaming)}
		streamEvents(t, c, sb)
		if sys := systemOf(seen, q2); !strings.Contains(sys, "First instructions") {
			t.Fatalf("with a newer draft the API ran %q", sys)
		}
		p.CLI(t, "agents", "publish", "Desk Agent")
		if r = params(); r.JSON200 == nil || r.JSON200.OpeningStatement != "Version two." {
			t.Fatalf("parameters of version 2: %s", r.Body)
		}
		seen = len(upstream.Requests())
		streamEvents(t, c, sb)
		if sys := systemOf(seen, q2); !strings.Contains(sys, "Second instructions for Ada") {
			t.Fatalf("after publishing the draft the API ran %q", sys)
		}
		if out := p.CLI(t, "apps", "list"); !strings.Contains(out, "agent version 2") {
			t.Fatalf("apps list:\n%s", out)
		}
		exported := p.CLI(t, "apps", "export", "Desk Agent")
		if !strings.Contains(exported, "package_ref: agent-1") || !strings.Contains(exported, "Second instructions") {
			t.Fatalf("export:\n%s", exported)
		}

		// The exact stream, checked against the contract.
		gq := marker(t, "golden agent app")
		upstream.OnEach(gq, openaitest.Reply{
			Chunks:    []string{"Let me compute."},
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"2**10"}`}},
			Usage:     &providers.Usage{PromptTokens: 40, CompletionTokens: 12},
		}, openaitest.Reply{Chunks: []string{"It is ", "1024."}, Usage: &providers.Usage{PromptTokens: 60, CompletionTokens: 4}})
		req, _ := newRequest("POST", p.URL+"/chat-messages", `{"query":"`+gq+`","inputs":{"who":"Ada"},"user":"golden"}`, key)
		got := httpTranscript(rawDo(t, req))
		golden(t, "agent_app_streaming.sse.golden", normalize(strings.TrimRight(got, "\n")+"\n"))

		// Archived: no bound agent.
		p.CLI(t, "agents", "archive", "Desk Agent")
		st, body = send(msg(q, "streaming"))
		segErr(t, "message without a bound agent", st, body, 400, "invalid_param", "Agent App has no bound Agent")
		r = params()
		wantError(t, "parameters without a bound agent", r.StatusCode(), r.Body, 400, "app_unavailable")
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
