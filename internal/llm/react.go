package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/providers"
)

// ReAct is the strategy of models that cannot call tools natively: the prompt describes the
// tools and asks the model to answer in a text protocol (a thought, then an action as a JSON
// object naming a tool and its input, or the final answer); the agent reads the action, runs
// the tool and gives its result back as an observation, until the final answer.

// finalAnswer is the action that ends the loop.
const finalAnswer = "Final Answer"

// reactInstructions frames the app's instructions and tools for a ReAct model.
const reactInstructions = `%s

You can use the tools below. Answer the user as helpfully and accurately as you can.

Tools:
%s

To use a tool, write a JSON object with an "action" key (the tool's name) and an "action_input"
key (its input), in a Markdown code block. The valid "action" values are "%s" and: %s.

Follow this format:

Thought: what you think about the question and what to do next
Action:
` + "```" + `
{"action": "<tool name>", "action_input": <tool input>}
` + "```" + `
Observation: the result of the action
... (Thought, Action and Observation may repeat)
Thought: I know what to answer
Action:
` + "```" + `
{"action": "%s", "action_input": "<the final answer to the user>"}
` + "```" + `

Always write exactly one action after each thought. Do not write the Observation yourself.`

// ReActSystem is the system message of a ReAct round: the instructions and the tools offered
// (none on a last round, which must answer). A workflow agent node with the ReAct strategy
// sends it too.
func ReActSystem(instructions string, offered []providers.Tool) string {
	var list []map[string]any
	var names []string
	for _, d := range offered {
		list = append(list, map[string]any{"name": d.Name, "description": d.Description, "parameters": json.RawMessage(d.Parameters)})
		names = append(names, d.Name)
	}
	tools, _ := json.Marshal(list)
	if len(list) == 0 {
		tools = []byte("[]")
	}
	return fmt.Sprintf(reactInstructions, instructions, tools, finalAnswer, strings.Join(names, ", "), finalAnswer)
}

// ReActPrompt is the prompt of a ReAct round: the conversation with the instructions (base's
// system message, if any) and the tools offered as the system message, the tool calls of
// replayed history in the protocol's words and, once steps were taken, the scratchpad as the
// assistant's turn followed by a request to continue.
func ReActPrompt(base []providers.Message, scratchpad string, offered []providers.Tool) []providers.Message {
	out := make([]providers.Message, 0, len(base)+3)
	instructions, rest := splitSystem(base)
	out = append(out, providers.Message{Role: providers.RoleSystem, Content: ReActSystem(instructions, offered)})
	out = append(out, flatten(rest)...)
	if scratchpad != "" {
		out = append(out, providers.Message{Role: providers.RoleAssistant, Content: scratchpad},
			providers.Message{Role: providers.RoleUser, Content: "continue"})
	}
	return out
}

// ReActText is the prompt of a ReAct round for a completion model, laid out as Dify's completion
// runner lays it out: one text with the instructions and the tools offered, the earlier
// exchanges in the protocol's words (each query as "Question: …", then the steps and answer),
// the question (base's last user message), the steps taken so far, and "Thought:" for the model
// to continue from. The text is sent as a single user message, as Parley sends every completion
// model's prompt.
func ReActText(base []providers.Message, scratchpad string, offered []providers.Tool) []providers.Message {
	instructions, rest := splitSystem(base)
	query := ""
	if n := len(rest); n > 0 && rest[n-1].Role == providers.RoleUser {
		query, rest = rest[n-1].Text(), rest[:n-1]
	}
	var b strings.Builder
	b.WriteString(ReActSystem(instructions, offered))
	b.WriteString("\n\n")
	for _, m := range flatten(rest) {
		text := strings.TrimSpace(m.Text())
		if text == "" {
			continue
		}
		if m.Role == providers.RoleUser {
			b.WriteString("Question: ")
		}
		b.WriteString(text)
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Question: %s\n%sThought:", query, scratchpad)
	return []providers.Message{{Role: providers.RoleUser, Content: b.String()}}
}

// splitSystem takes a leading system message's text off msgs.
func splitSystem(msgs []providers.Message) (string, []providers.Message) {
	if len(msgs) > 0 && msgs[0].Role == providers.RoleSystem {
		return msgs[0].Content, msgs[1:]
	}
	return "", msgs
}

// flatten rewrites the tool calls and results of replayed history in the ReAct protocol, as
// assistant text, for a model that knows no tool messages.
func flatten(msgs []providers.Message) []providers.Message {
	out := make([]providers.Message, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case m.Role == providers.RoleAssistant && len(m.ToolCalls) > 0:
			var b strings.Builder
			if m.Content != "" {
				fmt.Fprintf(&b, "Thought: %s\n", m.Content)
			}
			for _, c := range m.ToolCalls {
				var input any = c.Arguments
				if json.Valid([]byte(c.Arguments)) {
					input = json.RawMessage(c.Arguments)
				}
				fmt.Fprintf(&b, "Action: ```%s```\n", jsonenc.Marshal(map[string]any{"action": c.Name, "action_input": input}))
			}
			out = append(out, providers.Message{Role: providers.RoleAssistant, Content: b.String()})
		case m.Role == providers.RoleTool && len(out) > 0 && out[len(out)-1].Role == providers.RoleAssistant:
			out[len(out)-1].Content += "Observation: " + m.Content + "\n"
		default:
			out = append(out, m)
		}
	}
	return out
}

// withStop adds word to the app's stop words (a list or a single string), once.
func withStop(stop any, word string) []string {
	var out []string
	switch v := stop.(type) {
	case string:
		if v != "" {
			out = append(out, v)
		}
	case []string:
		out = append(out, v...)
	case []any:
		for _, w := range v {
			if s, ok := w.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	for _, w := range out {
		if w == word {
			return out
		}
	}
	return append(out, word)
}

// labels of the ReAct protocol, left out of what is streamed.
var reactLabels = []string{"thought:", "action:"}

// visible is the part of a round's text shown as it streams: the text before the action (the
// first code fence or JSON object), without the protocol's labels and surrounding space. Until
// the round ends, a tail that may begin a label or a fence is held back.
func visible(text string, final bool) string {
	cut := len(text)
	if i := strings.Index(text, "```"); i >= 0 {
		cut = i
	}
	if i := strings.IndexByte(text, '{'); i >= 0 && i < cut {
		cut = i
	}
	v := text[:cut]
	if !final && cut == len(text) {
		v = text[:len(text)-heldBack(text)]
	}
	lower := strings.ToLower(v)
	var b strings.Builder
	for i := 0; i < len(v); {
		skipped := false
		for _, l := range reactLabels {
			if strings.HasPrefix(lower[i:], l) {
				i += len(l)
				skipped = true
				break
			}
		}
		if !skipped {
			b.WriteByte(v[i])
			i++
		}
	}
	return strings.TrimSpace(b.String())
}

// heldBack is how many bytes at the end of text may begin a label or a code fence.
func heldBack(text string) int {
	lower := strings.ToLower(text)
	for n := min(len(lower), 7); n > 0; n-- {
		tail := lower[len(lower)-n:]
		for _, l := range append(reactLabels, "```") {
			if strings.HasPrefix(l, tail) {
				return n
			}
		}
	}
	return 0
}

// reactAction is an action a ReAct model wrote.
type reactAction struct {
	name  string
	input any
	// raw is the action's JSON as written.
	raw string
}

// parseReAct reads a round's text: its thought, and the action, if it wrote one (nil if not).
func parseReAct(text string) (string, *reactAction) {
	thought := visible(text, true)
	blob := ""
	if i := strings.Index(text, "```"); i >= 0 {
		rest := text[i+3:]
		if j := strings.Index(rest, "```"); j >= 0 {
			rest = rest[:j]
		}
		rest = strings.TrimSpace(rest)
		rest = strings.TrimSpace(strings.TrimPrefix(rest, "json"))
		blob = rest
	} else if i := strings.IndexByte(text, '{'); i >= 0 {
		if j := strings.LastIndexByte(text, '}'); j > i {
			blob = text[i : j+1]
		}
	}
	if blob == "" {
		return thought, nil
	}
	var v struct {
		Action      *string `json:"action"`
		ActionInput any     `json:"action_input"`
	}
	if err := json.Unmarshal([]byte(blob), &v); err != nil || v.Action == nil {
		return thought, nil
	}
	return thought, &reactAction{name: strings.TrimSpace(*v.Action), input: v.ActionInput, raw: blob}
}

// inputText is the final answer: the input as text (JSON for another value).
func (a *reactAction) inputText() string {
	if s, ok := a.input.(string); ok {
		return s
	}
	if a.input == nil {
		return ""
	}
	return string(jsonenc.Marshal(a.input))
}

// arguments are the tool's arguments: the input object, or a string holding one.
func (a *reactAction) arguments() string {
	switch v := a.input.(type) {
	case string:
		return v
	case nil:
		return "{}"
	default:
		return string(jsonenc.Marshal(v))
	}
}

// ReActStep is what a ReAct model wrote in one round, as a workflow agent node reads it.
type ReActStep struct {
	// Thought is the text before the action, without the protocol's labels.
	Thought string
	// Final says the action is the final answer, which is Answer.
	Final  bool
	Answer string
	// Call is the tool call the action asks for (when not Final); Raw is the action as written.
	Call providers.ToolCall
	Raw  string
}

// ParseReAct reads a ReAct round's text; false when it holds no action (the text is then the
// answer).
func ParseReAct(text string) (ReActStep, bool) {
	thought, act := parseReAct(text)
	if act == nil {
		return ReActStep{Thought: thought}, false
	}
	st := ReActStep{Thought: thought, Raw: act.raw}
	if strings.EqualFold(act.name, finalAnswer) {
		st.Final, st.Answer = true, act.inputText()
		return st, true
	}
	st.Call = providers.ToolCall{Name: act.name, Arguments: act.arguments()}
	return st, true
}

// ReActStop adds the protocol's stop word to a model's stop parameter.
func ReActStop(stop any) []string { return withStop(stop, "Observation") }
