package conformance

import (
	"context"
	"encoding/base64"
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

// importedAgent is a Dify DSL export of a Legacy Agent app with a built-in tool and a tool Parley
// does not have.
const importedAgent = `app: {name: Maths Agent, mode: agent-chat, description: Computes things.}
kind: app
model_config:
  agent_mode:
    enabled: true
    strategy: function_call
    max_iteration: 3
    tools:
    - {enabled: true, provider_type: builtin, provider_id: maths, provider_name: maths, tool_name: eval_expression, tool_label: Evaluate Expression, tool_parameters: {}}
    - {enabled: true, provider_type: builtin, provider_id: wikipedia, provider_name: wikipedia, tool_name: wikipedia_search, tool_label: Wikipedia, tool_parameters: {}}
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You compute for {{who}}.
  prompt_type: simple
  user_input_form:
  - text-input: {label: Who, variable: who, required: true}
version: 0.6.0
`

// TestLegacyAgent imports a Legacy Agent app and runs it over HTTP: blocking is refused, a
// stream carries the steps as agent_thought (one id per step, re-sent as it fills in) and the
// answer as agent_message, and GET /messages lists the stored steps.
func TestLegacyAgent(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "agent.yml")
		if err := os.WriteFile(path, []byte(importedAgent), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := p.cliOut("apps", "import", "--strict", path); err == nil ||
			!strings.Contains(stderr, `model_config.agent_mode.tools[1]: tool "wikipedia_search" of provider "wikipedia" (builtin) is not available on this server`) {
			t.Fatalf("import with a missing tool: %v\n%s", err, stderr)
		}
		// Without --strict, as Dify imports a file whose tool plugins are not installed: the
		// tool is kept, marked missing, with a note.
		if name, stderr, err := p.cliOut("apps", "import", path); err != nil || strings.TrimSpace(name) != "Maths Agent" ||
			!strings.Contains(stderr, `parley: missing tool: model_config.agent_mode.tools[1]: tool "wikipedia_search" of provider "wikipedia" (builtin) is not available on this server; kept`) {
			t.Fatalf("import printed %q (%v)\n%s", name, err, stderr)
		}
		key := p.CLI(t, "keys", "create", "--app", "Maths Agent")
		c := newClient(t, p, key)

		q := marker(t, "what is six times seven")
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"who": "Ada"}}
		for _, mode := range []*client.ChatRequestResponseMode{nil, ptr(client.Blocking)} {
			body.ResponseMode = mode
			resp, err := c.SendChatMessageWithResponse(ctx, nil, body)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "blocking agent", resp.StatusCode(), resp.Body, http.StatusBadRequest, "bad_request")
		}

		upstream.OnEach(q, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"6*7"}`}},
		}, openaitest.Reply{Chunks: []string{"It is ", "42."}})
		body.ResponseMode = ptr(client.Streaming)
		var names []string
		var thoughts []client.AgentThoughtEvent
		var answer string
		var conversation string
		for _, ev := range streamEvents(t, c, body) {
			name := eventName(t, ev)
			names = append(names, name)
			switch name {
			case "agent_thought":
				th, err := ev.AsAgentThoughtEvent()
				if err != nil {
					t.Fatal(err)
				}
				thoughts = append(thoughts, th)
				conversation = th.ConversationId.String()
			case "agent_message":
				m, err := ev.AsAgentMessageEvent()
				if err != nil {
					t.Fatal(err)
				}
				answer += m.Answer
			}
		}
		if got := strings.Join(names, " "); got != "agent_thought agent_thought agent_thought agent_thought agent_message agent_message agent_thought message_end" {
			t.Fatalf("events %s", got)
		}
		step, final := thoughts[2], thoughts[4]
		if thoughts[0].Id != step.Id || thoughts[1].Id != step.Id || step.Position != 1 || final.Position != 2 || final.Id == step.Id ||
			*step.Tool != "eval_expression" || *step.ToolInput != `{"eval_expression": {"expression": "6*7"}}` ||
			*step.Observation != `{"eval_expression": "42"}` || step.ToolLabels == nil || (*step.ToolLabels)["eval_expression"] == nil ||
			step.MessageFiles == nil || *final.Thought != "It is 42." || answer != "It is 42." {
			t.Fatalf("thoughts %+v", thoughts)
		}

		msgs, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: conversation, User: ptr("u1")})
		if err != nil || msgs.JSON200 == nil || len(msgs.JSON200.Data) != 1 {
			t.Fatalf("messages: %v %s", err, msgs.Body)
		}
		m := msgs.JSON200.Data[0]
		if m.Answer != "It is 42." || len(m.AgentThoughts) != 2 {
			t.Fatalf("message %+v", m)
		}
		h := m.AgentThoughts[0]
		if h.Id != step.Id.String() || h.MessageId != m.Id.String() || h.Position != 1 || *h.Tool != "eval_expression" ||
			*h.ToolInput != *step.ToolInput || *h.Observation != *step.Observation || h.Files == nil || m.AgentThoughts[1].Position != 2 {
			t.Fatalf("stored thoughts %+v", m.AgentThoughts)
		}

		// A vision model sees the message's images, in every round.
		img := pngBytes(t)
		remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(img)
		}))
		defer remote.Close()
		iq := marker(t, "how much is the picture")
		upstream.OnEach(iq, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"1+1"}`}},
		}, openaitest.Reply{Chunks: []string{"Two."}})
		withImage := body
		withImage.Query = iq
		withImage.Files = &[]client.FileReference{{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodRemoteUrl, Url: ptr(remote.URL + "/dot.png")}}
		seenBefore := len(upstream.Requests())
		streamEvents(t, c, withImage)
		dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
		rounds := 0
		for _, req := range upstream.Requests()[seenBefore:] {
			if req.LastUserMessage() != iq {
				continue
			}
			rounds++
			var parts []providers.Part
			for _, m := range req.Messages {
				if m.Role == providers.RoleUser {
					parts = m.Parts
				}
			}
			if len(parts) != 2 || parts[1].ImageURL != dataURL {
				t.Fatalf("round %d: user message parts %+v", rounds, parts)
			}
		}
		if rounds != 2 {
			t.Fatalf("%d rounds saw the query", rounds)
		}

		// The exact stream, checked against the contract.
		gq := marker(t, "golden agent")
		upstream.OnEach(gq, openaitest.Reply{
			Chunks:    []string{"Let me compute."},
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"2**10"}`}},
			Usage:     &providers.Usage{PromptTokens: 40, CompletionTokens: 12},
		}, openaitest.Reply{Chunks: []string{"It is ", "1024."}, Usage: &providers.Usage{PromptTokens: 60, CompletionTokens: 4}})
		req, _ := newRequest("POST", p.URL+"/chat-messages",
			`{"query":"`+gq+`","inputs":{"who":"Ada"},"user":"golden","response_mode":"streaming"}`, key)
		got := httpTranscript(rawDo(t, req))
		golden(t, "agent_chat_streaming.sse.golden", normalize(strings.TrimRight(got, "\n")+"\n"))
	})
}
