package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
)

// buildPrompt is the prompt of the first round: the head of the app's simple prompt, as much of
// the conversation's history as fits the model's context (oldest exchanges dropped first), and
// the query. An earlier answer is replayed with its steps: each step that called tools becomes
// the assistant's tool calls followed by the tools' results, as the model saw them.
func buildPrompt(app *apps.App, spec models.ModelSpec, inputs map[string]any, history []store.Message,
	thoughts map[string][]store.AgentThought, query string) []providers.Message {
	head := chat.Head(app, inputs)
	last := providers.Message{Role: providers.RoleUser, Content: query}
	exchanges := make([][]providers.Message, len(history))
	for i, m := range history {
		exchanges[i] = replay(m, thoughts[m.ID])
	}
	budget := spec.ContextSize - chat.ReplyBudget(app, spec) - tokens.CountMessages(append(append([]providers.Message(nil), head...), last))
	keep := len(exchanges)
	for i := len(exchanges) - 1; i >= 0; i-- {
		cost := tokens.CountMessages(exchanges[i])
		if spec.ContextSize > 0 && cost > budget {
			break
		}
		budget -= cost
		keep = i
	}
	msgs := append([]providers.Message(nil), head...)
	for _, ex := range exchanges[keep:] {
		msgs = append(msgs, ex...)
	}
	return append(msgs, last)
}

// replay is an earlier message as the prompt shows it: the query, then each step (its text, its
// tool calls and their results), or the answer alone when it has no steps.
func replay(m store.Message, steps []store.AgentThought) []providers.Message {
	out := []providers.Message{{Role: providers.RoleUser, Content: m.Query}}
	if len(steps) == 0 {
		if m.Answer != "" {
			out = append(out, providers.Message{Role: providers.RoleAssistant, Content: m.Answer})
		}
		return out
	}
	for _, st := range steps {
		if st.Tool == "" {
			if st.Thought != "" {
				out = append(out, providers.Message{Role: providers.RoleAssistant, Content: st.Thought})
			}
			continue
		}
		var inputs, observations map[string]json.RawMessage
		_ = json.Unmarshal([]byte(st.ToolInput), &inputs)
		_ = json.Unmarshal([]byte(st.Observation), &observations)
		call := providers.Message{Role: providers.RoleAssistant, Content: st.Thought}
		var results []providers.Message
		for i, name := range strings.Split(st.Tool, ";") {
			id := st.ID + "-" + strconv.Itoa(i)
			args := "{}"
			if raw, ok := inputs[name]; ok {
				args = argumentsText(raw)
			}
			call.ToolCalls = append(call.ToolCalls, providers.ToolCall{ID: id, Name: name, Arguments: args})
			results = append(results, providers.Message{Role: providers.RoleTool, ToolCallID: id, Name: name, Content: stringValue(observations[name])})
		}
		out = append(out, call)
		out = append(out, results...)
	}
	return out
}

// argumentsText is a call's arguments as the model wrote them: an object as JSON, a string
// (arguments that were not JSON) as itself.
func argumentsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// stringValue is a JSON string's text, or the JSON itself for another value.
func stringValue(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// object builds a JSON object text whose members keep the order they were first set in, in the
// spacing Dify stores (`{"a": 1, "b": 2}`), with non-ASCII text kept as is.
type object struct {
	keys   []string
	values map[string]any
}

func newObject() *object { return &object{values: map[string]any{}} }

func (o *object) set(k string, v any) {
	if _, ok := o.values[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.values[k] = v
}

func (o *object) String() string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(jsonenc.Marshal(k))
		b.WriteString(": ")
		b.Write(jsonenc.Marshal(o.values[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// pyJSON re-spaces a JSON text as Dify's stored JSON is spaced (", " and ": " between members,
// members in the order written), or returns false if it is not one JSON value.
func pyJSON(text string) (json.RawMessage, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var b bytes.Buffer
	// first[i] says the container at depth i has no member yet; key says a value follows a key.
	var first []bool
	var inObject []bool
	afterKey := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil || (len(first) == 0 && b.Len() > 0) {
			return nil, false // not JSON, or a second value
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if len(first) == 0 {
				return nil, false
			}
			first, inObject = first[:len(first)-1], inObject[:len(inObject)-1]
			b.WriteRune(rune(d))
			continue
		}
		n := len(first)
		if n > 0 && !afterKey {
			if !first[n-1] {
				b.WriteString(", ")
			}
			first[n-1] = false
		}
		isKey := n > 0 && inObject[n-1] && !afterKey
		afterKey = false
		switch v := tok.(type) {
		case json.Delim:
			b.WriteRune(rune(v))
			first = append(first, true)
			inObject = append(inObject, v == '{')
			continue
		case json.Number:
			b.WriteString(v.String())
		default:
			b.Write(jsonenc.Marshal(v))
		}
		if isKey {
			b.WriteString(": ")
			afterKey = true
		}
	}
	if len(first) != 0 || b.Len() == 0 {
		return nil, false
	}
	return b.Bytes(), true
}
