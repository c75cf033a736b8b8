// Package jinja renders Jinja2 templates (template-transform nodes and LLM prompts in jinja2
// mode) with gonja, inside bounds: an output size cap, a deadline checked as loops start, a cap
// on range(), no template loading (include, import, from and extends are not available) and
// recovery from a panicking template. Objects keep their insertion order when iterated and
// printed.
package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	gonjacs "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"

	"github.com/parleyhq/parley/internal/workflow/value"
)

// Defaults for Limits' zero fields.
const (
	// DefaultMaxOutput is Dify's default cap on a template-transform output, in characters.
	DefaultMaxOutput = 400_000
	// DefaultTimeout bounds one render.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxRange is the longest sequence range() may produce (Jinja2's sandbox limit).
	DefaultMaxRange = 100_000
)

// Limits bound one render. Zero fields take the defaults.
type Limits struct {
	MaxOutput int           // characters (runes) of output
	Timeout   time.Duration // wall clock for the render
	MaxRange  int           // items range() may produce
}

func (l Limits) withDefaults() Limits {
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxRange <= 0 {
		l.MaxRange = DefaultMaxRange
	}
	return l
}

var (
	// ErrSyntax marks a template that does not parse.
	ErrSyntax = errors.New("template syntax error")
	// ErrRender marks a template that fails while rendering (bad filter argument, range too
	// big, a panic inside the engine).
	ErrRender = errors.New("template render error")
	// ErrOutputTooLong is returned when the output exceeds Limits.MaxOutput.
	ErrOutputTooLong = errors.New("template output too long")
	// ErrTimeout is returned when the render runs past Limits.Timeout or ctx ends.
	ErrTimeout = errors.New("template render timed out")
)

const rootName = "template"

// Render renders text with vars (values of the workflow value model: *value.Object keeps its
// order, *value.File is seen as its dict). The render runs in its own goroutine; when
// Limits.Timeout passes, Render returns ErrTimeout at once, and when ctx ends first, an error
// wrapping ctx.Err() (context.Canceled when a run is stopped); the goroutine stops at its next
// loop iteration, macro call or output write.
func Render(ctx context.Context, text string, vars map[string]any, lim Limits) (string, error) {
	lim = lim.withDefaults()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	stopped := func() error {
		if err := parent.Err(); err != nil {
			return fmt.Errorf("template render stopped: %w", err)
		}
		return ErrTimeout
	}

	pt, pool, err := acquire(ctx, text, lim)
	if err != nil {
		return "", err
	}
	tpl, g := pt.tpl, pt.g
	data := exec.NewContext(map[string]any{"range": rangeFunc(lim.MaxRange)})
	for k, v := range vars {
		data.Set(k, toGonja(v))
	}
	out := &capWriter{max: lim.MaxOutput, g: g}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%w: %v", ErrRender, r)
			}
		}()
		done <- tpl.Execute(out, data)
	}()
	select {
	case err = <-done:
		// The render is over: the next one may use the template. (One that timed out may
		// still be running; its template is dropped.)
		if pool != nil {
			pool.Put(pt)
		}
	case <-ctx.Done():
		g.stop.Store(true)
		return "", stopped()
	}
	switch {
	case out.over:
		return "", fmt.Errorf("%w: output length exceeds %d characters", ErrOutputTooLong, lim.MaxOutput)
	case err == nil:
		return out.b.String(), nil
	case g.stop.Load():
		return "", stopped()
	}
	return "", fmt.Errorf("%w: %s", ErrRender, cleanMessage(err))
}

// Check parses text without rendering it, for import-time validation. Its answer depends on the
// text alone and workflow nodes ask it each time a run builds them, so it is remembered, for
// texts up to maxMemoBytes in all.
func Check(text string) error {
	if err, ok := checked.m.Load(text); ok {
		return err.(checkResult).err
	}
	lim := Limits{}.withDefaults()
	_, err := parse(text, &guard{ctx: context.Background(), maxOutput: lim.MaxOutput, maxItems: lim.MaxRange})
	checked.store(text, len(text), checkResult{err})
	return err
}

// textMemo is a map of what depends on a template's text alone that stops taking texts once
// they add up to maxMemoBytes, so that a stream of distinct texts cannot grow it without bound.
type textMemo struct {
	m     sync.Map
	bytes atomic.Int64
}

const maxMemoBytes = 4 << 20

// store keeps v under key, a text of size bytes, unless the memo is full, and returns what the
// memo holds under key then (v, or what another caller stored first), or nil.
func (t *textMemo) store(key any, size int, v any) any {
	if t.bytes.Load()+int64(size) > maxMemoBytes {
		return nil
	}
	got, loaded := t.m.LoadOrStore(key, v)
	if !loaded {
		t.bytes.Add(int64(size))
	}
	return got
}

// checked remembers Check's answers, a checkResult by text.
var checked textMemo

type checkResult struct{ err error }

// parsedTemplate is a template parsed for one render at a time, with the guard its filters,
// loops and macros consult, reset for each render.
type parsedTemplate struct {
	tpl *exec.Template
	g   *guard
}

// parseKey is what a parsed template depends on: its text and the limits its filters bake in.
type parseKey struct {
	text                string
	maxOutput, maxItems int
}

// parsed keeps templates once parsed, a pool of them per parseKey, so that a node rendering the
// same text on every run parses it once per concurrent render rather than on every render; once
// the memo is full, a new text is parsed for each render.
var parsed textMemo

// acquire returns a parsed template of text for one render under ctx and lim, with the pool to
// put it back in once the render is over (nil when the text is not kept).
func acquire(ctx context.Context, text string, lim Limits) (*parsedTemplate, *sync.Pool, error) {
	key := parseKey{text: text, maxOutput: lim.MaxOutput, maxItems: lim.MaxRange}
	var pool *sync.Pool
	if p, ok := parsed.m.Load(key); ok {
		pool = p.(*sync.Pool)
		if v := pool.Get(); v != nil {
			pt := v.(*parsedTemplate)
			pt.g.ctx = ctx
			pt.g.stop.Store(false)
			pt.g.depth.Store(0)
			return pt, pool, nil
		}
	}
	g := &guard{ctx: ctx, maxOutput: lim.MaxOutput, maxItems: lim.MaxRange}
	tpl, err := parse(text, g)
	if err != nil {
		return nil, nil, err
	}
	if pool == nil {
		pool, _ = parsed.store(key, len(text), &sync.Pool{}).(*sync.Pool)
	}
	return &parsedTemplate{tpl: tpl, g: g}, pool, nil
}

func parse(text string, g *guard) (*exec.Template, error) {
	env := &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           renderFilters(g),
		Tests:             builtins.Tests,
		ControlStructures: controlStructures(g),
		Methods:           methods,
	}
	loader, err := loaders.NewMemoryLoader(map[string]string{"/" + rootName: text})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	tpl, err := exec.NewTemplate("/"+rootName, config.New(), loader, env)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSyntax, cleanMessage(err))
	}
	rewrite(tpl.Root(), g)
	return tpl, nil
}

// cleanMessage drops gonja's echo of the whole template source from parse errors.
func cleanMessage(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "': "); strings.HasPrefix(msg, "failed to parse template '") && i > 0 {
		return msg[i+3:]
	}
	return msg
}

// guard lets a timed-out render stop: loops check it before they run and the writer after the
// deadline refuses output.
type guard struct {
	ctx       context.Context
	stop      atomic.Bool
	depth     atomic.Int32
	maxOutput int // characters of output; intermediate strings may reach 4× this
	maxItems  int // items of a list built by +
}

func (g *guard) err() error {
	if g.stop.Load() {
		return ErrTimeout
	}
	if err := g.ctx.Err(); err != nil {
		g.stop.Store(true)
		return ErrTimeout
	}
	return nil
}

// controlStructures is gonja's set without the statements that load other templates, and with
// "for" checking the guard each time a loop starts.
func controlStructures(g *guard) *exec.ControlStructureSet {
	all := map[string]parser.ControlStructureParser{}
	for _, name := range []string{"autoescape", "block", "filter", "for", "if", "macro", "raw", "set", "with", "do", "break", "continue", "trans", "call"} {
		if p, ok := builtins.ControlStructures.Get(name); ok {
			all[name] = p
		}
	}
	inner := all["for"]
	all["for"] = func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := inner(p, args)
		if err != nil {
			return nil, err
		}
		ecs, ok := cs.(exec.ControlStructure)
		if !ok {
			return cs, nil
		}
		return &guardedFor{ControlStructure: ecs, g: g}, nil
	}
	innerMacro := all["macro"]
	all["macro"] = func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := innerMacro(p, args)
		if err != nil {
			return nil, err
		}
		mcs, ok := cs.(*gonjacs.MacroControlStructure)
		if !ok {
			return cs, nil
		}
		return &guardedMacro{MacroControlStructure: mcs, g: g}, nil
	}
	return exec.NewControlStructureSet(all)
}

// guardedMacro defines a macro whose calls are bounded: nesting depth (a recursive macro would
// otherwise overflow the goroutine stack, which kills the process), the guard's deadline, and
// the size of what one call returns.
type guardedMacro struct {
	*gonjacs.MacroControlStructure
	g *guard
}

func (m *guardedMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := m.MacroControlStructure.Execute(r, tag); err != nil {
		return err
	}
	v, ok := r.Environment.Context.Get(m.Name)
	if !ok {
		return nil
	}
	inner, ok := v.(exec.Macro)
	if !ok {
		return nil
	}
	g := m.g
	r.Environment.Context.Set(m.Name, exec.Macro(func(params *exec.VarArgs) *exec.Value {
		if err := g.err(); err != nil {
			return exec.AsValue(err)
		}
		if g.depth.Add(1) > maxMacroDepth {
			g.depth.Add(-1)
			return exec.AsValue(fmt.Errorf("macro %s: calls nested deeper than %d", m.Name, maxMacroDepth))
		}
		defer g.depth.Add(-1)
		out := inner(params)
		if out.IsString() && len(out.String()) > 4*g.maxOutput {
			return exec.AsValue(fmt.Errorf("macro %s: %w", m.Name, ErrOutputTooLong))
		}
		return out
	}))
	return nil
}

// maxMacroDepth bounds macro call nesting; Jinja2 under Python stops at a similar depth.
const maxMacroDepth = 100

type guardedFor struct {
	exec.ControlStructure
	g *guard
}

func (f *guardedFor) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := f.g.err(); err != nil {
		return err
	}
	return f.ControlStructure.Execute(r, tag)
}

// rangeFunc replaces gonja's range (which feeds a goroutine-backed channel) with a bounded list.
func rangeFunc(max int) func(*exec.Evaluator, *exec.VarArgs) ([]int, error) {
	return func(_ *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
		start, stop, step := 0, 0, 1
		ints := func() bool {
			for _, a := range params.Args {
				if !a.IsInteger() {
					return false
				}
			}
			return true
		}()
		switch n := len(params.Args); {
		case !ints || n == 0 || n > 3:
			return nil, errors.New("range expects [start, ]stop[, step] integers")
		case n == 1:
			stop = params.Args[0].Integer()
		default:
			start, stop = params.Args[0].Integer(), params.Args[1].Integer()
			if n == 3 {
				step = params.Args[2].Integer()
			}
		}
		if step == 0 {
			return nil, errors.New("range step cannot be 0")
		}
		count := 0
		if step > 0 && stop > start {
			count = (stop - start + step - 1) / step
		} else if step < 0 && stop < start {
			count = (start - stop - step - 1) / -step
		}
		if count > max {
			return nil, fmt.Errorf("range too big: %d items, the limit is %d", count, max)
		}
		out := make([]int, count)
		for i := range out {
			out[i] = start + i*step
		}
		return out, nil
	}
}

// capWriter collects output up to max runes; past that, or once the guard trips, writes fail
// and gonja stops rendering.
type capWriter struct {
	b    strings.Builder
	n    int
	max  int
	over bool
	g    *guard
}

func (w *capWriter) Write(p []byte) (int, error) {
	if err := w.g.err(); err != nil {
		return 0, err
	}
	w.n += utf8.RuneCount(p)
	if w.n > w.max {
		w.over = true
		return 0, ErrOutputTooLong
	}
	return w.b.Write(p)
}

// pyList is a list that prints as Python prints a list.
type pyList []any

func (l pyList) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range l {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(repr(e))
	}
	b.WriteByte(']')
	return b.String()
}

// pyTuple is a pair from a dict's items; it prints as Python prints a tuple.
type pyTuple []any

func (t pyTuple) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for i, e := range t {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(repr(e))
	}
	if len(t) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// repr prints a template value as Python's repr does.
func repr(e any) string {
	switch t := e.(type) {
	case nil:
		return "None"
	case *exec.Value:
		if t == nil {
			return "None"
		}
		return repr(t.Interface())
	case pyList:
		return t.String()
	case pyTuple:
		return t.String()
	case exec.ValuesList:
		items := make([]string, len(t))
		for i, v := range t {
			items[i] = repr(v)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case []any:
		items := make([]string, len(t))
		for i, v := range t {
			items[i] = repr(v)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case exec.Dict:
		return repr(&t)
	case *exec.Dict:
		items := make([]string, len(t.Pairs))
		for i, p := range t.Pairs {
			items[i] = repr(p.Key) + ": " + repr(p.Value)
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
	return value.PyRepr(fromGonja(e))
}

// toGonja converts a workflow value for the template: objects and files become ordered gonja
// dicts, arrays print as Python lists.
func toGonja(v any) any {
	switch t := v.(type) {
	case *value.Object:
		d := exec.NewDict()
		t.Range(func(k string, e any) bool {
			d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: exec.AsValue(toGonja(e))})
			return true
		})
		return d
	case *value.File:
		return toGonja(t.Dict())
	case []any:
		l := make(pyList, len(t))
		for i, e := range t {
			l[i] = toGonja(e)
		}
		return l
	case int64, float64, string, bool, nil:
		return v
	}
	return toGonja(value.FromGo(v))
}
