package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
)

// ReAct is the strategy of models that cannot call tools natively: the prompt describes the
// tools and asks the model to answer in a text protocol (a thought, then an action as a JSON
// object naming a tool and its input, or the final answer); the runner reads the action, runs
// the tool and gives its result back as an observation, until the final answer.

// useReAct reports whether an agent runs with ReAct: as in Dify, a model that calls tools
// natively always uses function calling; another runs ReAct unless the app asks for function
// calling.
func useReAct(strategy string, spec models.ModelSpec) bool {
	if spec.HasFeature(config.FeatureToolCall) || spec.HasFeature(config.FeatureMultiToolCall) {
		return false
	}
	return strategy != "function_call"
}

// completionModel reports whether the app's model continues a text rather than answering
// messages (mode completion): the app's own model mode, or the configured model's when the app
// does not say. Dify runs ReAct for such a model with its completion runner, whose prompt is one
// text (reactText).
func completionModel(app *apps.App, spec models.ModelSpec) bool {
	mode := app.Model.Mode
	if mode == "" {
		mode = spec.Mode
	}
	return mode == config.ModelModeCompletion
}

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

// reactSystem is the system message of a ReAct round: the app's instructions and the tools;
// none on the last round, which must answer.
func (w *work) reactSystem(instructions string, last bool) string {
	var offered []providers.Tool
	if !last {
		offered = definitions(w.tools)
	}
	return ReActSystem(instructions, offered)
}

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

// reactPrompt is the prompt of a ReAct round: the conversation with the instructions as the
// system message and, once steps were taken, the scratchpad as the assistant's turn followed by
// a request to continue.
func (w *work) reactPrompt(base []providers.Message, scratchpad string, last bool) []providers.Message {
	out := make([]providers.Message, 0, len(base)+3)
	instructions := ""
	rest := base
	if len(base) > 0 && base[0].Role == providers.RoleSystem {
		instructions, rest = base[0].Content, base[1:]
	}
	out = append(out, providers.Message{Role: providers.RoleSystem, Content: w.reactSystem(instructions, last)})
	out = append(out, flatten(rest)...)
	if scratchpad != "" {
		out = append(out, providers.Message{Role: providers.RoleAssistant, Content: scratchpad},
			providers.Message{Role: providers.RoleUser, Content: "continue"})
	}
	return out
}

// reactText is the prompt of a ReAct round for a completion model, laid out as Dify's completion
// runner lays it out: one text with the app's instructions and the tools (none on the last
// round), the earlier exchanges in the protocol's words (each query as "Question: …", then the
// steps and answer), the question, the steps taken so far, and "Thought:" for the model to
// continue from. The history is the one buildPrompt kept, bounded by the model's context. The
// text is sent as a single user message, as Parley sends every completion model's prompt.
func (w *work) reactText(base []providers.Message, scratchpad string, last bool) []providers.Message {
	instructions := ""
	rest := base
	if len(rest) > 0 && rest[0].Role == providers.RoleSystem {
		instructions, rest = rest[0].Content, rest[1:]
	}
	query := ""
	if n := len(rest); n > 0 && rest[n-1].Role == providers.RoleUser {
		query, rest = rest[n-1].Text(), rest[:n-1]
	}
	var b strings.Builder
	b.WriteString(w.reactSystem(instructions, last))
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
				fmt.Fprintf(&b, "Action: ```%s```\n", marshal(map[string]any{"action": c.Name, "action_input": input}))
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

// runReAct is Run for the ReAct strategy.
func (w *work) runReAct(ctx context.Context, out *run.Output, prompt []providers.Message) (run.Outcome, error) {
	var total models.Usage
	var scratchpad strings.Builder
	params := maps.Clone(w.base.Params)
	if params == nil {
		params = map[string]any{}
	}
	params["stop"] = withStop(params["stop"], "Observation")
	build := w.reactPrompt
	if w.text {
		build = w.reactText
	}
	for position := 1; ; position++ {
		last := position == w.rounds
		st := &step{w: w, out: out, t: newThought(out, position)}
		text, usage, err := st.callText(ctx, build(prompt, scratchpad.String(), last), params)
		total = models.AddUsage(total, usage)
		outcome := run.Outcome{Usage: total, Resources: w.resources}
		if err != nil {
			return outcome, err
		}
		thought, act := parseReAct(text)
		if act == nil {
			// Not the protocol: the text is the answer, already streamed.
			return outcome, nil
		}
		if strings.EqualFold(act.name, finalAnswer) {
			answer := act.inputText()
			out.Emit(run.Event{Kind: run.EventAgentMessage, Answer: answer})
			st.t.Thought += answer
			return outcome, st.store(ctx)
		}
		if last {
			return outcome, fmt.Errorf("%w (max_iteration %d)", ErrMaxIterations, w.rounds-1)
		}
		call := providers.ToolCall{ID: "react", Name: act.name, Arguments: act.arguments()}
		st.describeCalls([]providers.ToolCall{call})
		if err := st.save(ctx); err != nil {
			return outcome, err
		}
		results, err := st.invoke(ctx, []providers.ToolCall{call})
		if err != nil {
			return outcome, err
		}
		fmt.Fprintf(&scratchpad, "Thought: %s\nAction: ```%s```\nObservation: %s\n", thought, act.raw, results[0])
	}
}

// callText calls the model once without tools and streams its thoughts as agent_message events,
// holding back the action; it returns the whole text of the round. The step records what was
// streamed as its thought.
func (s *step) callText(ctx context.Context, prompt []providers.Message, params map[string]any) (string, models.Usage, error) {
	var full strings.Builder
	sent := ""
	emit := func(final bool) {
		v := visible(full.String(), final)
		if len(v) > len(sent) && strings.HasPrefix(v, sent) {
			s.out.Emit(run.Event{Kind: run.EventAgentMessage, Answer: v[len(sent):]})
			sent = v
		}
	}
	_, usage, err := s.stream(ctx, prompt, nil, params, func(delta string) {
		full.WriteString(delta)
		emit(false)
	})
	if err == nil {
		emit(true)
	}
	if s.started {
		// Stored, not streamed: the step is streamed again once its action is known.
		s.t.Thought += sent
		if serr := s.store(ctx); serr != nil && err == nil {
			err = serr
		}
	}
	return full.String(), usage, err
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
	return string(marshal(a.input))
}

// arguments are the tool's arguments: the input object, or a string holding one.
func (a *reactAction) arguments() string {
	switch v := a.input.(type) {
	case string:
		return v
	case nil:
		return "{}"
	default:
		return string(marshal(v))
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
