package nodes

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// questionClassifier asks the model which of its classes the query belongs to and takes that
// class's branch (the class id is the handle). As in Dify, an answer that names no class picks
// the first one.
type questionClassifier struct {
	d           Deps
	provider    string
	name        string
	params      map[string]any
	query       []string
	classes     []class
	instruction string
	memory      *memory
}

type class struct{ id, name string }

func (d Deps) newQuestionClassifier(n *workflow.Node) (workflow.NodeRunner, error) {
	m := mapping(n.Data["model"])
	q := &questionClassifier{d: d, provider: str(m["provider"]), name: str(m["name"]), params: mapping(m["completion_params"]),
		query: workflow.Selector(n.Data["query_variable_selector"]), instruction: str(n.Data["instruction"])}
	if q.provider == "" || q.name == "" {
		return nil, configError("the node names no model")
	}
	for _, c := range list(n.Data["classes"]) {
		cm := mapping(c)
		if id := str(cm["id"]); id != "" {
			q.classes = append(q.classes, class{id: id, name: str(cm["name"])})
		}
	}
	if len(q.classes) == 0 {
		return nil, configError("the node has no classes")
	}
	if mem := mapping(n.Data["memory"]); mem != nil {
		q.memory = &memory{}
		if w := mapping(mem["window"]); w != nil {
			if on, _ := w["enabled"].(bool); on {
				q.memory.window = max(1, intOf(w["size"]))
			}
		}
	}
	if d.Models == nil || d.Providers == nil {
		return nil, configError("no models are configured")
	}
	return q, nil
}

// classifierSystem tells the model how to answer; the categories and the text follow as JSON.
const classifierSystem = `You are a text classifier. Read the input text and assign it to exactly one of the given categories.
Answer with one JSON object, {"category_id": "...", "category_name": "..."}, naming the category you chose, and nothing else.`

func (q *questionClassifier) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	m, err := q.d.model(q.provider, q.name)
	if err != nil {
		return workflow.Result{}, err
	}
	qv, _ := x.Pool.Get(q.query)
	query := value.Text(qv)
	sys := classifierSystem
	instruction := template.Render(q.instruction, x.Pool.Get, value.Text)
	if instruction != "" {
		sys += "\nClassification instructions: " + instruction
	}
	if q.memory != nil {
		if h := env(x).History; h != nil {
			n := historyCap
			if q.memory.window > 0 {
				n = q.memory.window
			}
			past, err := h(ctx, n)
			if err != nil {
				return workflow.Result{}, err
			}
			if len(past) > 0 {
				var b strings.Builder
				for _, p := range past {
					b.WriteString("Human: " + p.Query + "\nAssistant: " + p.Answer + "\n")
				}
				sys += "\nThe conversation so far, between <histories></histories> tags:\n<histories>\n" + b.String() + "</histories>"
			}
		}
	}
	cats := make([]map[string]string, len(q.classes))
	for i, c := range q.classes {
		cats[i] = map[string]string{"category_id": c.id, "category_name": c.name}
	}
	input, _ := json.Marshal(map[string]any{"input_text": []string{query}, "categories": cats,
		"classification_instructions": []string{instruction}})
	prompt := []providers.Message{{Role: providers.RoleSystem, Content: sys}, {Role: providers.RoleUser, Content: string(input)}}
	call, err := m.Stream(ctx, llm.Request{Messages: prompt, Params: llm.Params(q.params, m.Spec)})
	res := workflow.Result{Inputs: map[string]any{"query": query}, Usage: &call.Usage,
		ProcessData: map[string]any{"model_mode": "chat", "prompts": promptValues(prompt), "usage": call.Usage,
			"finish_reason": call.FinishReason, "model_provider": q.provider, "model_name": q.name}}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, workflow.Errorf(llmErrorType, "%s", safeMessage(err))
	}
	chosen := q.pick(call.Text)
	res.Outputs = map[string]any{"class_name": chosen.name, "class_id": chosen.id, "usage": value.FromGo(call.Usage)}
	res.Handle = chosen.id
	return res, nil
}

// pick reads the model's answer: the first JSON object in it, matched by category id, then by
// name; the first class when nothing matches.
func (q *questionClassifier) pick(answer string) class {
	if i, j := strings.Index(answer, "{"), strings.LastIndex(answer, "}"); i >= 0 && j > i {
		var got struct {
			ID   any `json:"category_id"`
			Name any `json:"category_name"`
		}
		if json.Unmarshal([]byte(answer[i:j+1]), &got) == nil {
			id, name := value.Text(value.FromGo(got.ID)), value.Text(value.FromGo(got.Name))
			for _, c := range q.classes {
				if c.id == id {
					return c
				}
			}
			for _, c := range q.classes {
				if c.name == name {
					return c
				}
			}
		}
	}
	return q.classes[0]
}

// promptValues is a prompt as process_data shows it.
func promptValues(prompt []providers.Message) []any {
	out := make([]any, len(prompt))
	for i, m := range prompt {
		out[i] = value.ObjectOf("role", m.Role, "text", m.Content, "files", []any{})
	}
	return out
}
