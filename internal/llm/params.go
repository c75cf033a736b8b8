package llm

import (
	"encoding/json"
	"maps"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tokens"
)

// minReply is the fewest completion tokens a call asks for when the prompt leaves less room than
// that (Dify's floor).
const minReply = 16

// Params are completion parameters as a Dify file writes them (an app's, or a workflow node's
// completion_params) made ready for the upstream: a copy, rewritten by upstreamParams, with the
// model's own output cap as max_tokens when none is set. Stream fits max_tokens to each prompt.
func Params(params map[string]any, spec models.ModelSpec) map[string]any {
	p := maps.Clone(params)
	if p == nil {
		p = make(map[string]any, 1)
	}
	upstreamParams(p)
	if _, ok := p["max_tokens"]; !ok && spec.MaxOutputTokens > 0 {
		p["max_tokens"] = spec.MaxOutputTokens
	}
	return p
}

// upstreamParams rewrites completion parameters, in place, into what an
// OpenAI-compatible API accepts, as Dify's OpenAI and OpenAI-compatible providers send them:
//
//   - stop words are sent only when there are some: exports carry "stop: []", which some
//     servers refuse;
//   - a parameter without a value (null) is left out, as Dify leaves out unset parameters;
//   - response_format is a type name in Dify's parameters ("json_object"), an object on the
//     wire ({"type": "json_object"}); with "json_schema" the json_schema parameter (a JSON
//     text) goes inside it. An empty response_format, or a json_schema without it, is left out.
//
// Every other parameter is passed as it is.
func upstreamParams(p map[string]any) {
	for k, v := range p {
		if v == nil {
			delete(p, k)
		}
	}
	if stop, ok := p["stop"]; ok && noStop(stop) {
		delete(p, "stop")
	}
	schema, hasSchema := p["json_schema"]
	switch rf := p["response_format"].(type) {
	case string:
		switch rf {
		case "":
			delete(p, "response_format")
		case "json_schema":
			out := map[string]any{"type": rf}
			if hasSchema {
				out["json_schema"] = schemaValue(schema)
			}
			p["response_format"] = out
		default:
			p["response_format"] = map[string]any{"type": rf}
		}
		delete(p, "json_schema")
	case nil:
		if hasSchema {
			delete(p, "json_schema")
		}
	}
}

// noStop reports whether a stop parameter holds no stop word.
func noStop(v any) bool {
	switch s := v.(type) {
	case string:
		return s == ""
	case []any:
		return len(s) == 0
	case []string:
		return len(s) == 0
	}
	return false
}

// schemaValue is a json_schema parameter as JSON: Dify keeps it as text; a text that is not JSON
// is sent as it is, for the upstream to refuse.
func schemaValue(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	var out any
	if json.Unmarshal([]byte(s), &out) != nil {
		return s
	}
	return out
}

// IntParam reads a whole-number parameter (max_tokens, say); numbers from YAML are ints, from
// JSON float64.
func IntParam(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}

// FitReply lowers max_tokens when the prompt and the answer together would overflow the
// model's context, as Dify does before every call: the answer gets what the prompt leaves, and
// at least minReply tokens. params is not changed; the result is params or a copy.
func FitReply(params map[string]any, spec models.ModelSpec, prompt []providers.Message) map[string]any {
	limit, ok := IntParam(params["max_tokens"])
	if !ok || spec.ContextSize <= 0 || UpperBound(prompt)+limit <= spec.ContextSize {
		return params
	}
	used := tokens.CountMessages(prompt)
	if used+limit <= spec.ContextSize {
		return params
	}
	out := maps.Clone(params)
	out["max_tokens"] = max(spec.ContextSize-used, minReply)
	return out
}

// MessageOverhead bounds the tokens a message adds besides its text (role and framing).
const MessageOverhead = 8

// UpperBound is more than the tokens the messages can take: a token covers at least one byte,
// so a prompt whose bytes fit a budget fits it in tokens, and the common case needs no
// tokenizer, which costs far more than the rest of a request.
func UpperBound(ms []providers.Message) int {
	n := 3
	for _, m := range ms {
		n += len(m.Content) + MessageOverhead
		for _, p := range m.Parts {
			n += len(p.Text) + tokens.ImageTokens + MessageOverhead
		}
	}
	return n
}
