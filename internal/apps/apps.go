// Package apps holds the apps of the config file as the runtime sees them: their stable ids,
// modes, input forms and the parameters a client reads before calling them.
package apps

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/config"
)

// App is one configured app with its stable id.
type App struct {
	config.App
	// ID is the app's id in the store (stable across restarts).
	ID string
	// MaxActiveRequests is the app's effective concurrency cap; 0 means unlimited.
	MaxActiveRequests int
}

// IsChat reports whether the app is served by the chat routes (/chat-messages, /conversations,
// /messages): Chatbot, Legacy Agent, Agent and Chatflow apps.
func (a *App) IsChat() bool {
	switch a.Mode {
	case config.AppModeChat, config.AppModeAgentChat, config.AppModeAgent, config.AppModeAdvancedChat:
		return true
	}
	return false
}

// StreamingOnly reports whether the app answers only in streaming mode (Legacy Agent and Agent).
func (a *App) StreamingOnly() bool {
	return a.Mode == config.AppModeAgentChat || a.Mode == config.AppModeAgent
}

// Registry finds apps by id.
type Registry struct {
	byID map[string]*App
}

// NewRegistry pairs the config's apps with their store ids (name → id). maxActive resolves an
// app's own limit against the server-wide ones (config.Config.MaxActiveRequests).
func NewRegistry(cfgApps []config.App, ids map[string]string, maxActive func(appLimit int) int) (*Registry, error) {
	r := &Registry{byID: make(map[string]*App, len(cfgApps))}
	for _, c := range cfgApps {
		id, ok := ids[c.Name]
		if !ok {
			return nil, fmt.Errorf("apps: app %q has no id in the store", c.Name)
		}
		r.byID[id] = &App{App: c, ID: id, MaxActiveRequests: maxActive(c.MaxActiveRequests)}
	}
	return r, nil
}

// ByID returns the app with id, if the config still declares it.
func (r *Registry) ByID(id string) (*App, bool) {
	a, ok := r.byID[id]
	return a, ok
}

// InputError is an input that does not fit the app's form; its message is Dify's.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

// SafeMessage implements safeerr.Error.
func (e *InputError) SafeMessage() string { return e.Message }

// ValidateInputs checks inputs against the app's form as Dify does and returns the values the
// app runs with: declared inputs only, defaults filled in, numbers as numbers. Undeclared keys
// are dropped.
func (a *App) ValidateInputs(inputs map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(a.UserInputForm))
	for _, f := range a.UserInputForm {
		v, present := inputs[f.Variable]
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "\x00", "")
		}
		if !present || v == nil || v == "" {
			if f.Required {
				return nil, &InputError{f.Variable + " is required in input form"}
			}
			if f.Default != "" {
				out[f.Variable] = defaultValue(f)
			} else {
				out[f.Variable] = ""
			}
			continue
		}
		switch f.Type {
		case config.InputText, config.InputParagraph:
			s, ok := v.(string)
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a string"}
			}
			if f.MaxLength > 0 && len([]rune(s)) > f.MaxLength {
				return nil, &InputError{fmt.Sprintf("%s in input form must be less than %d characters", f.Variable, f.MaxLength)}
			}
			out[f.Variable] = s
		case config.InputSelect:
			s, ok := v.(string)
			if !ok || !slices.Contains(f.Options, s) {
				return nil, &InputError{fmt.Sprintf("%s in input form must be one of the following: %s", f.Variable, pyList(f.Options))}
			}
			out[f.Variable] = s
		case config.InputNumber:
			n, ok := toNumber(v)
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a valid number"}
			}
			out[f.Variable] = n
		case config.InputCheckbox:
			b, ok := v.(bool)
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a boolean"}
			}
			out[f.Variable] = b
		default:
			out[f.Variable] = v
		}
	}
	return out, nil
}

func defaultValue(f config.InputField) any {
	switch f.Type {
	case config.InputNumber:
		if n, ok := toNumber(f.Default); ok {
			return n
		}
	case config.InputCheckbox:
		return f.Default == "true"
	}
	return f.Default
}

// toNumber accepts a JSON number or a numeric string; integral values stay integers.
func toNumber(v any) (any, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		return n, true
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil {
			return nil, false
		}
		f = p
	default:
		return nil, false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	return f, true
}

// pyList renders options as Python prints a list, which is what Dify's message shows.
func pyList(opts []string) string {
	q := make([]string, len(opts))
	for i, o := range opts {
		q[i] = "'" + o + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Limits are the server's upload limits in MB, shown in the app's parameters.
type Limits struct {
	File, Image, Audio, Video, WorkflowFiles int
}

// Parameters is what GET /parameters shows about an app.
type Parameters struct {
	OpeningStatement              string
	SuggestedQuestions            []string
	SuggestedQuestionsAfterAnswer bool
	RetrieverResource             bool
	// UserInputForm has one entry per input: its type and its description.
	UserInputForm []FormItem
	Limits        Limits
}

// FormItem is one input of an app's form.
type FormItem struct {
	Type      string
	Label     string
	Variable  string
	Required  bool
	Default   string
	MaxLength int
	Options   []string
}

// Parameters returns the app's parameters.
func (a *App) Parameters(l Limits) Parameters {
	p := Parameters{
		OpeningStatement:              a.OpeningStatement,
		SuggestedQuestions:            append([]string{}, a.SuggestedQuestions...),
		SuggestedQuestionsAfterAnswer: a.SuggestedQuestionsAfterAnswer,
		RetrieverResource:             len(a.KnowledgeBases) > 0,
		Limits:                        l,
		UserInputForm:                 make([]FormItem, 0, len(a.UserInputForm)),
	}
	for _, f := range a.UserInputForm {
		p.UserInputForm = append(p.UserInputForm, FormItem{
			Type: f.Type, Label: f.Label, Variable: f.Variable, Required: f.Required,
			Default: f.Default, MaxLength: f.MaxLength, Options: append([]string(nil), f.Options...),
		})
	}
	return p
}
