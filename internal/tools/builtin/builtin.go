// Package builtin holds the tools Parley ships with, under the provider ids and tool names Dify's
// DSL exports use, so that an imported app's tools resolve to them: the time tools (provider
// "time"), a maths evaluator ("maths"), JSON processing ("json_process") and a web-page reader
// ("webscraper"). All but the web-page reader work without a network; the reader fetches through
// the network guard.
//
// A tool is made for one app's use of it: configured holds the values the app set for the tool
// (the DSL's tool_parameters, as plain values), and the model's arguments are merged over them on
// each call. An empty string in configured counts as unset, as Dify's exports leave unset
// parameters as "".
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/tools"
)

// Options configure a [Set]. The zero value is usable.
type Options struct {
	// HTTPClient is the base client of the web-page reader; the network guard is installed on a
	// copy of it unless AllowPrivateNetworks (see netguard.Client).
	HTTPClient *http.Client
	// AllowPrivateNetworks lets the web-page reader reach internal addresses (tests, trusted
	// deployments).
	AllowPrivateNetworks bool
	// PageTimeout bounds one page fetch, body included (DefaultPageTimeout if <= 0).
	PageTimeout time.Duration
	// MaxPageBytes caps the bytes of a page read; the rest is not read (DefaultMaxPageBytes if
	// <= 0).
	MaxPageBytes int64
	// Now is the clock of the time tools (time.Now if nil).
	Now func() time.Time
}

// Defaults of [Options].
const (
	DefaultPageTimeout  = 15 * time.Second
	DefaultMaxPageBytes = 2 << 20
)

// Set is the built-in tools with their dependencies.
type Set struct {
	specs []spec
}

// spec is one built-in tool, before an app configures it.
type spec struct {
	provider, name string
	label          string
	description    string
	parameters     json.RawMessage
	run            func(ctx context.Context, a args) (string, error)
}

// New returns the built-in tools configured by opts. It panics if opts.HTTPClient's transport is
// not an *http.Transport while the guard is on, a wiring mistake.
func New(opts Options) *Set {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PageTimeout <= 0 {
		opts.PageTimeout = DefaultPageTimeout
	}
	if opts.MaxPageBytes <= 0 {
		opts.MaxPageBytes = DefaultMaxPageBytes
	}
	var specs []spec
	specs = append(specs, timeSpecs(opts.Now)...)
	specs = append(specs, mathsSpecs()...)
	specs = append(specs, jsonSpecs()...)
	specs = append(specs, webSpecs(opts)...)
	return &Set{specs: specs}
}

var defaultSet = New(Options{})

// Lookup returns the built-in tool provider/name of the default set (see [Set.Lookup]).
func Lookup(provider, name string, configured map[string]any) (tools.Tool, error) {
	return defaultSet.Lookup(provider, name, configured)
}

// All lists the tools of the default set, unconfigured (see [Set.All]).
func All() []tools.Tool { return defaultSet.All() }

// Lookup returns the tool provider/name configured with the app's values; tools.ErrUnknownTool
// if there is none. provider may be spelled as a plugin id, "langgenius/json_process/json_process".
func (s *Set) Lookup(provider, name string, configured map[string]any) (tools.Tool, error) {
	p := provider
	if parts := strings.Split(provider, "/"); len(parts) == 3 && parts[0] == "langgenius" && parts[1] == parts[2] {
		p = parts[2]
	}
	for _, sp := range s.specs {
		if sp.provider == p && sp.name == name {
			return &tool{spec: sp, configured: configured}, nil
		}
	}
	return nil, fmt.Errorf("%w: %s/%s", tools.ErrUnknownTool, provider, name)
}

// Find returns the built-in tool ref names (provider type builtin or plugin, or none), configured
// with the app's values; tools.ErrUnknownTool for any other tool. It is an agent's tool lookup
// when only built-in tools are available.
func (s *Set) Find(_ context.Context, ref tools.Ref) (tools.Tool, error) {
	switch ref.Type {
	case "", tools.TypeBuiltin, tools.TypePlugin:
		return s.Lookup(ref.Provider(), ref.Name, ref.Configured)
	}
	return nil, fmt.Errorf("%w: %s tools are not available", tools.ErrUnknownTool, ref.Type)
}

// Find finds ref among the tools of the default set (see [Set.Find]).
func Find(ctx context.Context, ref tools.Ref) (tools.Tool, error) { return defaultSet.Find(ctx, ref) }

// All lists every tool of the set, unconfigured, in a stable order.
func (s *Set) All() []tools.Tool {
	out := make([]tools.Tool, 0, len(s.specs))
	for _, sp := range s.specs {
		out = append(out, &tool{spec: sp})
	}
	return out
}

// tool is a spec configured for one app.
type tool struct {
	spec
	configured map[string]any
}

func (t *tool) Identity() tools.Identity {
	return tools.Identity{Provider: t.provider, Name: t.name, Label: map[string]string{"en_US": t.label}}
}

func (t *tool) Description() string { return t.description }

func (t *tool) Parameters() json.RawMessage { return slices.Clone(t.parameters) }

// Invoke runs the tool. It returns an error only for a cancelled context; bad arguments and
// failures are an IsError result.
func (t *tool) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	a, err := mergeArgs(t.configured, raw)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	text, err := t.run(ctx, a)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return tools.Result{}, cerr
		}
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	return tools.Result{Text: text}, nil
}

// args are a call's arguments: the model's over the app's.
type args map[string]any

func mergeArgs(configured map[string]any, raw json.RawMessage) (args, error) {
	return tools.MergeArgs(configured, raw)
}

// str returns argument name as text ("" if absent); numbers and booleans are spelled out.
func (a args) str(name string) string {
	switch v := a[name].(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case bool:
		return strconv.FormatBool(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

// required returns argument name, or an error naming it when absent or empty.
func (a args) required(name string) (string, error) {
	s := strings.TrimSpace(a.str(name))
	if s == "" {
		return "", fmt.Errorf("%w: %s is required", tools.ErrBadArguments, name)
	}
	return s, nil
}

// integer returns argument name as an integer, def when absent.
func (a args) integer(name string, def int64) (int64, error) {
	s := strings.TrimSpace(a.str(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, fmt.Errorf("%w: %s must be an integer, not %q", tools.ErrBadArguments, name, s)
		}
		n = int64(f)
	}
	return n, nil
}

// boolean returns argument name as a boolean (true, 1, "true", "1", "yes"), def when absent.
func (a args) boolean(name string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(a.str(name))) {
	case "":
		return def
	case "true", "1", "yes", "on":
		return true
	default:
		return false
	}
}

// schema builds an object JSON Schema from (name, type, description) triples; required lists the
// names the model must give.
func schema(required []string, props ...[3]string) json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	p := make(map[string]prop, len(props))
	for _, x := range props {
		p[x[0]] = prop{Type: x[1], Description: x[2]}
	}
	if required == nil {
		required = []string{}
	}
	b, err := json.Marshal(struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
		Required   []string        `json:"required"`
	}{"object", p, required})
	if err != nil {
		panic(err)
	}
	return b
}
