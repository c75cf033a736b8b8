package dsl

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
)

// Agent apps (mode agent, DSL 0.7.0) are not defined by a model_config: the file's `agent`
// section names one of its `agent_packages` (package_ref), and that package is the Agent the
// app is bound to: display metadata, the "soul" (model, prompt, tools, knowledge, app features,
// app variables) and the assets Dify leaves out of exports (skills, files). The import reads
// the package into the app's bound agent as an unpublished draft, as Dify does.

// defaultPackageRef is the package reference written for an app that did not come with one.
const defaultPackageRef = "agent_1"

// packageRefPath is where an import records the file's package reference, for the export.
const packageRefPath = "agent"

// readAgentApp reads the agent package an Agent app is bound to.
func (c *converter) readAgentApp(top *section) {
	ag := top.sub("agent")
	ref := ag.str("package_ref")
	c.keep(ag.path, ag.rest())
	if ref == "" {
		if !top.has("agent") {
			c.p.add("agent", "missing: an agent app names its agent package in agent.package_ref")
		} else {
			c.p.add(ag.at("package_ref"), "missing: the agent app names no agent package")
		}
		top.raw("agent_packages")
		return
	}
	c.keepIn(packageRefPath, "package_ref", ref)
	pkgs := top.sub("agent_packages")
	pv, _ := pkgs.raw(ref)
	for _, other := range slices.Sorted(maps.Keys(pkgs.rest())) {
		c.p.note(NoteChanged, pkgs.at(other), "agent package %q is not the app's agent (agent.package_ref) and was left out", other)
	}
	if pv == nil {
		c.p.add(pkgs.at(ref), "missing: agent.package_ref names this package, which the file does not hold")
		return
	}
	pk := newSection(c.p, pkgs.at(ref), pv)
	prefix := pk.path
	ac := &apps.AgentConfig{}
	if pk.has("schema_version") {
		if v := pk.integer("schema_version"); v != 1 {
			c.p.add(pk.at("schema_version"), "agent package schema version %d is not supported (1 is)", v)
		}
	}
	md := pk.sub("metadata")
	ac.Name, ac.Description, ac.Role = md.str("name"), md.str("description"), md.str("role")
	ac.Icon = apps.Icon{Type: md.str("icon_type"), Icon: md.str("icon"), Background: md.str("icon_background")}
	c.keep(md.path, md.rest())

	soul := pk.sub("soul")
	if soul.has("schema_version") {
		if v := soul.integer("schema_version"); v != 1 {
			c.p.add(soul.at("schema_version"), "agent soul schema version %d is not supported (1 is)", v)
		}
	}
	c.readSoulModel(soul)
	pr := soul.sub("prompt")
	ac.SystemPrompt = pr.str("system_prompt")
	c.keep(pr.path, pr.rest())
	c.readSoulTools(soul.sub("tools"))
	c.readSoulKnowledge(soul.sub("knowledge"))
	af := soul.sub("app_features")
	c.readFeatures(af)
	c.noteFeaturesNotRun(af)
	c.keep(af.path, af.rest())
	c.readAppVariables(soul)
	c.keep(soul.path, soul.rest())
	c.keep(pk.path, pk.rest())

	// Move what was read into the agent's configuration; the app keeps only its identity.
	a := c.a
	ac.Model, ac.Tools, ac.KnowledgeBases = a.Model, a.Agent.Tools, a.KnowledgeBases
	ac.OpeningStatement, ac.SuggestedQuestions = a.OpeningStatement, a.SuggestedQuestions
	ac.SuggestedQuestionsAfterAnswer, ac.Features, ac.UserInputForm = a.SuggestedQuestionsAfterAnswer, a.Features, a.UserInputForm
	a.Model, a.Agent, a.KnowledgeBases, a.OpeningStatement, a.SuggestedQuestions = apps.Model{}, nil, nil, "", nil
	a.SuggestedQuestionsAfterAnswer, a.Features, a.UserInputForm = false, apps.Features{}, nil
	for path, kept := range a.Extra {
		rel, ok := strings.CutPrefix(path, prefix)
		if !ok || rel != "" && rel[0] != '.' {
			continue
		}
		if ac.Extra == nil {
			ac.Extra = map[string]map[string]any{}
		}
		ac.Extra[strings.TrimPrefix(rel, ".")] = kept
		delete(a.Extra, path)
	}
	a.Bound = &apps.BoundAgent{Draft: ac}
}

// readSoulKnowledge resolves the soul's datasets, listed flat (`datasets`) or grouped in
// knowledge sets (`sets[].datasets`, with each set's query and retrieval settings), as Dify's
// versions write them. A set is kept for the export with its datasets by their Parley names.
func (c *converter) readSoulKnowledge(kn *section) {
	for i, item := range kn.list("datasets") {
		c.addDataset(newSection(c.p, index(kn.at("datasets"), i), item))
	}
	if kn.has("sets") {
		kept := []any{}
		for i, item := range kn.list("sets") {
			ss := newSection(c.p, index(kn.at("sets"), i), item)
			resolved := []any{}
			for j, d := range ss.list("datasets") {
				if name := c.addDataset(newSection(c.p, index(ss.at("datasets"), j), d)); name != "" {
					resolved = append(resolved, map[string]any{"id": name, "name": name})
				}
			}
			set := ss.rest()
			if set == nil {
				set = map[string]any{}
			}
			set["datasets"] = resolved
			kept = append(kept, set)
		}
		c.keepIn(kn.path, "sets", kept)
	}
	c.keep(kn.path, kn.rest())
}

// readSoulModel resolves the soul's model (model_provider and model) as the app's model, with
// model_settings as its completion parameters.
func (c *converter) readSoulModel(soul *section) {
	if !soul.has("model") {
		soul.raw("model")
		c.useModel(soul.at("model"), "missing: the agent has no model", "", nil)
		return
	}
	ms := soul.sub("model")
	provider, name := ms.str("model_provider"), ms.str("model")
	params := ms.mapping("model_settings")
	c.keep(ms.path, ms.rest())
	m, why := c.env.resolveModel(modelLLM, provider, name)
	c.useModel(ms.path, why, "", &m)
	c.a.Model.Parameters = params
	if c.a.Model.Parameters == nil {
		c.a.Model.Parameters = map[string]any{}
	}
}

// readSoulTools reads the soul's Dify tools, which must be available on this server as those of
// a Legacy Agent (--lenient keeps the others, missing). CLI tools run in Dify's sandbox, which
// Parley does not have: they are kept, with a note.
func (c *converter) readSoulTools(ts *section) {
	ag := &apps.Agent{Enabled: true}
	for i, item := range ts.list("dify_tools") {
		tpath := index(ts.at("dify_tools"), i)
		s := newSection(c.p, tpath, item)
		t := readTool(s, "runtime_parameters")
		if t.ProviderID == "" && s.has("provider") {
			// Some entries name the provider as `provider`; the export writes it as provider_id.
			t.ProviderID = s.str("provider")
			delete(t.Extra, "provider")
		}
		if t.Name == "" {
			c.p.add(s.at("tool_name"), "missing: Parley runs tools by name")
		} else {
			c.checkTool(tpath, &t)
		}
		ag.Tools = append(ag.Tools, t)
	}
	if cli := ts.list("cli_tools"); len(cli) > 0 {
		c.keepIn(ts.path, "cli_tools", cli)
		c.p.note(NoteNotRun, ts.at("cli_tools"), "CLI tools run in Dify's agent sandbox, which Parley does not have; they are kept but not offered")
	}
	c.keep(ts.path, ts.rest())
	c.a.Agent = ag
}

// appVariableTypes maps the types of an agent's app_variables to the input types of the form.
var appVariableTypes = map[string]string{
	"string": apps.InputText, "text": apps.InputText, apps.InputText: apps.InputText,
	apps.InputParagraph: apps.InputParagraph, "number": apps.InputNumber, "integer": apps.InputNumber,
	apps.InputSelect: apps.InputSelect, "boolean": apps.InputCheckbox, apps.InputCheckbox: apps.InputCheckbox,
}

// readAppVariables reads the agent's app_variables ({name, type, required, default}) as the
// app's input form.
func (c *converter) readAppVariables(soul *section) {
	path := soul.at("app_variables")
	seen := map[string]int{}
	for i, item := range soul.list("app_variables") {
		vs := newSection(c.p, index(path, i), item)
		typ := vs.str("type")
		f := apps.InputField{Variable: vs.str("name"), Required: vs.boolean("required"), Type: appVariableTypes[typ]}
		f.Label = f.Variable
		if _, ok := scalarText(vs.m["default"]); ok {
			f.Default = vs.str("default")
		}
		if vs.has("options") {
			f.Options = vs.strings("options")
		}
		f.Extra = vs.rest()
		if f.Type == "" {
			f.Type = typ // passed through unchecked, as the form does with Dify's other types
		}
		if f.Type != typ {
			if f.Extra == nil {
				f.Extra = map[string]any{}
			}
			f.Extra["type"] = typ // the file's spelling, written back on export
		}
		switch j, dup := seen[f.Variable]; {
		case f.Variable == "":
			c.p.add(vs.at("name"), "missing")
		case typ == "":
			c.p.add(vs.at("type"), "missing")
		case dup:
			c.p.add(vs.at("name"), "%q is also the name of app_variables[%d]", f.Variable, j)
		default:
			seen[f.Variable] = i
		}
		c.a.UserInputForm = append(c.a.UserInputForm, f)
	}
}

// exportAgent writes an Agent app and its bound agent's draft, in the shape the import reads.
func (e exporter) exportAgent() (map[string]any, error) {
	a := e.a
	if a.Bound == nil || a.Bound.Draft == nil {
		return nil, fmt.Errorf("the Agent app %q has no bound agent to export", a.Name)
	}
	ac := a.Bound.Draft
	ref, _ := a.Extra[packageRefPath]["package_ref"].(string)
	if ref == "" {
		ref = defaultPackageRef
	}
	p := "agent_packages." + ref
	// The feature writers read the features and what was kept from x's app.
	x := exporter{a: &apps.App{Features: ac.Features, Extra: map[string]map[string]any{}}, env: e.env}
	for rel, kept := range ac.Extra {
		if rel == "" {
			x.a.Extra[p] = kept
		} else {
			x.a.Extra[p+"."+rel] = kept
		}
	}
	s := p + ".soul"
	meta := map[string]any{"name": agentName(ac, a.Name), "description": ac.Description, "role": ac.Role}
	setIf(meta, "icon_type", ac.Icon.Type)
	setIf(meta, "icon", ac.Icon.Icon)
	setIf(meta, "icon_background", ac.Icon.Background)

	params := maps.Clone(ac.Model.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	model := x.with(s+".model", map[string]any{"model_provider": ac.Model.Provider, "model": ac.Model.Name, "model_settings": params})
	if _, ok := model["plugin_id"]; !ok {
		model["plugin_id"] = ac.Model.Provider
	}
	tools := make([]any, 0, len(ac.Tools))
	for _, t := range ac.Tools {
		tools = append(tools, exportTool(t, "runtime_parameters"))
	}
	datasets := make([]any, 0, len(ac.KnowledgeBases))
	for _, kb := range slices.Concat(ac.KnowledgeBases, a.UnmappedDatasets) {
		datasets = append(datasets, map[string]any{"id": kb, "name": kb})
	}
	vars := make([]any, 0, len(ac.UserInputForm))
	for _, f := range ac.UserInputForm {
		m := maps.Clone(f.Extra)
		if m == nil {
			m = map[string]any{}
		}
		if _, ok := m["type"]; !ok {
			m["type"] = f.Type
		}
		m["name"], m["required"] = f.Variable, f.Required
		if f.Default != "" {
			m["default"] = typedDefault(f)
		}
		if len(f.Options) > 0 {
			m["options"] = stringList(f.Options)
		}
		vars = append(vars, m)
	}
	fp := s + ".app_features"
	f := ac.Features
	features := x.with(fp, map[string]any{
		"opening_statement":                ac.OpeningStatement,
		"suggested_questions":              stringList(ac.SuggestedQuestions),
		"suggested_questions_after_answer": x.toggle(fp+".suggested_questions_after_answer", ac.SuggestedQuestionsAfterAnswer),
		"speech_to_text":                   x.toggle(fp+".speech_to_text", f.SpeechToText.Enabled),
		"retriever_resource":               x.toggle(fp+".retriever_resource", f.RetrieverResource.Enabled),
		"more_like_this":                   x.toggle(fp+".more_like_this", f.MoreLikeThis.Enabled),
		"text_to_speech":                   x.textToSpeech(fp),
		"sensitive_word_avoidance":         x.moderation(fp),
		"annotation_reply":                 x.annotationReply(fp),
		"file_upload":                      x.fileUpload(fp),
	})
	soul := x.with(s, map[string]any{
		"model":         model,
		"prompt":        x.with(s+".prompt", map[string]any{"system_prompt": ac.SystemPrompt}),
		"tools":         x.with(s+".tools", map[string]any{"dify_tools": tools}),
		"knowledge":     x.with(s+".knowledge", map[string]any{"datasets": datasets}),
		"app_features":  features,
		"app_variables": vars,
	})
	if _, ok := soul["schema_version"]; !ok {
		soul["schema_version"] = 1
	}
	pkg := x.with(p, map[string]any{"metadata": x.with(p+".metadata", meta), "soul": soul})
	if _, ok := pkg["schema_version"]; !ok {
		pkg["schema_version"] = 1
	}
	if _, ok := pkg["omitted_assets"]; !ok {
		pkg["omitted_assets"] = []any{}
	}
	return map[string]any{
		"agent":          e.with("agent", map[string]any{"package_ref": ref}),
		"agent_packages": map[string]any{ref: pkg},
	}, nil
}

// agentName is the agent's display name: its own, or its app's.
func agentName(c *apps.AgentConfig, app string) string {
	if c.Name != "" {
		return c.Name
	}
	return app
}
