package nodes

import (
	"encoding/json"
	"maps"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// structuredOutputError is error_type of an LLM node whose answer is not the JSON object its
// structured output asks for, as Dify names it.
const structuredOutputError = "OutputParserError"

// structuredRequest asks the model for a JSON object matching schema, as Dify's LLM node does:
// a model with the structured-output feature gets it as its response_format (json_schema, the
// schema named llm_response); another is told so in a system message put first, its own system
// messages kept after it. params and prompt are not changed.
func structuredRequest(spec models.ModelSpec, params map[string]any, prompt []providers.Message,
	schema map[string]any) (map[string]any, []providers.Message, error) {
	if spec.HasFeature(config.FeatureStructuredOutput) {
		js, err := json.Marshal(map[string]any{"name": "llm_response", "schema": schema})
		if err != nil {
			return nil, nil, err
		}
		out := maps.Clone(params)
		if out == nil {
			out = map[string]any{}
		}
		out["response_format"], out["json_schema"] = "json_schema", string(js)
		return out, prompt, nil
	}
	js, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, err
	}
	instruction := "Answer with one JSON object that is valid against the JSON Schema below, and with nothing else: " +
		"no explanation, no Markdown, no code fence. Keep the language of the user's request in the values.\n\nSchema:\n" + string(js)
	out := make([]providers.Message, 0, len(prompt)+1)
	out = append(out, providers.Message{Role: providers.RoleSystem, Content: instruction})
	return params, append(out, prompt...), nil
}

// fencedJSON is an answer wrapped in a Markdown code fence.
var fencedJSON = regexp.MustCompile("(?s)^```[a-zA-Z]*\\s*\\n(.*?)\\n?```$")

// parseStructured reads a model's answer as the JSON object of a structured output, keeping its
// keys in order. Reasoning in <think> tags, surrounding space and a code fence are taken off
// first; an answer that is not an object fails the node as Dify's does.
func parseStructured(answer string) (*value.Object, error) {
	text := strings.TrimSpace(answer)
	if i := strings.Index(text, "</think>"); strings.HasPrefix(text, "<think>") && i >= 0 {
		text = strings.TrimSpace(text[i+len("</think>"):])
	}
	if m := fencedJSON.FindStringSubmatch(text); m != nil {
		text = strings.TrimSpace(m[1])
	}
	v, err := value.Decode([]byte(text))
	if obj, ok := v.(*value.Object); err == nil && ok {
		return obj, nil
	}
	return nil, workflow.Errorf(structuredOutputError, "Failed to parse structured output: %s", answer)
}
