package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// parameterExtractor asks the model for the values of its declared parameters in the query: by
// a function call when the model calls functions and the node's reasoning mode is function_call
// (the default), else by a JSON answer. As in Dify, values are converted to their declared
// types; an answer that is missing a required parameter or has one of the wrong type does not
// fail the node: every parameter gets its type's empty value, __is_success is 0 and __reason says
// why.
type parameterExtractor struct {
	d           Deps
	provider    string
	name        string
	params      map[string]any
	query       []string
	parameters  []parameter
	instruction string
	mode        string
	schema      json.RawMessage
}

type parameter struct {
	name, typ, description string
	options                []string
	required               bool
}

// extractFunction is the function the model calls in function_call mode.
const extractFunction = "extract_parameters"

func (d Deps) newParameterExtractor(n *workflow.Node) (workflow.NodeRunner, error) {
	m := mapping(n.Data["model"])
	p := &parameterExtractor{d: d, provider: str(m["provider"]), name: str(m["name"]), params: mapping(m["completion_params"]),
		query: workflow.Selector(n.Data["query"]), instruction: str(n.Data["instruction"]), mode: str(n.Data["reasoning_mode"])}
	if p.provider == "" || p.name == "" {
		return nil, configError("the node names no model")
	}
	props := map[string]any{}
	var required []string
	for _, it := range list(n.Data["parameters"]) {
		pm := mapping(it)
		par := parameter{name: str(pm["name"]), typ: str(pm["type"]), description: str(pm["description"])}
		par.required, _ = pm["required"].(bool)
		for _, o := range list(pm["options"]) {
			par.options = append(par.options, value.Text(fromGo(o)))
		}
		if par.name == "" {
			return nil, configError("a parameter has no name")
		}
		prop, err := jsonSchema(par)
		if err != nil {
			return nil, err
		}
		props[par.name] = prop
		if par.required {
			required = append(required, par.name)
		}
		p.parameters = append(p.parameters, par)
	}
	schema := map[string]any{"type": "object", "properties": props, "required": required}
	if required == nil {
		schema["required"] = []string{}
	}
	p.schema, _ = json.Marshal(schema)
	if d.Models == nil || d.Providers == nil {
		return nil, configError("no models are configured")
	}
	return p, nil
}

// jsonSchema is a parameter's schema, from its Dify type.
func jsonSchema(p parameter) (map[string]any, error) {
	s := map[string]any{"description": p.description}
	switch p.typ {
	case "string", "":
		s["type"] = "string"
	case "number":
		s["type"] = "number"
	case "bool", "boolean":
		s["type"] = "boolean"
	case "select":
		s["type"], s["enum"] = "string", p.options
	case "array[string]", "array[number]", "array[bool]", "array[boolean]", "array[object]":
		item := strings.TrimSuffix(strings.TrimPrefix(p.typ, "array["), "]")
		if item == "bool" {
			item = "boolean"
		}
		s["type"], s["items"] = "array", map[string]any{"type": item}
	default:
		return nil, configError("parameter %s: unknown type %q", p.name, p.typ)
	}
	return s, nil
}

func (p *parameterExtractor) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	m, err := p.d.model(p.provider, p.name)
	if err != nil {
		return workflow.Result{}, err
	}
	qv, _ := x.Pool.Get(p.query)
	query := value.Text(qv)
	instruction := template.Render(p.instruction, x.Pool.Get, value.Text)
	useFunctions := p.mode != "prompt" && (m.Spec.HasFeature("tool-call") || m.Spec.HasFeature("multi-tool-call"))
	sys := "You extract structured parameters from the user's text."
	var tools []providers.Tool
	if useFunctions {
		sys += " Call the function " + extractFunction + " with the values you find; leave out what the text does not say."
		tools = []providers.Tool{{Name: extractFunction, Description: "Extract parameters from the text.", Parameters: p.schema}}
	} else {
		sys += " Answer with one JSON object, and nothing else, whose members follow this JSON schema; leave out what the text does not say.\n" + string(p.schema)
	}
	if instruction != "" {
		sys += "\nInstructions: " + instruction
	}
	prompt := []providers.Message{{Role: providers.RoleSystem, Content: sys}, {Role: providers.RoleUser, Content: query}}
	call, err := m.Stream(ctx, llm.Request{Messages: prompt, Params: llm.Params(p.params, m.Spec), Tools: tools})
	res := workflow.Result{Inputs: map[string]any{"query": query, "instruction": instruction}, Usage: &call.Usage,
		ProcessData: map[string]any{"model_mode": "chat", "prompts": promptValues(prompt), "usage": call.Usage,
			"finish_reason": call.FinishReason, "model_provider": p.provider, "model_name": p.name, "reasoning_mode": map[bool]string{true: "function_call", false: "prompt"}[useFunctions]}}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, workflow.Errorf(llmErrorType, "%s", safeMessage(err))
	}
	raw := call.Text
	for _, tc := range call.ToolCalls {
		if tc.Name == extractFunction {
			raw = tc.Arguments
			break
		}
	}
	values, reason := p.extract(raw)
	out := make(map[string]any, len(p.parameters)+3)
	for _, par := range p.parameters {
		out[par.name] = values[par.name]
	}
	out["__is_success"] = int64(1)
	out["__reason"] = nil
	if reason != "" {
		out["__is_success"], out["__reason"] = int64(0), reason
	}
	out["__usage"] = value.FromGo(call.Usage)
	res.Outputs = out
	return res, nil
}

// extract reads the model's answer into the declared parameters; on a problem every parameter
// has its type's empty value and the reason is returned.
func (p *parameterExtractor) extract(raw string) (map[string]any, string) {
	obj := map[string]any{}
	i, j := strings.Index(raw, "{"), strings.LastIndex(raw, "}")
	if i < 0 || j < i || json.Unmarshal([]byte(raw[i:j+1]), &obj) != nil {
		return p.defaults(), "the model's answer is not a JSON object"
	}
	out := make(map[string]any, len(p.parameters))
	for _, par := range p.parameters {
		v, ok := obj[par.name]
		if !ok || v == nil {
			if par.required {
				return p.defaults(), fmt.Sprintf("parameter %s is required", par.name)
			}
			out[par.name] = empty(par.typ)
			continue
		}
		cv, err := convert(par, v)
		if err != nil {
			return p.defaults(), fmt.Sprintf("parameter %s: %v", par.name, err)
		}
		out[par.name] = cv
	}
	return out, ""
}

func (p *parameterExtractor) defaults() map[string]any {
	out := make(map[string]any, len(p.parameters))
	for _, par := range p.parameters {
		out[par.name] = empty(par.typ)
	}
	return out
}

// empty is a type's empty value.
func empty(typ string) any {
	switch {
	case typ == "number":
		return int64(0)
	case typ == "bool" || typ == "boolean":
		return false
	case strings.HasPrefix(typ, "array"):
		return []any{}
	}
	return ""
}

// convert checks an extracted value against its parameter's type, converting numbers and
// booleans given as text.
func convert(par parameter, v any) (any, error) {
	switch par.typ {
	case "number":
		// As JSON and Python read them: a whole number is an integer.
		switch x := v.(type) {
		case float64:
			return wholeOrFloat(x), nil
		case string:
			s := strings.TrimSpace(x)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a number", x)
			}
			return f, nil
		}
		return nil, fmt.Errorf("expected a number")
	case "bool", "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("%q is not a boolean", x)
			}
			return b, nil
		}
		return nil, fmt.Errorf("expected a boolean")
	case "select":
		s, ok := v.(string)
		if !ok || !slices.Contains(par.options, s) {
			return nil, fmt.Errorf("%v is not one of its options", v)
		}
		return s, nil
	case "string", "":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return value.Text(value.FromGo(v)), nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("expected an array")
	}
	return value.FromGo(arr), nil
}

func wholeOrFloat(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}
