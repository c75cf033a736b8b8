package nodes

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/agent"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// agentNode is Dify's agent node with the strategies of its agent plugin (function calling, and
// ReAct with the Legacy Agent's text protocol): the model is called in rounds with the node's tools (the workspace's tools, found as a tool node
// finds its one), the tools it calls run between rounds and their results go back to it, until
// it answers without calling one or the rounds run out (the last round offers no tools). Every
// round, model call and tool call is an agent_log event; the model's text streams to the
// answers that show the node's text. A tool is called with agent.Invoke, as a Legacy Agent
// calls it, so a failing tool is an observation for the model, not a failure of the node.
type agentNode struct {
	d           Deps
	provider    string
	name        string
	params      map[string]any
	instruction string
	query       string
	rounds      int
	tools       []tools.Ref
	memory      *memory
	// react runs the ReAct strategy: the tools are described in the prompt and the model answers
	// in the protocol's text, instead of calling them natively.
	react bool
}

// Agent strategies the node runs.
const (
	agentStrategyProvider = "langgenius/agent"
	agentErrorType        = "AgentNodeError"
	// defaultAgentRounds is maximum_iterations when the node sets none, as Dify's strategy has it.
	defaultAgentRounds = 3
	maxAgentRounds     = 99
)

// agentParam reads agent_parameters.NAME.value.
func agentParam(data map[string]any, name string) any {
	return mapping(mapping(data["agent_parameters"])[name])["value"]
}

// agentText reads a text parameter of an agent node as a template: a constant or mixed text as
// it is, a variable (a selector) as the reference to it.
func agentText(data map[string]any, name string) string {
	p := mapping(mapping(data["agent_parameters"])[name])
	if str(p["type"]) == "variable" {
		if sel := workflow.Selector(p["value"]); len(sel) > 0 {
			return "{{#" + strings.Join(sel, ".") + "#}}"
		}
		return ""
	}
	return value.Text(fromGo(p["value"]))
}

func (d Deps) newAgent(n *workflow.Node) (workflow.NodeRunner, error) {
	provider := str(n.Data["agent_strategy_provider_name"])
	if provider != "" && !strings.HasPrefix(provider, agentStrategyProvider) {
		return nil, configError("agent strategy provider %q is not supported (only %s)", provider, agentStrategyProvider)
	}
	strategy := str(n.Data["agent_strategy_name"])
	switch strategy {
	case "", "function_calling", "ReAct":
	default:
		return nil, configError("agent strategy %q is not supported (function_calling, ReAct)", strategy)
	}
	m := mapping(agentParam(n.Data, "model"))
	a := &agentNode{d: d, provider: str(m["provider"]), name: str(m["model"]), params: mapping(m["completion_params"]),
		instruction: agentText(n.Data, "instruction"), query: agentText(n.Data, "query"),
		rounds: defaultAgentRounds, react: strategy == "ReAct"}
	if a.provider == "" || a.name == "" {
		return nil, configError("the node names no model")
	}
	if it := agentParam(n.Data, "maximum_iterations"); it != nil {
		a.rounds = min(max(1, intOf(it)), maxAgentRounds)
	}
	for _, t := range list(agentParam(n.Data, "tools")) {
		tm := mapping(t)
		if on, ok := tm["enabled"].(bool); ok && !on {
			continue
		}
		a.tools = append(a.tools, agentToolRef(tm))
	}
	if mem := mapping(n.Data["memory"]); mem != nil {
		a.memory = &memory{}
		if w := mapping(mem["window"]); w != nil {
			if on, _ := w["enabled"].(bool); on {
				a.memory.window = max(1, intOf(w["size"]))
			}
		}
	}
	if d.Models == nil || d.Providers == nil {
		return nil, configError("no models are configured")
	}
	return a, nil
}

// agentToolRef is the tool an entry of an agent node's tools names, with the values the node
// fixed for it: its settings, and the parameters not left to the model (auto 0).
func agentToolRef(tm map[string]any) tools.Ref {
	configured := map[string]any{}
	for k, v := range mapping(tm["settings"]) {
		if sm := mapping(v); sm != nil {
			if val, ok := sm["value"]; ok && val != nil {
				configured[k] = val
			}
			continue
		}
		if v != nil {
			configured[k] = v
		}
	}
	for k, v := range mapping(tm["parameters"]) {
		pm := mapping(v)
		if pm == nil || intOf(pm["auto"]) == 1 {
			continue
		}
		if val := pm["value"]; val != nil && val != "" {
			configured[k] = val
		}
	}
	typ := str(tm["type"])
	if typ == "" {
		typ = str(tm["provider_type"])
	}
	return tools.Ref{Type: typ, ProviderID: str(tm["provider_id"]), ProviderName: str(tm["provider_name"]),
		Name: str(tm["tool_name"]), Configured: configured}
}

// offered is a tool as the model is offered it: its unique model-facing name, and the tool or
// why it cannot run.
type offered struct {
	name    string
	ref     tools.Ref
	tool    tools.Tool
	missing error
}

// agentLog is the data of an agent_log event.
type agentLog struct {
	NodeExecutionID string         `json:"node_execution_id"`
	ID              string         `json:"id"`
	Label           string         `json:"label"`
	ParentID        *string        `json:"parent_id"`
	Error           *string        `json:"error"`
	Status          string         `json:"status"`
	Data            map[string]any `json:"data"`
	Metadata        map[string]any `json:"metadata"`
	NodeID          string         `json:"node_id"`
}

func (a *agentNode) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	spec, model, err := a.d.model(a.provider, a.name)
	if err != nil {
		return workflow.Result{}, err
	}
	instruction := template.Render(a.instruction, x.Pool.Get, value.Text)
	query := template.Render(a.query, x.Pool.Get, value.Text)
	res := workflow.Result{Inputs: map[string]any{"instruction": instruction, "query": query}}
	var prompt []providers.Message
	if instruction != "" {
		prompt = append(prompt, providers.Message{Role: providers.RoleSystem, Content: instruction})
	}
	if a.memory != nil {
		if h := env(x).History; h != nil {
			n := historyCap
			if a.memory.window > 0 {
				n = a.memory.window
			}
			past, err := h(ctx, n)
			if err != nil {
				return res, err
			}
			for _, p := range past {
				prompt = append(prompt, providers.Message{Role: providers.RoleUser, Content: p.Query})
				if p.Answer != "" {
					prompt = append(prompt, providers.Message{Role: providers.RoleAssistant, Content: p.Answer})
				}
			}
		}
	}
	prompt = append(prompt, providers.Message{Role: providers.RoleUser, Content: query})

	offers := a.resolve(ctx)
	defs := make([]providers.Tool, len(offers))
	for i, o := range offers {
		defs[i] = providers.Tool{Name: o.name, Parameters: []byte(`{"type":"object","properties":{}}`)}
		if o.tool != nil {
			defs[i].Description, defs[i].Parameters = o.tool.Description(), o.tool.Parameters()
		}
	}
	var (
		total  models.Usage
		text   strings.Builder
		kept   []tools.File
		logs   []any
		failed error
		// scratchpad holds a ReAct agent's steps so far.
		scratchpad strings.Builder
	)
	emit := func(l agentLog) {
		l.NodeExecutionID, l.NodeID = x.ExecutionID, x.Node.ID
		if l.Data == nil {
			l.Data = map[string]any{}
		}
		x.Emit(run.Event{Kind: run.EventAgentLog, Data: l})
		if l.Status != "start" {
			logs = append(logs, l)
		}
	}
	for round := 1; round <= a.rounds; round++ {
		last := round == a.rounds
		roundID, started := uuid.NewString(), time.Now()
		roundLabel := fmt.Sprintf("ROUND %d", round)
		emit(agentLog{ID: roundID, Label: roundLabel, Status: "start", Metadata: map[string]any{"started_at": started.Unix()}})
		var offer []providers.Tool
		if !last {
			offer = defs
		}
		thoughtID := uuid.NewString()
		emit(agentLog{ID: thoughtID, Label: a.name + " Thought", ParentID: &roundID, Status: "start",
			Metadata: map[string]any{"started_at": time.Now().Unix(), "provider": a.provider}})
		stream := func(d string) {
			text.WriteString(d)
			x.Stream("text", d)
		}
		var (
			said  string
			calls []providers.ToolCall
			usage models.Usage
			err   error
			step  agent.ReActStep
		)
		if a.react {
			said, step, usage, err = a.reactRound(ctx, model, spec, prompt, scratchpad.String(), offer, stream)
			if step.Call.Name != "" {
				calls = []providers.ToolCall{step.Call}
			}
		} else {
			said, calls, usage, err = callTools(ctx, model, spec, a.params, prompt, stream, offer)
		}
		total = models.AddUsage(total, usage)
		meta := func(begin time.Time, u *models.Usage) map[string]any {
			m := map[string]any{"started_at": begin.Unix(), "finished_at": time.Now().Unix(),
				"elapsed_time": time.Since(begin).Seconds(), "provider": a.provider}
			if u != nil {
				m["total_tokens"], m["total_price"], m["currency"] = u.TotalTokens, u.TotalPrice, u.Currency
			}
			return m
		}
		if err != nil {
			msg := safeMessage(err)
			if ctx.Err() != nil {
				msg = "stopped"
			}
			emit(agentLog{ID: thoughtID, Label: a.name + " Thought", ParentID: &roundID, Status: "error", Error: &msg, Metadata: meta(started, &usage)})
			emit(agentLog{ID: roundID, Label: roundLabel, Status: "error", Error: &msg, Metadata: meta(started, &total)})
			if ctx.Err() != nil {
				return res, context.Cause(ctx)
			}
			failed = workflow.Errorf(agentErrorType, "%s", msg)
			break
		}
		callNames := make([]any, len(calls))
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = "call_" + uuid.NewString()
			}
			callNames[i] = value.ObjectOf("name", calls[i].Name, "args", calls[i].Arguments)
		}
		emit(agentLog{ID: thoughtID, Label: a.name + " Thought", ParentID: &roundID, Status: "success",
			Data: map[string]any{"output": map[string]any{"llm_response": said, "tool_calls": callNames}}, Metadata: meta(started, &usage)})
		if len(calls) == 0 {
			emit(agentLog{ID: roundID, Label: roundLabel, Status: "success",
				Data: map[string]any{"output": map[string]any{"llm_response": said, "tool_responses": []any{}}}, Metadata: meta(started, &total)})
			break
		}
		if last {
			// Offered no tools, the model still called one: as a Legacy Agent, the agent fails.
			msg := fmt.Sprintf("the model called a tool in the last allowed round (maximum_iterations %d)", a.rounds)
			emit(agentLog{ID: roundID, Label: roundLabel, Status: "error", Error: &msg, Metadata: meta(started, &total)})
			failed = workflow.Errorf(agentErrorType, "%s", msg)
			break
		}
		if !a.react {
			prompt = append(prompt, providers.Message{Role: providers.RoleAssistant, Content: said, ToolCalls: calls})
		}
		responses := make([]any, 0, len(calls))
		for _, c := range calls {
			callStarted := time.Now()
			callID := uuid.NewString()
			emit(agentLog{ID: callID, Label: "CALL " + c.Name, ParentID: &roundID, Status: "start",
				Metadata: map[string]any{"started_at": callStarted.Unix()}})
			observation, produced := a.invoke(ctx, offers, c)
			if ctx.Err() != nil {
				return res, context.Cause(ctx)
			}
			kept = append(kept, produced...)
			provider := ""
			if o := find(offers, c.Name); o != nil {
				provider = o.ref.Provider()
			}
			m := meta(callStarted, nil)
			m["provider"] = provider
			emit(agentLog{ID: callID, Label: "CALL " + c.Name, ParentID: &roundID, Status: "success", Metadata: m,
				Data: map[string]any{"output": map[string]any{"tool_call_id": c.ID, "tool_call_name": c.Name,
					"tool_call_input": c.Arguments, "tool_response": observation}}})
			responses = append(responses, value.ObjectOf("tool_call_id", c.ID, "tool_call_name", c.Name, "tool_response", observation))
			if a.react {
				fmt.Fprintf(&scratchpad, "Thought: %s\nAction: ```%s```\nObservation: %s\n", step.Thought, step.Raw, observation)
			} else {
				prompt = append(prompt, providers.Message{Role: providers.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: observation})
			}
		}
		emit(agentLog{ID: roundID, Label: roundLabel, Status: "success",
			Data: map[string]any{"output": map[string]any{"llm_response": said, "tool_responses": responses}}, Metadata: meta(started, &total)})
	}
	res.Usage = &total
	res.Metadata = map[string]any{"agent_log": logs}
	res.ProcessData = map[string]any{"model_provider": a.provider, "model_name": a.name, "strategy": "function_calling"}
	if a.react {
		res.ProcessData["strategy"] = "ReAct"
	}
	if failed != nil {
		return res, failed
	}
	fs, err := a.d.keepFiles(ctx, env(x), kept)
	if err != nil {
		return res, workflow.Errorf(agentErrorType, "%v", err)
	}
	// json lists the finished logs, then {"data": []}, as Dify's agent node gives its logs to
	// the nodes after it.
	jsonOut := make([]any, 0, len(logs)+1)
	for _, l := range logs {
		jsonOut = append(jsonOut, value.FromGo(logDict(l.(agentLog))))
	}
	jsonOut = append(jsonOut, value.ObjectOf("data", []any{}))
	res.Outputs = map[string]any{"text": text.String(), "files": fs, "json": jsonOut,
		"usage": value.FromGo(total)}
	return res, nil
}

// resolve finds the node's tools. A tool this server does not have is still offered under its
// name, so that the model calling it learns why it failed, as a Legacy Agent offers it.
func (a *agentNode) resolve(ctx context.Context) []offered {
	taken := map[string]bool{}
	out := make([]offered, 0, len(a.tools))
	for _, t := range a.tools {
		name := tools.ModelName(t.Name, taken)
		taken[name] = true
		o := offered{name: name, ref: t}
		if a.d.Tools == nil {
			o.missing = tools.ErrUnknownTool
		} else if found, err := a.d.Tools(ctx, t); err != nil {
			o.missing = err
		} else {
			o.tool = found
		}
		out = append(out, o)
	}
	return out
}

func find(offers []offered, name string) *offered {
	for i := range offers {
		if offers[i].name == name {
			return &offers[i]
		}
	}
	return nil
}

// invoke runs one call of the model and returns what the model reads and the tool's files.
func (a *agentNode) invoke(ctx context.Context, offers []offered, c providers.ToolCall) (string, []tools.File) {
	o := find(offers, c.Name)
	switch {
	case o == nil:
		return fmt.Sprintf("there is not a tool named %s", c.Name), nil
	case o.tool == nil:
		return fmt.Sprintf("tool invoke error: the tool %s is not available on this server: %v", c.Name, o.missing), nil
	}
	return agent.Invoke(ctx, o.tool, c, a.d.ToolTimeout)
}

// reactRound is one round of the ReAct strategy, with the text protocol Legacy Agents use: the
// instruction and the offered tools become the system message, the steps so far the assistant's
// turn, and the model (stopped at "Observation") writes a thought and an action. A final answer,
// or a text that is not the protocol, streams as the node's text; a tool action is returned as
// the step's call.
func (a *agentNode) reactRound(ctx context.Context, model providers.ChatModel, spec models.ModelSpec, base []providers.Message,
	scratchpad string, offer []providers.Tool, stream func(string)) (string, agent.ReActStep, models.Usage, error) {
	instruction, rest := "", base
	if len(rest) > 0 && rest[0].Role == providers.RoleSystem {
		instruction, rest = rest[0].Content, rest[1:]
	}
	prompt := append([]providers.Message{{Role: providers.RoleSystem, Content: agent.ReActSystem(instruction, offer)}}, rest...)
	if scratchpad != "" {
		prompt = append(prompt, providers.Message{Role: providers.RoleAssistant, Content: scratchpad},
			providers.Message{Role: providers.RoleUser, Content: "continue"})
	}
	params := maps.Clone(a.params)
	if params == nil {
		params = map[string]any{}
	}
	params["stop"] = agent.ReActStop(params["stop"])
	text, _, usage, err := callTools(ctx, model, spec, params, prompt, nil, nil)
	if err != nil {
		return text, agent.ReActStep{}, usage, err
	}
	step, ok := agent.ParseReAct(text)
	switch {
	case !ok:
		stream(text)
		return text, agent.ReActStep{}, usage, nil
	case step.Final:
		stream(step.Answer)
		return step.Thought, agent.ReActStep{Final: true, Answer: step.Answer}, usage, nil
	}
	step.Call.ID = "react_" + uuid.NewString()
	return step.Thought, step, usage, nil
}

// logDict is an agent log as the node's json output lists it.
func logDict(l agentLog) map[string]any {
	var parent, errText any
	if l.ParentID != nil {
		parent = *l.ParentID
	}
	if l.Error != nil {
		errText = *l.Error
	}
	return map[string]any{"id": l.ID, "parent_id": parent, "error": errText, "status": l.Status, "data": l.Data,
		"label": l.Label, "metadata": l.Metadata, "node_id": l.NodeID}
}

// callTools streams one answer of the model offered the tools: its text, its tool calls and the
// usage (the upstream's, or counted when it reports none).
func callTools(ctx context.Context, model providers.ChatModel, spec models.ModelSpec, params map[string]any,
	prompt []providers.Message, onDelta func(string), offer []providers.Tool) (string, []providers.ToolCall, models.Usage, error) {
	c, err := callModel(ctx, model, spec, params, prompt, onDelta, offer...)
	return c.text.String(), c.toolCalls, c.usage, err
}
