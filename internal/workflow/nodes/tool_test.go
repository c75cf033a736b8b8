package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// toolEvents records every event of a run.
type toolEvents struct {
	mu  sync.Mutex
	all []run.Event
}

func (s *toolEvents) Emit(ev run.Event) {
	s.mu.Lock()
	s.all = append(s.all, ev)
	s.mu.Unlock()
}

func (s *toolEvents) answer() string {
	var b strings.Builder
	for _, ev := range s.all {
		if ev.Kind == run.EventMessage {
			b.WriteString(ev.Answer)
		}
	}
	return b.String()
}

// finishedOutputs is the JSON of the outputs in the node_finished event of node id, as the wire
// has them.
func (s *toolEvents) finishedOutputs(t *testing.T, id string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.all {
		if ev.Kind != run.EventNodeFinished {
			continue
		}
		raw, err := json.Marshal(ev.Data)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			NodeID  string          `json:"node_id"`
			Outputs json.RawMessage `json:"outputs"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if d.NodeID == id {
			return string(d.Outputs)
		}
	}
	t.Fatalf("no node_finished of %s", id)
	return ""
}

// registry is a workspace tool registry with the built-in tools and the loopback inventory API
// registered as "inventory" and the loopback MCP server as "Team Notes" (identifier notes).
func toolRegistry(t *testing.T) *toolreg.Registry {
	t.Helper()
	st := testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	hc, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := toolreg.New(toolreg.Options{Store: st, Builtin: builtin.Find, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	api := toolregtest.NewAPI(t)
	if _, err := reg.AddAPI(t.Context(), "inventory", toolreg.API{Schema: api.Document, Auth: toolreg.AuthBearer, Key: toolregtest.APIToken}, false); err != nil {
		t.Fatal(err)
	}
	notes := toolregtest.NewMCP(t)
	if _, err := reg.AddMCP(t.Context(), "Team Notes", toolreg.MCP{ServerIdentifier: "notes", URL: notes.URL}, false); err != nil {
		t.Fatal(err)
	}
	return reg
}

// run runs g with the query and returns how it ended and its events.
func runGraph(t *testing.T, d nodes.Deps, g *workflow.Graph, query string) (workflow.Report, *toolEvents, *workflow.Pool) {
	t.Helper()
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, query)
	s := &toolEvents{}
	rep := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)}).Execute(context.Background(),
		workflow.Spec{Graph: g, Pool: pool, Out: s, Env: &nodes.Env{Inputs: map[string]any{"month": "3"}}})
	return rep, s, pool
}

func parse(t *testing.T, nodesList []any, edges []any) *workflow.Graph {
	t.Helper()
	g, err := workflow.Parse(map[string]any{"nodes": nodesList, "edges": edges})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestToolNodeBuiltin: a built-in tool gets its arguments from a form setting (constant), a
// variable and mixed text, typed as the tool declares them; its text is the node's text.
func TestToolNodeBuiltin(t *testing.T) {
	t.Parallel()
	d := nodes.Deps{Tools: builtin.Find}
	g := parse(t, []any{
		nodeOf("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "month"}}}),
		nodeOf("wd", "tool", map[string]any{"provider_type": "builtin", "provider_id": "time", "provider_name": "time",
			"tool_name": "weekday", "tool_configurations": map[string]any{"year": 2024},
			"tool_parameters": map[string]any{
				"month": map[string]any{"type": "variable", "value": []any{"start", "month"}},
				"day":   map[string]any{"type": "mixed", "value": "{{#sys.query#}}"},
			}}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#wd.text#}}"}),
	}, []any{edgeOf("start", "source", "wd"), edgeOf("wd", "source", "a")})
	rep, s, pool := runGraph(t, d, g, "14")
	if rep.Status != workflow.StatusSucceeded || s.answer() != "March 14, 2024 is Thursday." {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	j, _ := pool.Get([]string{"wd", "json"})
	if b, _ := json.Marshal(j); string(b) != `[{"data":[]}]` {
		t.Fatalf("json %s", b)
	}
	// A day the tool refuses fails the node with the tool's words.
	rep, _, _ = runGraph(t, d, g, "31st")
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "day") {
		t.Fatalf("%+v", rep)
	}
}

// TestToolNodeRegisteredAPI: an operation of a registered API answers JSON, which is the json
// output and the text; an MCP server's tool answers text; an operation that fails with HTTP 500 fails the node (ToolInvokeError),
// which a fail branch catches; a tool the server does not have fails the node too.
func TestToolNodeRegisteredAPI(t *testing.T) {
	t.Parallel()
	reg := toolRegistry(t)
	d := nodes.Deps{Tools: reg.Find}
	item := nodeOf("item", "tool", map[string]any{"provider_type": "api", "provider_id": "a-dify-workspace-id",
		"provider_name": "inventory", "tool_name": "getItem",
		"tool_parameters": map[string]any{"id": map[string]any{"type": "mixed", "value": "sku-{{#sys.query#}}"}}})
	g := parse(t, []any{
		nodeOf("start", "start", map[string]any{}), item,
		nodeOf("a", "answer", map[string]any{"answer": "{{#item.text#}}"}),
	}, []any{edgeOf("start", "source", "item"), edgeOf("item", "source", "a")})
	rep, s, pool := runGraph(t, d, g, "42")
	if rep.Status != workflow.StatusSucceeded || !strings.Contains(s.answer(), `"id":"sku-42"`) {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	j, _ := pool.Get([]string{"item", "json"})
	list, _ := j.([]any)
	if len(list) != 1 {
		t.Fatalf("json %#v", j)
	}
	if name, _ := list[0].(*value.Object).Get("name"); name != "widget" {
		t.Fatalf("json %#v", list[0])
	}

	broken := nodeOf("item", "tool", map[string]any{"provider_type": "api", "provider_name": "inventory", "tool_name": "broken",
		"error_strategy": "fail-branch"})
	g = parse(t, []any{
		nodeOf("start", "start", map[string]any{}), broken,
		nodeOf("ok", "answer", map[string]any{"answer": "ok"}),
		nodeOf("failed", "answer", map[string]any{"answer": "failed: {{#item.error_type#}}"}),
	}, []any{edgeOf("start", "source", "item"), edgeOf("item", "source", "ok"), edgeOf("item", "fail-branch", "failed")})
	rep, s, _ = runGraph(t, d, g, "x")
	if rep.Status != workflow.StatusPartialSucceeded || s.answer() != "failed: ToolInvokeError" {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}

	// An MCP server's tool, named by the server's identifier; its text answer is the text.
	search := nodeOf("item", "tool", map[string]any{"provider_type": "mcp", "provider_id": "notes", "provider_name": "Team Notes",
		"tool_name": toolregtest.MCPToolSearch, "tool_parameters": map[string]any{"query": map[string]any{"type": "mixed", "value": "{{#sys.query#}}s"}}})
	g = parse(t, []any{
		nodeOf("start", "start", map[string]any{}), search,
		nodeOf("a", "answer", map[string]any{"answer": "{{#item.text#}}"}),
	}, []any{edgeOf("start", "source", "item"), edgeOf("item", "source", "a")})
	rep, s, _ = runGraph(t, d, g, "budget")
	if rep.Status != workflow.StatusSucceeded || s.answer() != "found: BUDGETS" {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}

	// An MCP tool with an output schema: its structured content's members are output variables
	// after text, files and json, as Dify exposes a tool's declared outputs.
	stats := nodeOf("item", "tool", map[string]any{"provider_type": "mcp", "provider_id": "notes", "provider_name": "Team Notes",
		"tool_name": "stats", "tool_parameters": map[string]any{"query": map[string]any{"type": "mixed", "value": "{{#sys.query#}}"}}})
	g = parse(t, []any{
		nodeOf("start", "start", map[string]any{}), stats,
		nodeOf("a", "answer", map[string]any{"answer": "{{#item.query#}}: {{#item.hits#}}"}),
	}, []any{edgeOf("start", "source", "item"), edgeOf("item", "source", "a")})
	rep, s, _ = runGraph(t, d, g, "tea")
	if rep.Status != workflow.StatusSucceeded || s.answer() != "TEA: 3" {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	if raw := s.finishedOutputs(t, "item"); !strings.HasPrefix(raw, `{"text":"","files":[],"json":[{`) || !strings.HasSuffix(raw, `,"hits":3,"query":"TEA"}`) {
		t.Fatalf("node_finished outputs %s", raw)
	}

	missing := nodeOf("item", "tool", map[string]any{"provider_type": "api", "provider_name": "nowhere", "tool_name": "getItem"})
	g = parse(t, []any{nodeOf("start", "start", map[string]any{}), missing},
		[]any{edgeOf("start", "source", "item")})
	rep, _, _ = runGraph(t, d, g, "x")
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "not available") {
		t.Fatalf("%+v", rep)
	}
}

// TestAgentNodeFunctionCalling: the agent node's model calls a built-in tool and a registered
// API's operation in its first round, reads their results in the second and answers; each round,
// model call and tool call is an agent_log event with no workflow run id, the answer streams,
// and the usage of both rounds is summed. A tool the model names that the node lacks is an
// observation, not a failure.
func TestAgentNodeFunctionCalling(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	d.Tools = toolRegistry(t).Find
	g := parse(t, []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("ag", "agent", map[string]any{
			"agent_strategy_provider_name": "langgenius/agent/agent", "agent_strategy_name": "function_calling",
			"agent_parameters": map[string]any{
				"model": map[string]any{"type": "constant", "value": map[string]any{"provider": "openai", "model": "gpt-4o-mini",
					"mode": "chat", "completion_params": map[string]any{}}},
				"instruction":        map[string]any{"type": "constant", "value": "You run a shop."},
				"query":              map[string]any{"type": "constant", "value": "{{#sys.query#}}"},
				"maximum_iterations": map[string]any{"type": "constant", "value": 3},
				"tools": map[string]any{"type": "constant", "value": []any{
					map[string]any{"enabled": true, "provider_name": "maths", "tool_name": "eval_expression", "type": "builtin"},
					map[string]any{"enabled": true, "provider_name": "inventory", "tool_name": "getItem", "type": "api"},
					map[string]any{"enabled": false, "provider_name": "inventory", "tool_name": "broken", "type": "api"},
				}},
			}}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#ag.text#}}"}),
	}, []any{edgeOf("start", "source", "ag"), edgeOf("ag", "source", "a")})
	up.OnEach("price of sku-7", openaitest.Reply{ToolCalls: []providers.ToolCall{
		{Name: "eval_expression", Arguments: `{"expression": "3 * 4"}`},
		{Name: "getItem", Arguments: `{"id": "sku-7"}`},
		{Name: "broken", Arguments: `{}`},
	}}, openaitest.Reply{Chunks: []string{"Twelve ", "widgets."}})
	rep, s, pool := runGraph(t, d, g, "price of sku-7?")
	if rep.Status != workflow.StatusSucceeded || s.answer() != "Twelve widgets." {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	reqs := up.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 2 || reqs[0].Messages[0].Text() != "You run a shop." {
		t.Fatalf("requests %+v", reqs)
	}
	var results []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Text())
		}
	}
	if len(results) != 3 || results[0] != "12" || !strings.Contains(results[1], `"name":"widget"`) ||
		!strings.Contains(results[2], "there is not a tool named broken") {
		t.Fatalf("tool results %q", results)
	}
	var logs []map[string]any
	for _, ev := range s.all {
		if ev.Kind != run.EventAgentLog {
			continue
		}
		b, _ := json.Marshal(ev.Data)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["node_id"] != "ag" || m["node_execution_id"] == "" || m["workflow_run_id"] != nil {
			t.Fatalf("agent_log %s", b)
		}
		if m["status"] != "start" {
			logs = append(logs, m)
		}
	}
	var labels []string
	for _, l := range logs {
		labels = append(labels, l["label"].(string))
	}
	if got := strings.Join(labels, ","); got != "gpt-4o-mini Thought,CALL eval_expression,CALL getItem,CALL broken,ROUND 1,gpt-4o-mini Thought,ROUND 2" {
		t.Fatalf("agent logs %s", got)
	}
	// The json output lists the finished logs, then {"data": []}.
	j, _ := pool.Get([]string{"ag", "json"})
	b, err := json.Marshal(j)
	if list, _ := j.([]any); err != nil || len(list) != len(logs)+1 || !strings.HasSuffix(string(b), `{"data":[]}]`) ||
		!strings.Contains(string(b), `"label":"CALL getItem"`) {
		t.Fatalf("json %s (%v)", b, err)
	}
	text, _ := pool.Get([]string{"ag", "text"})
	usage, _ := pool.Get([]string{"ag", "usage"})
	if text != "Twelve widgets." || usage == nil || rep.Usage.TotalTokens == 0 {
		t.Fatalf("text %v usage %v %+v", text, usage, rep.Usage)
	}
}

// TestAgentNodeLastRoundOffersNoTools: with maximum_iterations 1 the only round offers no
// tools, so the model must answer.
func TestAgentNodeLastRoundOffersNoTools(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	d.Tools = builtin.Find
	g := parse(t, []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("ag", "agent", map[string]any{"agent_parameters": map[string]any{
			"model":              map[string]any{"value": map[string]any{"provider": "openai", "model": "gpt-4o-mini"}},
			"query":              map[string]any{"value": "{{#sys.query#}}"},
			"maximum_iterations": map[string]any{"value": "1"},
			"tools": map[string]any{"value": []any{
				map[string]any{"enabled": true, "provider_name": "maths", "tool_name": "eval_expression", "type": "builtin"}}},
		}}),
	}, []any{edgeOf("start", "source", "ag")})
	rep, _, _ := runGraph(t, d, g, "hi")
	if rep.Status != workflow.StatusSucceeded || len(up.Requests()) != 1 || len(up.Requests()[0].Tools) != 0 {
		t.Fatalf("%+v %+v", rep, up.Requests())
	}
}

// TestAgentNodeReAct: with the ReAct strategy the tools are described in the system message and
// none is offered natively; the model's action runs the tool, its observation is in the next
// round's scratchpad, and the final answer is the node's text. A model that writes an action in
// the last round, where no tool is offered, fails the node.
func TestAgentNodeReAct(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	d.Tools = builtin.Find
	node := func(rounds int) *workflow.Graph {
		return parse(t, []any{
			nodeOf("start", "start", map[string]any{}),
			nodeOf("ag", "agent", map[string]any{"agent_strategy_provider_name": "langgenius/agent/agent", "agent_strategy_name": "ReAct",
				"agent_parameters": map[string]any{
					"model":              map[string]any{"value": map[string]any{"provider": "openai", "model": "gpt-4o-mini"}},
					"instruction":        map[string]any{"value": "Be exact."},
					"query":              map[string]any{"value": "{{#sys.query#}}"},
					"maximum_iterations": map[string]any{"value": rounds},
					"tools": map[string]any{"value": []any{
						map[string]any{"enabled": true, "provider_name": "maths", "tool_name": "eval_expression", "type": "builtin"}}},
				}}),
			nodeOf("a", "answer", map[string]any{"answer": "{{#ag.text#}}"}),
		}, []any{edgeOf("start", "source", "ag"), edgeOf("ag", "source", "a")})
	}
	action := "Thought: I compute it.\nAction:\n```\n{\"action\": \"eval_expression\", \"action_input\": {\"expression\": \"2 ** 10\"}}\n```"
	final := "Thought: I know.\nAction:\n```\n{\"action\": \"Final Answer\", \"action_input\": \"It is 1024.\"}\n```"
	up.On("two to the tenth", openaitest.Reply{Text: action})
	// The next round asks the model to continue its scratchpad.
	up.On("continue", openaitest.Reply{Text: final})
	rep, s, _ := runGraph(t, d, node(3), "two to the tenth?")
	if rep.Status != workflow.StatusSucceeded || s.answer() != "It is 1024." {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	reqs := up.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 0 || !strings.Contains(reqs[0].Messages[0].Text(), "Be exact.") ||
		!strings.Contains(reqs[0].Messages[0].Text(), "eval_expression") {
		t.Fatalf("first request %+v", reqs[0])
	}
	var scratch string
	for _, m := range reqs[1].Messages {
		if m.Role == "assistant" {
			scratch = m.Text()
		}
	}
	if !strings.Contains(scratch, "Observation: 1024") {
		t.Fatalf("scratchpad %q", scratch)
	}

	up.On("always acting", openaitest.Reply{Text: action})
	rep, _, _ = runGraph(t, d, node(1), "always acting")
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "last allowed round") {
		t.Fatalf("%+v", rep)
	}
}

// TestAgentNodeMemoryAndVariableQuery: an agent node's query given as a variable is that
// variable's value, and with memory the conversation's last exchanges (the window) come before it.
func TestAgentNodeMemoryAndVariableQuery(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	g := parse(t, []any{
		nodeOf("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "q"}}}),
		nodeOf("ag", "agent", map[string]any{"memory": map[string]any{"window": map[string]any{"enabled": true, "size": 1}},
			"agent_parameters": map[string]any{
				"model": map[string]any{"value": map[string]any{"provider": "openai", "model": "gpt-4o-mini"}},
				"query": map[string]any{"type": "variable", "value": []any{"start", "q"}},
			}}),
	}, []any{edgeOf("start", "source", "ag")})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "ignored")
	history := func(_ context.Context, n int) ([]store.Message, error) {
		all := []store.Message{{Query: "first?", Answer: "one"}, {Query: "second?", Answer: "two"}}
		return all[len(all)-n:], nil
	}
	rep := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)}).Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool,
		Out: &toolEvents{}, Env: &nodes.Env{Inputs: map[string]any{"q": "third?"}, History: history}})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("%+v", rep)
	}
	var got []string
	for _, m := range up.Requests()[0].Messages {
		got = append(got, m.Role+":"+m.Text())
	}
	if strings.Join(got, "|") != "user:second?|assistant:two|user:third?" {
		t.Fatalf("prompt %q", got)
	}
}

// TestToolTimeouts: a tool that does not answer within the tool timeout fails a tool node
// (ToolInvokeError), and is an observation for an agent node's model, which then answers.
func TestToolTimeouts(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	d.Tools, d.ToolTimeout = toolRegistry(t).Find, 50*time.Millisecond
	g := parse(t, []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("slow", "tool", map[string]any{"provider_type": "api", "provider_name": "inventory", "tool_name": "slow"}),
	}, []any{edgeOf("start", "source", "slow")})
	rep, _, _ := runGraph(t, d, g, "x")
	var ne *workflow.NodeError
	if rep.Status != workflow.StatusFailed || !errors.As(rep.Err, &ne) || ne.Type != "ToolInvokeError" || !strings.Contains(rep.Err.Error(), "did not answer within") {
		t.Fatalf("%+v", rep)
	}

	g = parse(t, []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("ag", "agent", map[string]any{"agent_parameters": map[string]any{
			"model": map[string]any{"value": map[string]any{"provider": "openai", "model": "gpt-4o-mini"}},
			"query": map[string]any{"value": "{{#sys.query#}}"},
			"tools": map[string]any{"value": []any{map[string]any{"provider_id": "notes", "provider_name": "Team Notes", "tool_name": "hang", "type": "mcp"}}},
		}}),
	}, []any{edgeOf("start", "source", "ag")})
	up.OnEach("wait for it", openaitest.Reply{ToolCalls: []providers.ToolCall{{Name: "hang", Arguments: "{}"}}}, openaitest.Reply{Text: "Gave up."})
	rep, _, pool := runGraph(t, d, g, "wait for it")
	text, _ := pool.Get([]string{"ag", "text"})
	if rep.Status != workflow.StatusSucceeded || text != "Gave up." {
		t.Fatalf("%+v %v", rep, text)
	}
	var obs string
	for _, m := range up.Requests()[1].Messages {
		if m.Role == "tool" {
			obs = m.Text()
		}
	}
	if !strings.Contains(obs, "did not answer within") {
		t.Fatalf("observation %q", obs)
	}
}

// mcpAgentGraph is a Chatflow whose agent node runs hjlarry/agent's MCP strategy with the
// mcp_server parameter given and the built-in maths tool of its own.
func mcpAgentGraph(t *testing.T, mcpServer string) *workflow.Graph {
	return mcpStrategyGraph(t, workflow.AgentProviderMCP, "function_calling", workflow.MCPServerParam, mcpServer)
}

// mcpStrategyGraph is mcpAgentGraph with the strategy, and the parameter that names its
// servers, given.
func mcpStrategyGraph(t *testing.T, provider, strategy, param, servers string) *workflow.Graph {
	return parse(t, []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("ag", "agent", map[string]any{
			"agent_strategy_provider_name": provider, "agent_strategy_name": strategy,
			"agent_parameters": map[string]any{
				"model": map[string]any{"type": "constant", "value": map[string]any{"provider": "openai", "model": "gpt-4o-mini",
					"mode": "chat", "completion_params": map[string]any{}}},
				"instruction":        map[string]any{"type": "constant", "value": "You keep notes."},
				"query":              map[string]any{"type": "constant", "value": "{{#sys.query#}}"},
				"maximum_iterations": map[string]any{"type": "constant", "value": 3},
				param:                map[string]any{"type": "constant", "value": servers},
				"tools": map[string]any{"type": "constant", "value": []any{
					map[string]any{"enabled": true, "provider_name": "maths", "tool_name": "eval_expression", "type": "builtin"},
				}},
			}}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#ag.text#}}"}),
	}, []any{edgeOf("start", "source", "ag"), edgeOf("ag", "source", "a")})
}

// TestAgentNodeMCPStrategy: hjlarry/agent's MCP strategy offers the tools of the MCP servers
// its mcp_server parameter names (one URL, or a JSON object of servers with headers) beside the
// node's own, and calls them on the server; a server it cannot reach fails the node, naming it
// without the credentials of its URL.
func TestAgentNodeMCPStrategy(t *testing.T) {
	t.Parallel()
	notes := toolregtest.NewMCP(t)
	hc, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]string{
		"a URL":         notes.URL,
		"an SSE URL":    notes.URL + "/sse",
		"a JSON object": `{"notes": {"url": "` + notes.URL + `", "headers": {"Authorization": "Bearer n0tes"}, "timeout": 5}}`,
	} {
		t.Run(name, func(t *testing.T) {
			d, up := deps(t)
			d.Tools = toolRegistry(t).Find
			d.MCPClient = hc
			up.OnEach("notes on "+name, openaitest.Reply{ToolCalls: []providers.ToolCall{
				{Name: "notes_search", Arguments: `{"query": "budget"}`},
				{Name: "eval_expression", Arguments: `{"expression": "2 + 2"}`},
			}}, openaitest.Reply{Chunks: []string{"Found ", "it."}})
			rep, s, _ := runGraph(t, d, mcpAgentGraph(t, spec), "notes on "+name+"?")
			if rep.Status != workflow.StatusSucceeded || s.answer() != "Found it." {
				t.Fatalf("%+v, answer %q", rep, s.answer())
			}
			reqs := up.Requests()
			var offered []string
			for _, tl := range reqs[0].Tools {
				offered = append(offered, tl.Name)
			}
			if !slices.Contains(offered, "eval_expression") || !slices.Contains(offered, "notes_search") || !slices.Contains(offered, "stats") {
				t.Fatalf("offered %v", offered)
			}
			var results []string
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" {
					results = append(results, m.Text())
				}
			}
			if len(results) != 2 || results[0] != "found: BUDGET" || results[1] != "4" {
				t.Fatalf("tool results %q", results)
			}
			if name == "a JSON object" && notes.Auth.Load() != "Bearer n0tes" {
				t.Fatalf("the server was called with Authorization %q", notes.Auth.Load())
			}
		})
	}

	// junjiem/mcp_see_agent: a JSON object of servers, quoted as an injected variable leaves it,
	// with function calling and with ReAct.
	config := `"{\"notes\": {\"transport\": \"streamable_http\", \"url\": \"` + notes.URL + `\"}}"`
	var quoted string
	if err := json.Unmarshal([]byte(config), &quoted); err != nil {
		t.Fatal(err)
	}
	quoted = `"` + quoted + `"`
	t.Run("mcp_see_agent function calling", func(t *testing.T) {
		d, up := deps(t)
		d.Tools = toolRegistry(t).Find
		d.MCPClient = hc
		up.OnEach("see notes", openaitest.Reply{ToolCalls: []providers.ToolCall{{Name: "notes_search", Arguments: `{"query": "plan"}`}}},
			openaitest.Reply{Chunks: []string{"Seen."}})
		g := mcpStrategyGraph(t, workflow.AgentProviderMCPSee, "mcp_sse_function_calling", workflow.MCPServersConfigParam, quoted)
		rep, s, _ := runGraph(t, d, g, "see notes?")
		if rep.Status != workflow.StatusSucceeded || s.answer() != "Seen." {
			t.Fatalf("%+v, answer %q", rep, s.answer())
		}
		if res := up.Requests()[1].Messages; res[len(res)-1].Text() != "found: PLAN" {
			t.Fatalf("tool result %q", res[len(res)-1].Text())
		}
	})
	t.Run("mcp_see_agent ReAct", func(t *testing.T) {
		d, up := deps(t)
		d.Tools = toolRegistry(t).Find
		d.MCPClient = hc
		up.On("react notes", openaitest.Reply{Text: "Thought: search\nAction:\n```\n{\"action\": \"notes_search\", \"action_input\": {\"query\": \"memo\"}}\n```"})
		// The next round asks the model to continue its scratchpad.
		up.On("continue", openaitest.Reply{Text: "Thought: done\nAction:\n```\n{\"action\": \"Final Answer\", \"action_input\": \"Memo found.\"}\n```"})
		g := mcpStrategyGraph(t, workflow.AgentProviderMCPSee, "mcp_sse_ReAct", workflow.MCPServersConfigParam, quoted)
		rep, s, _ := runGraph(t, d, g, "react notes?")
		if rep.Status != workflow.StatusSucceeded || s.answer() != "Memo found." {
			t.Fatalf("%+v, answer %q", rep, s.answer())
		}
		reqs := up.Requests()
		if len(reqs) != 2 || !strings.Contains(reqs[0].Messages[0].Text(), "notes_search") || !strings.Contains(fmt.Sprint(reqs[1].Messages), "found: MEMO") {
			t.Fatalf("requests %+v", reqs)
		}
	})
	t.Run("mcp_see_agent bad server name", func(t *testing.T) {
		d, _ := deps(t)
		d.MCPClient = hc
		g := mcpStrategyGraph(t, workflow.AgentProviderMCPSee, "mcp_sse_function_calling", workflow.MCPServersConfigParam,
			`{"my notes": {"url": "`+notes.URL+`"}}`)
		if rep, _, _ := runGraph(t, d, g, "hello"); rep.Status != workflow.StatusFailed || rep.Err == nil ||
			!strings.Contains(rep.Err.Error(), `MCP server name "my notes"`) {
			t.Fatalf("%+v", rep)
		}
	})

	t.Run("a server that is down", func(t *testing.T) {
		d, up := deps(t)
		d.MCPClient = hc
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		rep, _, _ := runGraph(t, d, mcpAgentGraph(t, down.URL+"/sse?key=s3cret"), "anyone there?")
		if rep.Status != workflow.StatusFailed || rep.Err == nil || !strings.Contains(rep.Err.Error(), `MCP server "default_server"`) || strings.Contains(rep.Err.Error(), "s3cret") {
			t.Fatalf("%+v", rep)
		}
		if len(up.Requests()) != 0 {
			t.Fatal("the model was called without the server's tools")
		}
	})
	t.Run("not a server", func(t *testing.T) {
		d, _ := deps(t)
		d.MCPClient = hc
		if rep, _, _ := runGraph(t, d, mcpAgentGraph(t, "my notes server"), "hello"); rep.Status != workflow.StatusFailed ||
			rep.Err == nil || !strings.Contains(rep.Err.Error(), "neither an MCP server's URL nor a JSON object") {
			t.Fatalf("%+v", rep)
		}
	})
}
