package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/template/jinja"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// llmNode calls a chat model with the node's prompt and streams its text to the answers that show
// it. The prompt is built as Dify's LLM node builds it for chat models: the template's
// messages with their {{#node.var#}} references and {{#context#}} filled in, then, when the
// node has memory, the conversation's earlier exchanges (the last window.size when the window
// is enabled) and the query (memory.query_prompt_template, by default the user's message). A
// completion-style template (one text) is sent as one user message, with the memory written as
// "Human: …" / "Assistant: …" lines where it says {{#histories#}}.
type llmNode struct {
	d        Deps
	provider string
	name     string
	params   map[string]any
	messages []promptMessage
	// completion is a completion-style template: one text, where {{#histories#}} stands for
	// the memory written as text.
	completion bool
	jinjaVars  []output
	context    []string
	memory     *memory
	// separated takes <think> blocks out of the text (reasoning_format separated).
	separated bool
	// structured asks for a JSON object matching schema (structured_output_enabled), output as
	// structured_output.
	structured bool
	schema     map[string]any
	// vision sends the images of the files at visionFiles to a vision model (vision.enabled),
	// with visionDetail (high by default).
	vision       bool
	visionFiles  []string
	visionDetail string
}

type promptMessage struct {
	role, text string
	// jinja marks a message in jinja2 edition: text is a Jinja2 template over the node's
	// jinja2 variables.
	jinja bool
}

type memory struct {
	window int // 0: no window
	query  string
	// user and assistant label the turns of a history written as text (completion prompts).
	user, assistant string
}

// llmErrorType is error_type of a failed model call, as Dify names it.
const llmErrorType = "LLMNodeError"

func (d Deps) newLLM(n *workflow.Node) (workflow.NodeRunner, error) {
	m := mapping(n.Data["model"])
	l := &llmNode{d: d, provider: str(m["provider"]), name: str(m["name"]), params: mapping(m["completion_params"])}
	if l.provider == "" || l.name == "" {
		return nil, configError("the node names no model")
	}
	switch pt := n.Data["prompt_template"].(type) {
	case []any:
		for _, it := range pt {
			pm := mapping(it)
			msg := promptMessage{role: str(pm["role"]), text: str(pm["text"])}
			if str(pm["edition_type"]) == "jinja2" {
				msg.text, msg.jinja = str(pm["jinja2_text"]), true
			}
			if msg.role == "" {
				msg.role = providers.RoleUser
			}
			l.messages = append(l.messages, msg)
		}
	case map[string]any:
		l.completion = true
		msg := promptMessage{role: providers.RoleUser, text: str(pt["text"])}
		if str(pt["edition_type"]) == "jinja2" {
			msg.text, msg.jinja = str(pt["jinja2_text"]), true
		}
		l.messages = append(l.messages, msg)
	}
	l.jinjaVars = variables(mapping(n.Data["prompt_config"])["jinja2_variables"])
	for _, m := range l.messages {
		if m.jinja {
			if err := jinja.Check(m.text); err != nil {
				return nil, configError("prompt_template: %v", err)
			}
		}
	}
	if c := mapping(n.Data["context"]); c != nil {
		if on, _ := c["enabled"].(bool); on {
			l.context = workflow.Selector(c["variable_selector"])
		}
	}
	if mem := mapping(n.Data["memory"]); mem != nil {
		l.memory = &memory{query: str(mem["query_prompt_template"]), user: "Human", assistant: "Assistant"}
		if rp := mapping(mem["role_prefix"]); rp != nil {
			if u := str(rp["user"]); u != "" {
				l.memory.user = u
			}
			if a := str(rp["assistant"]); a != "" {
				l.memory.assistant = a
			}
		}
		if w := mapping(mem["window"]); w != nil {
			if on, _ := w["enabled"].(bool); on {
				l.memory.window = max(1, intOf(w["size"]))
			}
		}
		if l.memory.query == "" {
			l.memory.query = "{{#sys.query#}}"
		}
	}
	l.separated = str(n.Data["reasoning_format"]) == reasoningSeparated
	for _, key := range []string{"structured_output_enabled", "structured_output_switch_on"} {
		if on, _ := n.Data[key].(bool); on {
			l.structured = true
		}
	}
	if l.structured {
		l.schema = mapping(mapping(n.Data["structured_output"])["schema"])
	}
	if v := mapping(n.Data["vision"]); v != nil {
		l.vision, _ = v["enabled"].(bool)
		cfg := mapping(v["configs"])
		l.visionFiles, l.visionDetail = workflow.Selector(cfg["variable_selector"]), str(cfg["detail"])
		if len(l.visionFiles) == 0 {
			l.visionFiles = []string{workflow.ScopeSys, workflow.SysFiles}
		}
		if l.visionDetail == "" {
			l.visionDetail = providers.DetailHigh
		}
	}
	if l.d.Models == nil || l.d.Providers == nil {
		return nil, configError("no models are configured")
	}
	return l, nil
}

// historyCap bounds the exchanges a memory without a window reads.
const historyCap = 50

func (l *llmNode) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	m, err := l.d.model(l.provider, l.name)
	if err != nil {
		return workflow.Result{}, err
	}
	spec := m.Spec
	ctxText, resources := l.contextText(x.Pool)
	lookup := x.Pool.Get
	prompt := make([]providers.Message, 0, len(l.messages)+8)
	var jvars map[string]any
	for _, m := range l.messages {
		var text string
		if m.jinja {
			if jvars == nil {
				jvars = values(x.Pool, l.jinjaVars)
			}
			if text, err = jinja.Render(ctx, m.text, jvars, jinja.Limits{}); err != nil {
				return workflow.Result{}, workflow.Errorf(llmErrorType, "prompt: %v", err)
			}
		} else {
			text = strings.ReplaceAll(m.text, template.ContextPlaceholder, ctxText)
			text = template.Render(text, lookup, value.Text)
		}
		if m.role == providers.RoleSystem || text != "" {
			prompt = append(prompt, providers.Message{Role: m.role, Content: text})
		}
	}
	if l.completion {
		// One text: the memory goes where {{#histories#}} is, as "Human: …" lines.
		var past []store.Message
		if h := env(x).History; h != nil && l.memory != nil {
			n := historyCap
			if l.memory.window > 0 {
				n = l.memory.window
			}
			if past, err = h(ctx, n); err != nil {
				return workflow.Result{}, err
			}
		}
		var hist strings.Builder
		for i, p := range past {
			if i > 0 {
				hist.WriteString("\n")
			}
			hist.WriteString(l.memory.user + ": " + p.Query + "\n" + l.memory.assistant + ": " + p.Answer)
		}
		for i := range prompt {
			prompt[i].Content = strings.ReplaceAll(prompt[i].Content, template.HistoriesPlaceholder, hist.String())
		}
	} else if l.memory != nil {
		if h := env(x).History; h != nil {
			n := historyCap
			if l.memory.window > 0 {
				n = l.memory.window
			}
			past, err := h(ctx, n)
			if err != nil {
				return workflow.Result{}, err
			}
			for _, p := range past {
				prompt = append(prompt, providers.Message{Role: providers.RoleUser, Content: p.Query})
				if p.Answer != "" {
					prompt = append(prompt, providers.Message{Role: providers.RoleAssistant, Content: p.Answer})
				}
			}
		}
		if q := template.Render(l.memory.query, lookup, value.Text); q != "" {
			prompt = append(prompt, providers.Message{Role: providers.RoleUser, Content: q})
		}
	}
	if l.vision && spec.HasFeature(config.FeatureVision) {
		if prompt, err = l.withImages(ctx, x, prompt); err != nil {
			return workflow.Result{}, err
		}
	}
	params := l.params
	if l.structured {
		if l.schema == nil {
			return workflow.Result{}, workflow.Errorf(llmErrorType, "Please provide a valid structured output schema")
		}
		if params, prompt, err = structuredRequest(spec, l.params, prompt, l.schema); err != nil {
			return workflow.Result{}, workflow.Errorf(llmErrorType, "structured output schema: %v", err)
		}
	}
	onDelta, think, sep := func(d string) { x.Stream("text", d) }, (*thinkSplitter)(nil), "\n"
	if l.separated {
		think, sep = newReasoningSplitter(x), ""
		onDelta = think.write
	}
	m.Client = thinkTagged{ChatModel: m.Client, sep: sep}
	call, err := m.Stream(ctx, llm.Request{Messages: prompt, Params: llm.Params(params, spec), OnDelta: onDelta})
	usage, finish := call.Usage, call.FinishReason
	prompts := make([]any, len(prompt))
	for i, m := range prompt {
		prompts[i] = value.ObjectOf("role", m.Role, "text", m.Content, "files", []any{})
	}
	res := workflow.Result{
		Inputs: map[string]any{},
		ProcessData: map[string]any{"model_mode": "chat", "prompts": prompts, "model_provider": l.provider,
			"model_name": l.name, "usage": usage, "finish_reason": finish},
		Usage: &usage,
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, workflow.Errorf(llmErrorType, "%s", safeMessage(err))
	}
	res.Resources = resources
	answer, reasoning := call.Text, ""
	if think != nil {
		think.finish(x)
		answer, reasoning = think.text.String(), think.reasoning.String()
	}
	res.Outputs = map[string]any{"text": answer, "reasoning_content": reasoning, "usage": value.FromGo(usage), "finish_reason": finish}
	if l.structured {
		obj, err := parseStructured(answer)
		if err != nil {
			return res, err
		}
		res.Outputs["structured_output"] = obj
	}
	return res, nil
}

// withImages puts the images among the node's vision files before the text of the prompt's last
// message when it is the user's, else in a user message of their own, as Dify's LLM node does.
// Images go as data URLs, as a Chatbot sends them, so that local models that cannot fetch URLs
// see them too; other kinds of files are not sent.
func (l *llmNode) withImages(ctx context.Context, x *workflow.Exec, prompt []providers.Message) ([]providers.Message, error) {
	v, _ := x.Pool.Get(l.visionFiles)
	fs, _ := fileValues(v)
	var parts []providers.Part
	for _, f := range fs {
		if f.Type != value.FileTypeImage {
			continue
		}
		data, _, mimeType, err := l.d.readFile(ctx, env(x), f)
		if err != nil {
			return nil, workflow.Errorf(llmErrorType, "vision file %s: %v", fileName(f), err)
		}
		parts = append(parts, providers.Part{Type: providers.PartImageURL, ImageURL: files.DataURL(mimeType, data), Detail: l.visionDetail})
	}
	if len(parts) == 0 {
		return prompt, nil
	}
	if n := len(prompt); n > 0 && prompt[n-1].Role == providers.RoleUser {
		last := prompt[n-1]
		if len(last.Parts) == 0 {
			last.Parts = []providers.Part{{Type: providers.PartText, Text: last.Content}}
		}
		last.Parts = append(parts, last.Parts...)
		prompt[n-1] = last
		return prompt, nil
	}
	return append(prompt, providers.Message{Role: providers.RoleUser, Parts: parts}), nil
}

// contextText is the node's context: a string as it is, or the `content` of each retrieved
// chunk, one per line, as Dify joins a knowledge-retrieval result, with the chunks' citations.
func (l *llmNode) contextText(p *workflow.Pool) (string, []store.RetrieverResource) {
	if l.context == nil {
		return "", nil
	}
	v, ok := p.Get(l.context)
	if !ok {
		return "", nil
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case []any:
		var parts []string
		var rs []store.RetrieverResource
		for _, it := range x {
			switch y := it.(type) {
			case string:
				parts = append(parts, y)
			case *value.Object:
				if c, ok := y.Get("content"); ok {
					parts = append(parts, value.Text(c))
				}
				if r, ok := resourceOf(y); ok {
					rs = append(rs, r)
				}
			}
		}
		return strings.Join(parts, "\n"), rs
	}
	return value.Text(v), nil
}

func intOf(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	case string:
		var n int
		_, _ = fmt.Sscan(x, &n)
		return n
	}
	return 0
}

// safeMessage is what a failed model call may tell the client: a provider's client-safe
// message, never an upstream body or address.
func safeMessage(err error) string {
	var perr *providers.Error
	if errors.As(err, &perr) {
		return perr.SafeMessage()
	}
	if errors.Is(err, providers.ErrTruncated) {
		return "the model's answer was cut off"
	}
	return "the model call failed"
}

// model looks up a node's model and its provider's client.
func (d Deps) model(provider, name string) (llm.Model, error) {
	spec, err := d.Models.Lookup(models.TypeLLM, provider, name)
	if err != nil {
		return llm.Model{}, workflow.Errorf(llmErrorType, "model %s/%s: %v", provider, name, err)
	}
	client, err := d.Providers.ChatModel(spec)
	if err != nil {
		return llm.Model{}, workflow.Errorf(llmErrorType, "%s", safeMessage(err))
	}
	return llm.Model{Spec: spec, Client: client}, nil
}
