package dsl

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/apps"
)

// Export writes an app as a DSL file. The form is canonical: keys sorted (as Dify's exports
// are), every feature written out whether on or off, knowledge bases and models by their
// Parley names, and what an import kept written back where it was found. env supplies the
// API style of a config app's model, which the config file does not state.
//
// Dependencies are written empty: they name Dify plugins, which Parley does not have.
func Export(a *apps.App, env Env) ([]byte, error) {
	if !slices.Contains(modelConfigModes, a.Mode) && a.Mode != apps.ModeAgent && !isGraphMode(a.Mode) {
		return nil, fmt.Errorf("exporting %s apps is not supported yet", a.Mode)
	}
	e := exporter{a: a, env: env}
	body := map[string]any{
		"version":      a.DSLVersion,
		"kind":         "app",
		"dependencies": []any{},
		"app":          e.app(),
	}
	if a.Mode == apps.ModeAgent {
		// An Agent app is exported with its bound agent's draft, as Dify exports it.
		ag, err := e.exportAgent()
		if err != nil {
			return nil, err
		}
		maps.Copy(body, ag)
	} else if isGraphMode(a.Mode) {
		w, err := e.exportWorkflow()
		if err != nil {
			return nil, err
		}
		body["workflow"] = w
	} else {
		body["model_config"] = e.modelConfig()
	}
	doc := e.with("", body)
	if a.DSLVersion == "" {
		doc["version"] = ExportVersion
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(quoteIndentedBlocks(doc)); err != nil {
		return nil, fmt.Errorf("export %q: %w", a.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("export %q: %w", a.Name, err)
	}
	return buf.Bytes(), nil
}

// quoteIndentedBlocks returns v with the multi-line strings whose first line starts with a
// space, a tab or a line break (code often does) set to be written double-quoted. As a block
// scalar such a string needs an indentation indicator, which the YAML encoder writes wrongly
// inside nested lists, so that the file would not read back the same. v is not changed.
func quoteIndentedBlocks(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = quoteIndentedBlocks(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = quoteIndentedBlocks(e)
		}
		return out
	case string:
		if strings.Contains(x, "\n") && strings.IndexAny(x[:1], " \t\n") == 0 {
			return doubleQuoted(x)
		}
	}
	return v
}

// doubleQuoted is a string written in double quotes.
type doubleQuoted string

func (q doubleQuoted) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(q), Style: yaml.DoubleQuotedStyle}, nil
}

type exporter struct {
	a   *apps.App
	env Env
}

// with returns what an import kept at path with the modelled keys m laid over it.
func (e exporter) with(path string, m map[string]any) map[string]any {
	out := maps.Clone(e.a.Extra[path])
	if out == nil {
		out = make(map[string]any, len(m))
	}
	maps.Copy(out, m)
	return out
}

func (e exporter) app() map[string]any {
	a := e.a
	m := map[string]any{"name": a.Name, "mode": a.Mode, "description": a.Description, "use_icon_as_answer_icon": a.Icon.UseAsAnswerIcon}
	setIf(m, "icon", a.Icon.Icon)
	setIf(m, "icon_background", a.Icon.Background)
	setIf(m, "icon_type", a.Icon.Type)
	return e.with("app", m)
}

func setIf(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func (e exporter) toggle(path string, on bool) map[string]any {
	return e.with(path, map[string]any{"enabled": on})
}

func (e exporter) modelConfig() map[string]any {
	a, f := e.a, e.a.Features
	const p = "model_config"
	mc := map[string]any{
		"model":                            e.model(),
		"prompt_type":                      a.PromptType,
		"pre_prompt":                       a.PrePrompt,
		"chat_prompt_config":               e.chatPrompt(),
		"completion_prompt_config":         e.completionPrompt(),
		"user_input_form":                  e.form(),
		"dataset_query_variable":           a.DatasetQueryVariable,
		"opening_statement":                a.OpeningStatement,
		"suggested_questions":              stringList(a.SuggestedQuestions),
		"suggested_questions_after_answer": e.toggle(p+".suggested_questions_after_answer", a.SuggestedQuestionsAfterAnswer),
		"speech_to_text":                   e.toggle(p+".speech_to_text", f.SpeechToText.Enabled),
		"retriever_resource":               e.toggle(p+".retriever_resource", f.RetrieverResource.Enabled),
		"more_like_this":                   e.toggle(p+".more_like_this", f.MoreLikeThis.Enabled),
		"text_to_speech":                   e.textToSpeech(p),
		"sensitive_word_avoidance":         e.moderation(p),
		"annotation_reply":                 e.annotationReply(p),
		"file_upload":                      e.fileUpload(p),
		"dataset_configs":                  e.datasets(),
	}
	if a.PromptType == "" {
		mc["prompt_type"] = apps.PromptSimple
	}
	if a.Agent != nil {
		mc["agent_mode"] = e.agent()
	}
	out := e.with(p, mc)
	if _, ok := out["agent_mode"]; !ok {
		out["agent_mode"] = map[string]any{"enabled": false, "tools": []any{}}
	}
	return out
}

func (e exporter) model() map[string]any {
	m := e.a.Model
	mode := m.Mode
	if mode == "" {
		mode = e.env.modelMode(m.Provider, m.Name)
	}
	params := maps.Clone(m.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	return e.with("model_config.model", map[string]any{"provider": m.Provider, "name": m.Name, "mode": mode, "completion_params": params})
}

func (e exporter) chatPrompt() map[string]any {
	m := map[string]any{}
	if len(e.a.ChatPrompt) > 0 {
		msgs := make([]any, 0, len(e.a.ChatPrompt))
		for _, pm := range e.a.ChatPrompt {
			msg := maps.Clone(pm.Extra)
			if msg == nil {
				msg = map[string]any{}
			}
			msg["role"], msg["text"] = pm.Role, pm.Text
			msgs = append(msgs, msg)
		}
		m["prompt"] = msgs
	}
	return e.with("model_config.chat_prompt_config", m)
}

func (e exporter) completionPrompt() map[string]any {
	m := map[string]any{}
	if cp := e.a.CompletionPrompt; cp != nil {
		m["prompt"] = e.with("model_config.completion_prompt_config.prompt", map[string]any{"text": cp.Text})
		m["conversation_histories_role"] = e.with("model_config.completion_prompt_config.conversation_histories_role",
			map[string]any{"user_prefix": cp.UserPrefix, "assistant_prefix": cp.AssistantPrefix})
	}
	return e.with("model_config.completion_prompt_config", m)
}

func (e exporter) form() []any {
	out := make([]any, 0, len(e.a.UserInputForm))
	for _, f := range e.a.UserInputForm {
		body := maps.Clone(f.Extra)
		if body == nil {
			body = map[string]any{}
		}
		body["variable"], body["label"], body["required"] = f.Variable, f.Label, f.Required
		if f.Default != "" {
			body["default"] = typedDefault(f)
		}
		if f.MaxLength > 0 {
			body["max_length"] = f.MaxLength
		}
		if len(f.Options) > 0 || f.Type == apps.InputSelect {
			body["options"] = stringList(f.Options)
		}
		out = append(out, map[string]any{f.Type: body})
	}
	return out
}

// typedDefault writes a default as the input's type has it: numbers as numbers, checkboxes as
// booleans.
func typedDefault(f apps.InputField) any {
	switch f.Type {
	case apps.InputNumber:
		if n, err := strconv.Atoi(f.Default); err == nil {
			return n
		}
		if x, err := strconv.ParseFloat(f.Default, 64); err == nil {
			return x
		}
	case apps.InputCheckbox:
		if b, err := strconv.ParseBool(f.Default); err == nil {
			return b
		}
	}
	return f.Default
}

func stringList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (e exporter) textToSpeech(p string) map[string]any {
	t := e.a.Features.TextToSpeech
	m := map[string]any{"enabled": t.Enabled, "voice": t.Voice, "language": t.Language}
	setIf(m, "autoPlay", t.AutoPlay)
	return e.with(p+".text_to_speech", m)
}

func (e exporter) moderation(p string) map[string]any {
	s := e.a.Features.SensitiveWordAvoidance
	m := map[string]any{"enabled": s.Enabled, "type": s.Type}
	if s.Config != nil {
		m["config"] = s.Config
	}
	return e.with(p+".sensitive_word_avoidance", m)
}

func (e exporter) annotationReply(p string) map[string]any {
	ar := e.a.Features.AnnotationReply
	m := map[string]any{"enabled": ar.Enabled}
	if ar.ScoreThreshold != nil {
		m["score_threshold"] = *ar.ScoreThreshold
	}
	if em := ar.EmbeddingModel; em != nil {
		m["embedding_model"] = e.with(p+".annotation_reply.embedding_model",
			map[string]any{"embedding_provider_name": em.Provider, "embedding_model_name": em.Name})
	}
	return e.with(p+".annotation_reply", m)
}

func (e exporter) fileUpload(p string) map[string]any {
	fu := e.a.Features.FileUpload
	img := map[string]any{"enabled": fu.Image.Enabled}
	setIf(img, "detail", fu.Image.Detail)
	if fu.Image.NumberLimits > 0 {
		img["number_limits"] = fu.Image.NumberLimits
	}
	if len(fu.Image.TransferMethods) > 0 {
		img["transfer_methods"] = stringList(fu.Image.TransferMethods)
	}
	m := map[string]any{"enabled": fu.Enabled, "image": e.with(p+".file_upload.image", img)}
	for key, list := range map[string][]string{"allowed_file_types": fu.AllowedFileTypes,
		"allowed_file_extensions": fu.AllowedFileExtensions, "allowed_file_upload_methods": fu.AllowedUploadMethods} {
		if len(list) > 0 {
			m[key] = stringList(list)
		}
	}
	if fu.NumberLimits > 0 {
		m["number_limits"] = fu.NumberLimits
	}
	return e.with(p+".file_upload", m)
}

func (e exporter) datasets() map[string]any {
	r := e.a.Retrieval
	entries := make([]any, 0, len(e.a.KnowledgeBases))
	for _, kb := range slices.Concat(e.a.KnowledgeBases, e.a.UnmappedDatasets) {
		entries = append(entries, map[string]any{"dataset": map[string]any{"enabled": true, "id": kb}})
	}
	mode := r.Mode
	if mode == "" {
		mode = "multiple"
	}
	m := map[string]any{
		"retrieval_model":         mode,
		"datasets":                e.with("model_config.dataset_configs.datasets", map[string]any{"datasets": entries}),
		"score_threshold_enabled": r.ScoreThresholdEnabled,
		"reranking_enable":        r.RerankingEnabled,
	}
	if r.TopK > 0 {
		m["top_k"] = r.TopK
	}
	if r.ScoreThreshold != nil {
		m["score_threshold"] = *r.ScoreThreshold
	}
	setIf(m, "reranking_mode", r.RerankingMode)
	if rm := r.RerankingModel; rm != nil {
		m["reranking_model"] = e.with("model_config.dataset_configs.reranking_model",
			map[string]any{"reranking_provider_name": rm.Provider, "reranking_model_name": rm.Name})
	}
	return e.with("model_config.dataset_configs", m)
}

// exportTool writes one tool entry of an agent, its parameter values under params (the reverse
// of readTool).
func exportTool(t apps.Tool, params string) map[string]any {
	m := maps.Clone(t.Extra)
	if m == nil {
		m = map[string]any{}
	}
	values := maps.Clone(t.Parameters)
	if values == nil {
		values = map[string]any{}
	}
	maps.Copy(m, map[string]any{"provider_type": t.ProviderType, "provider_id": t.ProviderID, "tool_name": t.Name,
		params: values, "enabled": t.Enabled})
	setIf(m, "provider_name", t.ProviderName)
	setIf(m, "tool_label", t.Label)
	return m
}

func (e exporter) agent() map[string]any {
	ag := e.a.Agent
	tools := make([]any, 0, len(ag.Tools))
	for _, t := range ag.Tools {
		tools = append(tools, exportTool(t, "tool_parameters"))
	}
	m := maps.Clone(ag.Extra)
	if m == nil {
		m = map[string]any{}
	}
	m["enabled"], m["tools"] = ag.Enabled, tools
	setIf(m, "strategy", ag.Strategy)
	if ag.MaxIteration > 0 {
		m["max_iteration"] = ag.MaxIteration
	}
	if ag.Prompt != nil {
		m["prompt"] = ag.Prompt
	}
	return m
}
