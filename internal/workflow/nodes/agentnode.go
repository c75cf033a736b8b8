package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/llm"
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
// answers that show the node's text. The rounds are llm.Agent's, as a Legacy Agent's are, so a
// failing tool is an observation for the model, not a failure of the node.
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
	// mcpServers is the parameter of an MCP strategy that names MCP servers (a template): the
	// servers whose tools the model is offered beside the node's own (mcpagent.go); mcpParam
	// is which parameter it is, as its forms differ.
	mcpServers, mcpParam string
	// tod runs svcvit/agent's TOD strategy (todagent.go) with its schema and storage key
	// (templates), instead of the tool-calling rounds.
	tod                   bool
	todSchema, storageKey string
}

// Agent strategies the node runs.
const (
	agentErrorType = "AgentNodeError"
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
	provider, strategy := str(n.Data["agent_strategy_provider_name"]), str(n.Data["agent_strategy_name"])
	st, ok := workflow.LookupAgentStrategy(provider, strategy)
	if !ok {
		return nil, configError("agent strategy %q of %q is not supported (%s are)", strategy, provider, workflow.SupportedAgentStrategies)
	}
	m := mapping(agentParam(n.Data, "model"))
	a := &agentNode{d: d, provider: str(m["provider"]), name: str(m["model"]), params: mapping(m["completion_params"]),
		instruction: agentText(n.Data, "instruction"), query: agentText(n.Data, "query"),
		rounds: defaultAgentRounds, react: st.ReAct}
	if st.TOD {
		a.tod, a.todSchema, a.storageKey = true, agentText(n.Data, "information_schema"), agentText(n.Data, "storage_key")
		if d.Storage == nil {
			return nil, configError("agent strategy storage is not available")
		}
	}
	if st.MCPServers != "" {
		a.mcpServers, a.mcpParam = agentText(n.Data, st.MCPServers), st.MCPServers
		if strings.TrimSpace(a.mcpServers) != "" && d.MCPClient == nil {
			return nil, configError("MCP servers are not available")
		}
	}
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
	m, err := a.d.model(a.provider, a.name)
	if err != nil {
		return workflow.Result{}, err
	}
	if a.tod {
		return a.runTOD(ctx, x, m)
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
	if a.mcpServers != "" {
		servers, err := a.connectMCP(ctx, a.mcpParam, template.Render(a.mcpServers, x.Pool.Get, value.Text))
		defer servers.close()
		if err != nil {
			return res, err
		}
		if offers, err = servers.offer(ctx, offers); err != nil {
			return res, err
		}
	}
	ag := llm.Agent{Model: m, Params: llm.Params(a.params, m.Spec), Offers: offers, Rounds: a.rounds,
		ReAct: a.react, ToolTimeout: a.d.ToolTimeout}
	obs := &agentRun{a: a, x: x, offers: ag.Offers}
	total, err := ag.Run(ctx, prompt, obs)
	res.Usage = &total
	res.Metadata = map[string]any{"agent_log": obs.logs}
	res.ProcessData = map[string]any{"model_provider": a.provider, "model_name": a.name, "strategy": "function_calling"}
	if a.react {
		res.ProcessData["strategy"] = "ReAct"
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return res, context.Cause(ctx)
	case errors.Is(err, llm.ErrMaxRounds):
		// Offered no tools, the model still called one: as a Legacy Agent, the agent fails.
		msg := fmt.Sprintf("the model called a tool in the last allowed round (maximum_iterations %d)", a.rounds)
		obs.emit(agentLog{ID: obs.roundID, Label: obs.roundLabel, Status: "error", Error: &msg, Metadata: obs.meta(obs.started, &total)})
		return res, workflow.Errorf(agentErrorType, "%s", msg)
	default:
		return res, workflow.Errorf(agentErrorType, "%s", safeMessage(err))
	}
	fs, err := a.d.keepFiles(ctx, env(x), obs.kept)
	if err != nil {
		return res, workflow.Errorf(agentErrorType, "%v", err)
	}
	// json lists the finished logs, then {"data": []}, as Dify's agent node gives its logs to
	// the nodes after it.
	jsonOut := make([]any, 0, len(obs.logs)+1)
	for _, l := range obs.logs {
		jsonOut = append(jsonOut, value.FromGo(logDict(l.(agentLog))))
	}
	jsonOut = append(jsonOut, value.ObjectOf("data", []any{}))
	res.Outputs = map[string]any{"text": obs.text.String(), "files": fs, "json": jsonOut,
		"usage": value.FromGo(total)}
	return res, nil
}

// resolve finds the node's tools. A tool this server does not have is still offered under its
// name, so that the model calling it learns why it failed, as a Legacy Agent offers it.
func (a *agentNode) resolve(ctx context.Context) []llm.Offer {
	taken := map[string]bool{}
	out := make([]llm.Offer, 0, len(a.tools))
	for _, t := range a.tools {
		name := tools.ModelName(t.Name, taken)
		taken[name] = true
		o := llm.Offer{Name: name, Provider: t.Provider()}
		if a.d.Tools == nil {
			o.Missing = tools.ErrUnknownTool
		} else if found, err := a.d.Tools(ctx, t); err != nil {
			o.Missing = err
		} else {
			o.Tool = found
		}
		out = append(out, o)
	}
	return out
}

// agentRun is one run of an agent node, as the llm.Observer of its rounds: every round, model
// call and tool call is an agent_log event; the model's answer streams as the node's text.
type agentRun struct {
	a      *agentNode
	x      *workflow.Exec
	offers []llm.Offer
	// logs are the finished logs, as the node's json output and metadata list them.
	logs []any
	text strings.Builder
	kept []tools.File
	// The round under way: its log, its model call's log and its tool responses.
	roundID, roundLabel, thoughtID string
	started                        time.Time
	responses                      []any
	// The tool call under way: its log and when it began.
	callID      string
	callStarted time.Time
	total       models.Usage
}

func (o *agentRun) emit(l agentLog) {
	l.NodeExecutionID, l.NodeID = o.x.ExecutionID, o.x.Node.ID
	if l.Data == nil {
		l.Data = map[string]any{}
	}
	o.x.Emit(run.Event{Kind: run.EventAgentLog, Data: l})
	if l.Status != "start" {
		o.logs = append(o.logs, l)
	}
}

// parent is the parent id of the round's logs: a copy, as the logs outlive the round.
func (o *agentRun) parent() *string {
	id := o.roundID
	return &id
}

// meta is the metadata of a log that began at begin, with the usage u when it has one.
func (o *agentRun) meta(begin time.Time, u *models.Usage) map[string]any {
	m := map[string]any{"started_at": begin.Unix(), "finished_at": time.Now().Unix(),
		"elapsed_time": time.Since(begin).Seconds(), "provider": o.a.provider}
	if u != nil {
		m["total_tokens"], m["total_price"], m["currency"] = u.TotalTokens, u.TotalPrice, u.Currency
	}
	return m
}

// Begin implements llm.Observer: a round's log and its model call's log start.
func (o *agentRun) Begin(_ context.Context, r *llm.Round) error {
	o.roundID, o.started, o.roundLabel = uuid.NewString(), time.Now(), fmt.Sprintf("ROUND %d", r.N)
	o.emit(agentLog{ID: o.roundID, Label: o.roundLabel, Status: "start", Metadata: map[string]any{"started_at": o.started.Unix()}})
	o.thoughtID = uuid.NewString()
	o.emit(agentLog{ID: o.thoughtID, Label: o.a.name + " Thought", ParentID: o.parent(), Status: "start",
		Metadata: map[string]any{"started_at": time.Now().Unix(), "provider": o.a.provider}})
	o.responses = nil
	return nil
}

// Started implements llm.Observer.
func (o *agentRun) Started(context.Context, *llm.Round) error { return nil }

// Delta implements llm.Observer: a function-calling model's text is the node's text as it
// streams. A ReAct model's thoughts are not: its answer is streamed once read (Said).
func (o *agentRun) Delta(_ *llm.Round, d string) {
	if !o.a.react {
		o.stream(d)
	}
}

func (o *agentRun) stream(d string) {
	o.text.WriteString(d)
	o.x.Stream("text", d)
}

// Said implements llm.Observer: the model call's log ends, and the round's too when the model
// answered or failed.
func (o *agentRun) Said(ctx context.Context, r *llm.Round, err error) error {
	o.total = models.AddUsage(o.total, r.Result.Usage)
	usage := r.Result.Usage
	if err != nil {
		msg := safeMessage(err)
		if ctx.Err() != nil {
			msg = "stopped"
		}
		o.emit(agentLog{ID: o.thoughtID, Label: o.a.name + " Thought", ParentID: o.parent(), Status: "error", Error: &msg, Metadata: o.meta(o.started, &usage)})
		o.emit(agentLog{ID: o.roundID, Label: o.roundLabel, Status: "error", Error: &msg, Metadata: o.meta(o.started, &o.total)})
		return err
	}
	said := r.Thought
	switch {
	case r.Plain:
		said = r.Answer
		o.stream(r.Answer)
	case r.Final:
		o.stream(r.Answer)
	}
	callNames := make([]any, len(r.Calls))
	for i, c := range r.Calls {
		callNames[i] = value.ObjectOf("name", c.Name, "args", c.Arguments)
	}
	o.emit(agentLog{ID: o.thoughtID, Label: o.a.name + " Thought", ParentID: o.parent(), Status: "success",
		Data: map[string]any{"output": map[string]any{"llm_response": said, "tool_calls": callNames}}, Metadata: o.meta(o.started, &usage)})
	if len(r.Calls) == 0 {
		o.emit(agentLog{ID: o.roundID, Label: o.roundLabel, Status: "success",
			Data: map[string]any{"output": map[string]any{"llm_response": said, "tool_responses": []any{}}}, Metadata: o.meta(o.started, &o.total)})
	}
	return nil
}

// Calling implements llm.Observer: a tool call's log starts.
func (o *agentRun) Calling(_ context.Context, r *llm.Round, i int) {
	c := r.Calls[i]
	o.callID, o.callStarted = uuid.NewString(), time.Now()
	o.emit(agentLog{ID: o.callID, Label: "CALL " + c.Name, ParentID: o.parent(), Status: "start",
		Metadata: map[string]any{"started_at": o.callStarted.Unix()}})
}

// Called implements llm.Observer: the tool call's log ends with its response; its files are
// kept for the node's output.
func (o *agentRun) Called(_ context.Context, r *llm.Round, i int, result string, files []tools.File) string {
	c := r.Calls[i]
	o.kept = append(o.kept, files...)
	provider := ""
	if f := llm.Find(o.offers, c.Name); f != nil {
		provider = f.Provider
	}
	m := o.meta(o.callStarted, nil)
	m["provider"] = provider
	o.emit(agentLog{ID: o.callID, Label: "CALL " + c.Name, ParentID: o.parent(), Status: "success", Metadata: m,
		Data: map[string]any{"output": map[string]any{"tool_call_id": c.ID, "tool_call_name": c.Name,
			"tool_call_input": c.Arguments, "tool_response": result}}})
	o.responses = append(o.responses, value.ObjectOf("tool_call_id", c.ID, "tool_call_name", c.Name, "tool_response", result))
	return result
}

// Done implements llm.Observer: the round's log ends with the tools' responses.
func (o *agentRun) Done(_ context.Context, r *llm.Round) error {
	o.emit(agentLog{ID: o.roundID, Label: o.roundLabel, Status: "success",
		Data: map[string]any{"output": map[string]any{"llm_response": r.Thought, "tool_responses": o.responses}}, Metadata: o.meta(o.started, &o.total)})
	return nil
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
