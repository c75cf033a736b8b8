package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/moderation"
)

// Options change how a file is imported.
type Options struct {
	// Name replaces the file's app.name.
	Name string
	// ModelFallback ("PROVIDER:MODEL", a configured llm) replaces every llm reference that does
	// not resolve; each replacement is reported as a note.
	ModelFallback string
	// Lenient imports tools the server does not have, each reported as a note; calling one
	// fails at run time. Dify imports such a file and reports the plugins it lacks, so the CLI
	// sets it unless --strict.
	Lenient bool
	// Datasets maps dataset references of the file (Dify dataset ids) to Parley knowledge
	// bases (names or ids).
	Datasets map[string]string
	// Modes are the app modes accepted; nil means [ImportModes].
	Modes []string
	// NodeTypes reports whether the server runs a workflow node type; a Chatflow whose graph has
	// others is refused, each such node named. Nil runs none.
	NodeTypes func(nodeType string) bool
}

// ImportModes are the modes Parley imports and runs.
func ImportModes() []string {
	return []string{apps.ModeChat, apps.ModeCompletion, apps.ModeAgentChat, apps.ModeAgent, apps.ModeAdvancedChat, apps.ModeWorkflow}
}

// notYet says why a mode Parley knows is not imported yet.
var notYet = map[string]string{}

// modelConfigModes are the modes defined by a model_config section; the others are defined by
// a workflow graph (advanced-chat, workflow) or an agent package (agent).
var modelConfigModes = []string{apps.ModeChat, apps.ModeCompletion, apps.ModeAgentChat}

// isGraphMode reports whether apps of mode are defined by a workflow graph (Chatflow and
// Workflow apps).
func isGraphMode(mode string) bool { return mode == apps.ModeAdvancedChat || mode == apps.ModeWorkflow }

// Result is an imported app and what the import did that the user should know.
type Result struct {
	// App is ready to be stored; it has no id yet.
	App   *apps.App
	Notes []Note
}

// Import reads a DSL file and resolves it against env. It fails with an *Error listing every
// problem, or returns the app whole.
func Import(data []byte, env Env, opts Options) (*Result, error) {
	p := &problems{}
	if len(data) > MaxSize {
		p.add("", "the file is %d bytes; DSL files are limited to %d MB", len(data), MaxSize>>20)
		return nil, p.err()
	}
	root, ok := parseDocument(data, p)
	if !ok {
		return nil, p.err()
	}
	ver := DefaultVersion
	if v := lookupKey(root, "version"); v != nil {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			p.add("version", "must be a string such as '0.6.0', found %s (line %d); quote it", nodeKind(v), v.Line)
			return nil, p.err()
		}
		ver = v.Value
		if err := checkVersion(ver); err != nil {
			p.add("version", "%v", err)
			return nil, p.err()
		}
	}
	t := &tree{p: p}
	top := newSection(p, "", t.value(root, ""))
	if len(p.list) > 0 {
		return nil, p.err()
	}
	top.raw("version")
	// Dependencies name the Dify plugins the app needs; Parley resolves models against its
	// own providers instead, so they are not kept.
	top.raw("dependencies")
	switch kind := top.str("kind"); kind {
	case "", "app":
	case "rag_pipeline":
		p.add("kind", "this is a knowledge pipeline, not an app export")
		return nil, p.err()
	default:
		p.note(NoteChanged, "kind", "%q read as app, as Dify does", kind)
	}
	if !top.has("app") {
		p.add("app", "missing: the file has no app section, so it is not an app export")
		return nil, p.err()
	}
	appSec := top.sub("app")
	mode := appSec.str("mode")
	modes := opts.Modes
	if modes == nil {
		modes = ImportModes()
	}
	switch {
	case len(p.list) > 0:
		return nil, p.err()
	case mode == "":
		p.add("app.mode", "missing: the file does not say what kind of app it is")
	case !slices.Contains(apps.Modes(), mode):
		p.add("app.mode", "unknown app mode %q", mode)
	case !slices.Contains(modes, mode) || !slices.Contains(modelConfigModes, mode) && mode != apps.ModeAgent && !isGraphMode(mode):
		if why, ok := notYet[mode]; ok {
			p.add("app.mode", "%s", why)
		} else {
			p.add("app.mode", "%s apps cannot be imported", mode)
		}
	}
	if len(p.list) > 0 {
		return nil, p.err()
	}

	c := &converter{p: p, env: env, opts: opts, a: &apps.App{
		Source: apps.SourceImport, Mode: mode, Enabled: true, DSLVersion: ver,
	}}
	if opts.ModelFallback != "" {
		fb, err := env.parseFallback(opts.ModelFallback)
		if err != nil {
			p.add("--model-fallback", "%v", err)
		} else {
			c.fallback = &fb
		}
	}
	c.readApp(appSec)
	if mode == apps.ModeAgent {
		c.readAgentApp(top)
	} else if isGraphMode(mode) {
		c.readWorkflow(top)
	} else if !top.has("model_config") {
		p.add("model_config", "missing: a %s app is defined by its model_config section", mode)
	} else {
		c.readModelConfig(top.sub("model_config"))
	}
	c.keep("", top.rest())
	c.checkDatasetMapping()
	if err := p.err(); err != nil {
		return nil, err
	}
	return &Result{App: c.a, Notes: p.notes}, nil
}

// parseDocument reads exactly one YAML document whose top is a mapping.
func parseDocument(data []byte, p *problems) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add("", "the file is empty")
		} else {
			p.add("", "not a YAML document: %v", err)
		}
		return nil, false
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		p.add("", "the file holds more than one YAML document")
		return nil, false
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		p.add("", "expected a mapping at the top of the file")
		return nil, false
	}
	return doc.Content[0], true
}

func lookupKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!float", "!!int":
			return "the number " + n.Value
		case "!!null":
			return "nothing"
		case "!!bool":
			return n.Value
		}
		return n.ShortTag() + " " + n.Value
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "something else"
}

// converter builds an app from the sections of a file.
type converter struct {
	p        *problems
	env      Env
	opts     Options
	a        *apps.App
	fallback *resolvedModel
	// mapped are the --dataset references the file used.
	mapped map[string]bool
}

// keep records what a section held that the model does not.
func (c *converter) keep(path string, rest map[string]any) {
	if len(rest) == 0 {
		return
	}
	for k, v := range rest {
		c.keepIn(path, k, v)
	}
}

func (c *converter) readApp(s *section) {
	name := s.str("name")
	if c.opts.Name != "" {
		name = c.opts.Name
	} else if t := strings.TrimSpace(name); t != name && t != "" {
		c.p.note(NoteChanged, s.at("name"), "%q read as %q", name, t)
		name = t
	}
	if strings.TrimSpace(name) == "" {
		c.p.add(s.at("name"), "missing: give the app a name with --name")
	}
	c.a.Name = name
	c.a.Description = s.str("description")
	c.a.Icon = apps.Icon{Type: s.str("icon_type"), Icon: s.str("icon"), Background: s.str("icon_background"),
		UseAsAnswerIcon: s.boolean("use_icon_as_answer_icon")}
	c.keep("app", s.rest())
}

// toggle reads a {enabled: …} feature, keeping its other keys.
func (c *converter) toggle(parent *section, key string) apps.Toggle {
	s := parent.sub(key)
	t := apps.Toggle{Enabled: s.boolean("enabled")}
	c.keep(s.path, s.rest())
	return t
}

func (c *converter) readModelConfig(mc *section) {
	a := c.a
	c.readModel(mc)
	switch a.PromptType = mc.str("prompt_type"); a.PromptType {
	case "":
		a.PromptType = apps.PromptSimple
	case apps.PromptSimple, apps.PromptAdvanced:
	default:
		c.p.add(mc.at("prompt_type"), "unknown prompt type %q (simple or advanced)", a.PromptType)
	}
	a.PrePrompt = mc.str("pre_prompt")
	c.readAdvancedPrompts(mc)
	c.readForm(mc)
	a.DatasetQueryVariable = mc.str("dataset_query_variable")
	c.readFeatures(mc)
	c.readDatasets(mc)
	if a.Mode == apps.ModeAgentChat {
		c.readAgent(mc)
	} else {
		c.readOldDatasets(mc)
	}
	c.checkDatasetQuery(mc)
	c.noteFeaturesNotRun(mc)
	c.keep(mc.path, mc.rest())
}

// readFeatures reads the app features of a model_config section, or of an agent's
// app_features, which have the same shape.
func (c *converter) readFeatures(mc *section) {
	a := c.a
	a.OpeningStatement = mc.str("opening_statement")
	a.SuggestedQuestions = mc.strings("suggested_questions")
	a.SuggestedQuestionsAfterAnswer = c.toggle(mc, "suggested_questions_after_answer").Enabled
	f := &a.Features
	f.SpeechToText = c.toggle(mc, "speech_to_text")
	f.RetrieverResource = c.toggle(mc, "retriever_resource")
	f.MoreLikeThis = c.toggle(mc, "more_like_this")
	tts := mc.sub("text_to_speech")
	f.TextToSpeech = apps.TextToSpeech{Enabled: tts.boolean("enabled"), Voice: tts.str("voice"), Language: tts.str("language"), AutoPlay: tts.str("autoPlay")}
	c.keep(tts.path, tts.rest())
	swa := mc.sub("sensitive_word_avoidance")
	f.SensitiveWordAvoidance = apps.SensitiveWordAvoidance{Enabled: swa.boolean("enabled"), Type: swa.str("type"), Config: swa.mapping("config")}
	if _, err := moderation.Parse(f.SensitiveWordAvoidance); err != nil {
		c.p.add(swa.path, "%v", err)
	}
	c.keep(swa.path, swa.rest())
	c.readAnnotationReply(mc)
	c.readFileUpload(mc)
}

func (c *converter) readModel(mc *section) {
	if !mc.has("model") {
		mc.raw("model")
		c.useModel(mc.at("model"), "missing", "", nil)
		return
	}
	ms := mc.sub("model")
	provider, name, mode := ms.str("provider"), ms.str("name"), ms.str("mode")
	params := ms.mapping("completion_params")
	c.keep(ms.path, ms.rest())
	m, why := c.env.resolveModel(modelLLM, provider, name)
	c.useModel(ms.path, why, mode, &m)
	c.a.Model.Parameters = params
	if c.a.Model.Parameters == nil {
		c.a.Model.Parameters = map[string]any{}
	}
}

// useModel sets the app's model to m, or to the fallback when why says m did not resolve.
func (c *converter) useModel(path, why, fileMode string, m *resolvedModel) {
	if why != "" {
		if c.fallback == nil {
			c.p.addUnresolvedModel(path, why)
			return
		}
		c.p.note(NoteSubstituted, path, "%s; using %s:%s (--model-fallback)", why, c.fallback.provider.Name, c.fallback.model.Name)
		m = c.fallback
	}
	mode := m.model.Mode
	if mode == "" {
		mode = config.ModelModeChat
	}
	c.a.Model = apps.Model{Provider: m.provider.Name, Name: m.model.Name, Mode: mode}
	if fileMode != "" && fileMode != mode {
		c.p.note(NoteChanged, join(path, "mode"), "the file says %s, but %s:%s is a %s model; it is called as one", fileMode, m.provider.Name, m.model.Name, mode)
	}
}

func (c *converter) readAdvancedPrompts(mc *section) {
	cp := mc.sub("chat_prompt_config")
	for i, item := range cp.list("prompt") {
		ps := newSection(c.p, index(cp.at("prompt"), i), item)
		m := apps.PromptMessage{Role: ps.str("role"), Text: ps.str("text"), Extra: ps.rest()}
		// Dify's roles; it skips tool messages when it builds the prompt.
		if !slices.Contains([]string{"system", "user", "assistant", "tool"}, m.Role) {
			c.p.add(ps.at("role"), "unknown role %q (system, user or assistant)", m.Role)
		}
		c.a.ChatPrompt = append(c.a.ChatPrompt, m)
	}
	c.keep(cp.path, cp.rest())

	co := mc.sub("completion_prompt_config")
	if co.has("prompt") || co.has("conversation_histories_role") {
		prompt := co.sub("prompt")
		roles := co.sub("conversation_histories_role")
		c.a.CompletionPrompt = &apps.CompletionPrompt{Text: prompt.str("text"),
			UserPrefix: roles.str("user_prefix"), AssistantPrefix: roles.str("assistant_prefix")}
		c.keep(prompt.path, prompt.rest())
		c.keep(roles.path, roles.rest())
	}
	c.keep(co.path, co.rest())
	if c.a.PromptType != apps.PromptAdvanced {
		return
	}
	// The model's mode (the configured model's, once resolved) picks the template the app runs
	// with, as in Dify: chat models the messages, completion models the text.
	m := c.a.Model
	switch {
	case len(c.a.ChatPrompt) == 0 && c.a.CompletionPrompt == nil:
		c.p.add(mc.at("prompt_type"), "advanced, but neither chat_prompt_config nor completion_prompt_config holds a prompt")
	case m.Mode == config.ModelModeChat && len(c.a.ChatPrompt) == 0:
		c.p.add(cp.at("prompt"), "missing: the prompt is advanced and %s:%s is a chat model, which needs prompt messages", m.Provider, m.Name)
	case m.Mode == config.ModelModeCompletion && (c.a.CompletionPrompt == nil || c.a.CompletionPrompt.Text == ""):
		c.p.add(join(co.at("prompt"), "text"), "missing: the prompt is advanced and %s:%s is a completion model, which needs a prompt text", m.Provider, m.Name)
	}
}

func (c *converter) readForm(mc *section) {
	path := mc.at("user_input_form")
	vars := map[string]int{}
	for i, item := range mc.list("user_input_form") {
		ipath := index(path, i)
		m, ok := item.(map[string]any)
		if !ok || len(m) != 1 {
			c.p.add(ipath, "expected a mapping with one key, the input's type (text-input, paragraph, select, number, …)")
			continue
		}
		for typ, body := range m {
			fs := newSection(c.p, join(ipath, typ), body)
			f := apps.InputField{Type: typ, Variable: fs.str("variable"), Label: fs.str("label"),
				Required: fs.boolean("required"), MaxLength: fs.integer("max_length")}
			// A default that is not one value (file lists) is kept as it is.
			if _, ok := scalarText(fs.m["default"]); ok {
				f.Default = fs.str("default")
			}
			if fs.has("options") {
				f.Options = fs.strings("options")
			} else {
				fs.raw("options")
			}
			f.Extra = fs.rest()
			switch j, dup := vars[f.Variable]; {
			case f.Variable == "":
				c.p.add(fs.at("variable"), "missing")
			case dup:
				c.p.add(fs.at("variable"), "%q is also the variable of user_input_form[%d]", f.Variable, j)
			default:
				vars[f.Variable] = i
			}
			c.a.UserInputForm = append(c.a.UserInputForm, f)
		}
	}
}

func (c *converter) readAnnotationReply(mc *section) {
	s := mc.sub("annotation_reply")
	ar := apps.AnnotationReply{Enabled: s.boolean("enabled"), ScoreThreshold: s.number("score_threshold")}
	if s.has("embedding_model") {
		em := s.sub("embedding_model")
		ar.EmbeddingModel = &apps.ModelRef{Provider: em.str("embedding_provider_name"), Name: em.str("embedding_model_name")}
		c.keep(em.path, em.rest())
	} else {
		s.raw("embedding_model")
	}
	c.a.Features.AnnotationReply = ar
	c.keep(s.path, s.rest())
}

func (c *converter) readFileUpload(mc *section) {
	s := mc.sub("file_upload")
	img := s.sub("image")
	c.a.Features.FileUpload = apps.FileUpload{
		Enabled:               s.boolean("enabled"),
		AllowedFileTypes:      s.strings("allowed_file_types"),
		AllowedFileExtensions: s.strings("allowed_file_extensions"),
		AllowedUploadMethods:  s.strings("allowed_file_upload_methods"),
		NumberLimits:          s.integer("number_limits"),
		Image: apps.ImageUpload{Enabled: img.boolean("enabled"), Detail: img.str("detail"),
			NumberLimits: img.integer("number_limits"), TransferMethods: img.strings("transfer_methods")},
	}
	c.keep(img.path, img.rest())
	c.keep(s.path, s.rest())
}

func (c *converter) readDatasets(mc *section) {
	dc := mc.sub("dataset_configs")
	r := &c.a.Retrieval
	switch r.Mode = dc.str("retrieval_model"); r.Mode {
	case "":
		r.Mode = "multiple"
	case "single", "multiple":
	default:
		c.p.add(dc.at("retrieval_model"), "unknown retrieval model %q (single or multiple)", r.Mode)
	}
	ds := dc.sub("datasets")
	for i, item := range ds.list("datasets") {
		it := newSection(c.p, index(ds.at("datasets"), i), item)
		c.addDataset(it.sub("dataset"))
	}
	c.keep(ds.path, ds.rest())
	r.TopK = dc.integer("top_k")
	r.ScoreThreshold = dc.number("score_threshold")
	r.ScoreThresholdEnabled = dc.boolean("score_threshold_enabled")
	r.RerankingEnabled = dc.boolean("reranking_enable")
	r.RerankingMode = dc.str("reranking_mode")
	if dc.has("reranking_model") {
		rm := dc.sub("reranking_model")
		ref := apps.ModelRef{Provider: rm.str("reranking_provider_name"), Name: rm.str("reranking_model_name")}
		c.keep(rm.path, rm.rest())
		// The rerank model is only called when reranking is on and not by weights; otherwise
		// it is kept as written.
		if r.RerankingEnabled && r.RerankingMode != "weighted_score" && len(c.a.KnowledgeBases) > 0 {
			m, why := c.env.resolveModel(modelRerank, ref.Provider, ref.Name)
			if why != "" {
				// Dify imports it and reports the missing plugin. Parley's chat retrieval
				// follows each knowledge base's own retrieval settings, so the app's rerank
				// model is kept as written and changes nothing.
				c.p.note(NoteNotRun, rm.path, "%s; kept as written: retrieval follows each knowledge base's own settings, reranking included", why)
			} else {
				ref = apps.ModelRef{Provider: m.provider.Name, Name: m.model.Name}
			}
		}
		if ref.Provider != "" || ref.Name != "" {
			r.RerankingModel = &ref
		}
	} else {
		dc.raw("reranking_model")
	}
	c.keep(dc.path, dc.rest())
}

// addDataset resolves one {enabled, id} dataset entry into a knowledge base of the app, and
// returns its name ("" when it is disabled or does not resolve).
func (c *converter) addDataset(d *section) string {
	enabled := true
	if d.has("enabled") {
		enabled = d.boolean("enabled")
	}
	id := d.str("id")
	d.rest() // an entry holds nothing else worth keeping: it is rewritten on export
	if !enabled {
		c.p.note(NoteChanged, d.path, "dataset %q is disabled and was left out", id)
		return ""
	}
	if id == "" {
		c.p.add(d.at("id"), "missing")
		return ""
	}
	name, ok := c.resolveDataset(d.at("id"), id)
	if !ok {
		return ""
	}
	if !slices.Contains(c.a.KnowledgeBases, name) {
		c.a.KnowledgeBases = append(c.a.KnowledgeBases, name)
	}
	return name
}

// resolveDataset resolves a dataset reference of the file found at path to the name of a
// knowledge base of this server. A reference the --dataset flags map must resolve: naming a
// knowledge base that does not exist is a problem. One nothing maps and no knowledge base
// matches is imported unmapped, as Dify imports an app whose datasets are not in the
// workspace: it is noted, kept in the app's UnmappedDatasets (so that `apps list` and
// `apps export` show it, and an import of the export can map it), and retrieval leaves it out.
func (c *converter) resolveDataset(path, ref string) (string, bool) {
	if _, ok := c.opts.Datasets[ref]; ok {
		if c.mapped == nil {
			c.mapped = map[string]bool{}
		}
		c.mapped[ref] = true
	}
	name, why := c.env.resolveDataset(ref, c.opts.Datasets)
	switch {
	case why == "":
		return name, true
	case c.opts.Datasets[ref] != "":
		c.p.add(path, "%s", why)
	default:
		c.p.note(NoteUnmappedDataset, path, "%s: retrieval leaves it out until it is mapped (import again with --dataset %s=KNOWLEDGE_BASE)", why, ref)
		if !slices.Contains(c.a.UnmappedDatasets, ref) {
			c.a.UnmappedDatasets = append(c.a.UnmappedDatasets, ref)
		}
	}
	return "", false
}

// readOldDatasets moves datasets that very old exports list among agent_mode's tools
// ({dataset: {enabled, id}}) to the app's knowledge bases, and keeps the rest of agent_mode as
// it is: chat and completion apps do not use it.
func (c *converter) readOldDatasets(mc *section) {
	v, _ := mc.raw("agent_mode")
	if v == nil {
		return
	}
	am := newSection(c.p, mc.at("agent_mode"), v)
	tools := am.list("tools")
	kept := []any{}
	for i, t := range tools {
		if m, ok := t.(map[string]any); ok && len(m) == 1 && m["dataset"] != nil {
			c.addDataset(newSection(c.p, join(index(am.at("tools"), i), "dataset"), m["dataset"]))
			c.p.note(NoteChanged, index(am.at("tools"), i), "an old-style dataset entry; it is a knowledge base of the app now")
			continue
		}
		kept = append(kept, t)
	}
	rest := am.rest()
	if rest == nil {
		rest = map[string]any{}
	}
	if tools != nil || am.has("tools") {
		rest["tools"] = kept
	}
	c.keepIn(mc.path, "agent_mode", rest)
}

// keepIn records one key of a section as kept.
func (c *converter) keepIn(path, key string, v any) {
	if c.a.Extra == nil {
		c.a.Extra = map[string]map[string]any{}
	}
	if c.a.Extra[path] == nil {
		c.a.Extra[path] = map[string]any{}
	}
	c.a.Extra[path][key] = v
}

// readTool reads one tool entry of an agent; params names the member holding the values the
// app set (tool_parameters for a Legacy Agent, runtime_parameters in an agent's soul). An entry
// without `enabled` is enabled.
func readTool(s *section, params string) apps.Tool {
	enabled := true
	if s.has("enabled") {
		enabled = s.boolean("enabled")
	}
	t := apps.Tool{ProviderType: s.str("provider_type"), ProviderID: s.str("provider_id"), ProviderName: s.str("provider_name"),
		Name: s.str("tool_name"), Label: s.str("tool_label"), Parameters: s.mapping(params), Enabled: enabled}
	t.Extra = s.rest()
	return t
}

// checkTool reports an enabled tool this server does not have: a problem, or with --lenient a
// note, the tool kept and marked missing.
func (c *converter) checkTool(path string, t *apps.Tool) {
	if !t.Enabled || c.env.hasTool(*t) {
		return
	}
	provider := t.ProviderID
	if t.ProviderType == "api" && t.ProviderName != "" {
		// An API provider's id is its workspace's; its name is what to register here.
		provider = t.ProviderName
	}
	what := fmt.Sprintf("tool %q of provider %q (%s) is not available on this server", t.Name, provider, t.ProviderType)
	if !c.opts.Lenient {
		c.p.add(path, "%s; import without --strict to keep it anyway", what)
		return
	}
	t.Missing = true
	c.p.note(NoteMissingTool, path, "%s; kept, and calling it fails at run time", what)
}

// readAgent reads the agent settings of agent-chat apps and resolves their tools.
func (c *converter) readAgent(mc *section) {
	am := mc.sub("agent_mode")
	ag := &apps.Agent{Enabled: am.boolean("enabled"), Strategy: am.str("strategy"), MaxIteration: am.integer("max_iteration"),
		Prompt: am.mapping("prompt")}
	for i, item := range am.list("tools") {
		tpath := index(am.at("tools"), i)
		if m, ok := item.(map[string]any); ok && len(m) == 1 && m["dataset"] != nil {
			c.addDataset(newSection(c.p, join(tpath, "dataset"), m["dataset"]))
			continue
		}
		t := readTool(newSection(c.p, tpath, item), "tool_parameters")
		if t.ProviderType == "dataset" {
			c.addDataset(newSection(c.p, tpath, map[string]any{"enabled": t.Enabled, "id": t.ProviderID}))
			continue
		}
		c.checkTool(tpath, &t)
		ag.Tools = append(ag.Tools, t)
	}
	ag.Extra = am.rest()
	c.a.Agent = ag
}

// checkDatasetQuery: a completion app retrieves with the value of one of its inputs.
func (c *converter) checkDatasetQuery(mc *section) {
	v := c.a.DatasetQueryVariable
	switch {
	case v != "" && !slices.ContainsFunc(c.a.UserInputForm, func(f apps.InputField) bool { return f.Variable == v }):
		c.p.add(mc.at("dataset_query_variable"), "%q is not a variable of user_input_form", v)
	case v == "" && c.a.Mode == apps.ModeCompletion && len(c.a.KnowledgeBases) > 0:
		c.p.add(mc.at("dataset_query_variable"), "missing: a completion app with knowledge bases needs the input that holds the query")
	}
}

// notRun lists the features Parley does not run yet, with the key that enables them. An app
// that enables one still imports; the setting is kept for the day it runs.
var notRun = map[string]string{
	"speech_to_text":   "speech to text",
	"text_to_speech":   "text to speech",
	"more_like_this":   "more like this",
	"annotation_reply": "annotation replies",
}

func (c *converter) noteFeaturesNotRun(mc *section) {
	f := c.a.Features
	on := map[string]bool{
		"speech_to_text": f.SpeechToText.Enabled, "text_to_speech": f.TextToSpeech.Enabled, "more_like_this": f.MoreLikeThis.Enabled,
		"annotation_reply": f.AnnotationReply.Enabled,
	}
	for _, key := range slices.Sorted(maps.Keys(notRun)) {
		if on[key] {
			c.p.note(NoteNotRun, mc.at(key), "%s is enabled, but Parley does not offer it yet; the setting is kept", notRun[key])
		}
	}
	tools, _ := mc.m["external_data_tools"].([]any)
	for i, t := range tools {
		if m, ok := t.(map[string]any); ok && m["enabled"] == true {
			c.p.note(NoteNotRun, index(mc.at("external_data_tools"), i), "external data tools are not called by Parley; the setting is kept")
		}
	}
}

// checkDatasetMapping notes --dataset mappings the file never used.
func (c *converter) checkDatasetMapping() {
	for _, ref := range slices.Sorted(maps.Keys(c.opts.Datasets)) {
		if !c.mapped[ref] {
			c.p.note(NoteChanged, "--dataset", "the file does not use dataset %q", ref)
		}
	}
}
