package dsl

import (
	"fmt"
	"slices"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/triggers"
	"github.com/parleyhq/parley/internal/workflow"
)

// readWorkflow reads the workflow section of a Chatflow: the graph (kept as the file has it,
// with model references rewritten to this server's names), the features, and the environment
// and conversation variables. The start node's variables become the app's input form, so that
// requests are validated as for every other kind. A graph with node types Parley does not run
// is refused, every such node listed with its id. A Workflow app may start from trigger nodes
// instead (webhooks, schedules: internal/triggers), each checked as it will run; a plugin
// trigger is refused with the plugin it names.
func (c *converter) readWorkflow(top *section) {
	if !top.has("workflow") {
		top.raw("workflow")
		c.p.add("workflow", "missing: a %s app is defined by its workflow section", c.a.Mode)
		return
	}
	ws := top.sub("workflow")
	graph := ws.mapping("graph")
	w := &apps.Workflow{Graph: graph}
	for _, v := range ws.list("environment_variables") {
		if m, ok := v.(map[string]any); ok {
			w.EnvironmentVariables = append(w.EnvironmentVariables, m)
		}
	}
	for _, v := range ws.list("conversation_variables") {
		if m, ok := v.(map[string]any); ok {
			w.ConversationVariables = append(w.ConversationVariables, m)
		}
	}
	fs := ws.sub("features")
	c.readFeatures(fs)
	c.keep(fs.path, fs.rest())
	c.keep(ws.path, ws.rest())
	c.a.Workflow = w

	g, err := workflow.Parse(graph)
	if err != nil {
		c.p.add(ws.at("graph"), "%v", err)
		return
	}
	supported := c.opts.NodeTypes
	if supported == nil {
		supported = func(string) bool { return false }
	}
	nodeIndex := map[string]int{}
	for i, n := range list(graph["nodes"]) {
		if m, ok := n.(map[string]any); ok {
			if id, ok := scalarText(m["id"]); ok {
				nodeIndex[id] = i
			}
		}
	}
	nodePath := func(id string) string { return index(ws.at("graph")+".nodes", nodeIndex[id]) }
	for _, pr := range g.Validate(supported) {
		switch {
		case pr.NodeID == "":
			c.p.add(ws.at("graph"), "%s", pr.Msg)
		case workflow.IsTrigger(pr.Type):
			// Trigger nodes are checked below, with what is wrong with each.
		default:
			c.p.add(nodePath(pr.NodeID), "node %s: %s", pr.NodeID, pr.Msg)
		}
	}
	if c.a.Mode == apps.ModeWorkflow {
		// A Workflow app may start from triggers (webhooks, schedules) instead of its start
		// node; each is checked as it will run, and plugin triggers are refused.
		problems := triggers.Check(g)
		for _, id := range g.Triggers {
			if msg, ok := problems[id]; ok {
				c.p.add(nodePath(id), "node %s: %s", id, msg)
			}
		}
	} else {
		for _, id := range g.Triggers {
			c.p.add(nodePath(id), "node %s: a %s node starts a Workflow app; a Chatflow starts from its start node", id, g.Nodes[id].Type)
		}
	}
	if c.a.Mode == apps.ModeWorkflow {
		// A Workflow app's outputs are its end nodes'; Dify's editor refuses to publish one
		// without, and an answer node has no conversation to answer in.
		ends := 0
		for _, id := range g.Order {
			switch n := g.Nodes[id]; {
			case n.Type == workflow.TypeEnd && n.ParentID == "":
				ends++
			case n.Type == workflow.TypeAnswer:
				c.p.add(nodePath(id), "node %s: an answer node belongs to Chatflow (advanced-chat) apps; a Workflow app ends with end nodes", id)
			}
		}
		if ends == 0 {
			c.p.add(ws.at("graph"), "the graph has no end node: a Workflow app's outputs are its end node's")
		}
	}
	for _, id := range g.Order {
		n := g.Nodes[id]
		if n.Type == workflow.TypeStart && n.ParentID == "" {
			c.readStartForm(nodePath(id), n.Data)
		}
		if n.Type == "knowledge-retrieval" {
			c.resolveNodeDatasets(nodePath(id)+".data.dataset_ids", n.Data)
		}
		if m, ok := n.Data["model"].(map[string]any); ok && modelNodes[n.Type] {
			c.resolveNodeModel(nodePath(id)+".data.model", m)
		}
		c.checkNodeTools(nodePath(id), id, n)
	}
}

// resolveNodeModel rewrites a node's model reference to the configured model it resolves to
// (or the fallback), as an app's model is resolved.
func (c *converter) resolveNodeModel(path string, m map[string]any) {
	provider, _ := scalarText(m["provider"])
	name, _ := scalarText(m["name"])
	r, why := c.env.resolveModel(modelLLM, provider, name)
	if why != "" {
		if c.fallback == nil {
			c.p.addUnresolvedModel(path, why)
			return
		}
		c.p.note(NoteSubstituted, path, "%s; using %s:%s (--model-fallback)", why, c.fallback.provider.Name, c.fallback.model.Name)
		r = *c.fallback
	}
	m["provider"], m["name"] = r.provider.Name, r.model.Name
}

// resolveNodeDatasets rewrites a knowledge-retrieval node's dataset references to the knowledge
// bases they resolve to, as an app's datasets are resolved (--dataset maps Dify's ids).
//
// References that stay unmapped (see converter.resolveDataset) are moved to the node's
// unmappedDatasetIDs key, which the node does not read and the export writes back.
func (c *converter) resolveNodeDatasets(path string, data map[string]any) {
	var names, unmapped []any
	for i, v := range list(data["dataset_ids"]) {
		ref, _ := scalarText(v)
		if ref == "" {
			c.p.note(NoteChanged, index(path, i), "an empty dataset id was left out")
			continue
		}
		if name, ok := c.resolveDataset(index(path, i), ref); ok {
			names = append(names, name)
		} else if slices.Contains(c.a.UnmappedDatasets, ref) {
			unmapped = append(unmapped, ref)
		}
	}
	data["dataset_ids"] = names
	if unmapped != nil {
		data[unmappedDatasetIDs] = unmapped
	}
}

// unmappedDatasetIDs is the key under which a knowledge-retrieval node of an imported app keeps
// the dataset references the import could not map (Dify ids of another workspace).
const unmappedDatasetIDs = "unmapped_dataset_ids"

// readStartForm turns the start node's variables into the app's input form.
func (c *converter) readStartForm(path string, data map[string]any) {
	seen := map[string]bool{}
	for i, v := range list(data["variables"]) {
		m, ok := v.(map[string]any)
		if !ok {
			c.p.add(index(path+".data.variables", i), "expected a mapping")
			continue
		}
		s := newSection(c.p, index(path+".data.variables", i), m)
		f := apps.InputField{Type: s.str("type"), Variable: s.str("variable"), Label: s.str("label"),
			Required: s.boolean("required"), MaxLength: s.integer("max_length")}
		if f.Type == "" {
			f.Type = apps.InputText
		}
		if _, ok := scalarText(m["default"]); ok && m["default"] != nil {
			f.Default = s.str("default")
		}
		if s.has("options") {
			f.Options = s.strings("options")
		}
		switch {
		case f.Variable == "":
			c.p.add(s.at("variable"), "missing")
			continue
		case seen[f.Variable]:
			c.p.add(s.at("variable"), "%q is declared twice", f.Variable)
			continue
		}
		seen[f.Variable] = true
		c.a.UserInputForm = append(c.a.UserInputForm, f)
	}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// modelNodes are the node types whose data.model names an LLM.
var modelNodes = map[string]bool{"llm": true, "question-classifier": true, "parameter-extractor": true}

// checkNodeTools reports the tools of a tool node, or of an agent node, that this server does
// not have, each with its node's id: a problem, or with --lenient a note (the node then fails
// when it runs, or its agent tells the model the tool is missing). An agent node's model is
// resolved as an LLM node's is.
func (c *converter) checkNodeTools(path, id string, n *workflow.Node) {
	var refs []apps.Tool
	switch n.Type {
	case "tool":
		s := newSection(c.p, path+".data", n.Data)
		refs = append(refs, apps.Tool{ProviderType: s.str("provider_type"), ProviderID: s.str("provider_id"),
			ProviderName: s.str("provider_name"), Name: s.str("tool_name"), Enabled: true})
	case "agent":
		provider, _ := scalarText(n.Data["agent_strategy_provider_name"])
		strategy, _ := scalarText(n.Data["agent_strategy_name"])
		if _, ok := workflow.LookupAgentStrategy(provider, strategy); !ok {
			c.p.add(path, "node %s: agent strategy %q of %q is not supported yet (%s are)", id, strategy, provider, workflow.SupportedAgentStrategies)
			return
		}
		params, _ := n.Data["agent_parameters"].(map[string]any)
		if mp, ok := params["model"].(map[string]any); ok {
			if m, ok := mp["value"].(map[string]any); ok {
				ref := map[string]any{"provider": m["provider"], "name": m["model"]}
				c.resolveNodeModel(path+".data.agent_parameters.model.value", ref)
				m["provider"], m["model"] = ref["provider"], ref["name"]
			}
		}
		tp, _ := params["tools"].(map[string]any)
		for _, t := range list(tp["value"]) {
			tm, ok := t.(map[string]any)
			if !ok {
				continue
			}
			if on, ok := tm["enabled"].(bool); ok && !on {
				continue
			}
			typ, _ := scalarText(tm["type"])
			pid, _ := scalarText(tm["provider_id"])
			pname, _ := scalarText(tm["provider_name"])
			name, _ := scalarText(tm["tool_name"])
			if pid == "" {
				// Dify names an agent node's tool by its provider's name only.
				pid = pname
			}
			refs = append(refs, apps.Tool{ProviderType: typ, ProviderID: pid, ProviderName: pname, Name: name, Enabled: true})
		}
	}
	for _, t := range refs {
		if c.env.hasTool(t) {
			continue
		}
		provider := t.ProviderID
		if provider == "" || (t.ProviderType == "api" && t.ProviderName != "") {
			provider = t.ProviderName
		}
		what := fmt.Sprintf("node %s: tool %q of provider %q (%s) is not available on this server", id, t.Name, provider, t.ProviderType)
		if !c.opts.Lenient {
			c.p.add(path, "%s; import without --strict to keep it anyway", what)
			continue
		}
		c.p.note(NoteMissingTool, path, "%s; kept, and running the node fails", what)
	}
}
