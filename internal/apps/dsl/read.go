package dsl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxValues bounds how many values a file may expand to, aliases included, so that a small file
// of nested aliases cannot make the reader build an enormous tree.
const maxValues = 1_000_000

// tree turns a YAML node into plain values: map[string]any, []any, string, int, float64,
// bool and nil. Scalars keep the text YAML would not round-trip (timestamps stay strings).
type tree struct {
	p     *problems
	count int
}

func (t *tree) value(n *yaml.Node, path string) any {
	t.count++
	if t.count > maxValues {
		if t.count == maxValues+1 {
			t.p.add(path, "the file expands to more than %d values", maxValues)
		}
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return t.value(n.Content[0], path)
	case yaml.AliasNode:
		return t.value(n.Alias, path)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			out = append(out, t.value(c, index(path, i)))
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				merges = append(merges, v)
				continue
			}
			key := k.Value
			if k.Kind != yaml.ScalarNode {
				t.p.add(path, "a mapping key is not a plain value (line %d)", k.Line)
				continue
			}
			if _, dup := out[key]; dup {
				t.p.add(join(path, key), "defined twice (line %d)", k.Line)
				continue
			}
			out[key] = t.value(v, join(path, key))
		}
		// A merge key (<<: *base) brings in the keys of the mapping it names that the mapping
		// does not set itself.
		for _, v := range merges {
			if m, ok := t.value(v, path).(map[string]any); ok {
				for mk, mv := range m {
					if _, set := out[mk]; !set {
						out[mk] = mv
					}
				}
			}
		}
		return out
	case yaml.ScalarNode:
		return t.scalar(n, path)
	}
	return nil
}

func (t *tree) scalar(n *yaml.Node, path string) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			t.p.add(path, "%v", err)
			return nil
		}
		switch x := v.(type) {
		case int64:
			return int(x)
		case uint64:
			if x <= math.MaxInt64 {
				return int(x)
			}
			return float64(x)
		}
		return v
	}
	return n.Value
}

// section reads one mapping of the file, remembering which keys were read so that the others
// can be kept.
type section struct {
	p    *problems
	path string
	m    map[string]any
	used map[string]bool
}

func newSection(p *problems, path string, v any) *section {
	s := &section{p: p, path: path, used: map[string]bool{}}
	switch m := v.(type) {
	case map[string]any:
		s.m = m
	case nil:
		s.m = map[string]any{}
	default:
		p.add(path, "expected a mapping, found %s", describe(v))
		s.m = map[string]any{}
	}
	return s
}

func (s *section) at(key string) string { return join(s.path, key) }

// raw returns the value of key and marks it read.
func (s *section) raw(key string) (any, bool) {
	s.used[key] = true
	v, ok := s.m[key]
	return v, ok
}

// has reports whether key is present with a value other than null.
func (s *section) has(key string) bool { return s.m[key] != nil }

// sub reads key as a mapping; absent or null gives an empty one.
func (s *section) sub(key string) *section {
	v, _ := s.raw(key)
	return newSection(s.p, s.at(key), v)
}

// str reads key as text; numbers and booleans are taken as written, null as "".
func (s *section) str(key string) string {
	v, _ := s.raw(key)
	out, ok := scalarText(v)
	if !ok {
		s.p.add(s.at(key), "expected text, found %s", describe(v))
	}
	return out
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// boolean reads key as true or false; null is false, and so is the text "false".
func (s *section) boolean(key string) bool {
	v, _ := s.raw(key)
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		switch strings.ToLower(x) {
		case "true":
			return true
		case "false", "":
			return false
		}
	}
	s.p.add(s.at(key), "expected true or false, found %s", describe(v))
	return false
}

// integer reads key as a whole number; null and "" are 0, numeric text is read.
func (s *section) integer(key string) int {
	v, _ := s.raw(key)
	switch x := v.(type) {
	case nil:
		return 0
	case int:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x)
		}
	case string:
		if strings.TrimSpace(x) == "" {
			return 0
		}
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return n
		}
	}
	s.p.add(s.at(key), "expected a whole number, found %s", describe(v))
	return 0
}

// number reads key as a number; null is nil.
func (s *section) number(key string) *float64 {
	v, _ := s.raw(key)
	var f float64
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		f = float64(x)
	case float64:
		f = x
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			s.p.add(s.at(key), "expected a number, found %s", describe(v))
			return nil
		}
		f = p
	default:
		s.p.add(s.at(key), "expected a number, found %s", describe(v))
		return nil
	}
	return &f
}

// strings reads key as a list of texts; null is nil.
func (s *section) strings(key string) []string {
	list := s.list(key)
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		t, ok := scalarText(e)
		if !ok || e == nil {
			s.p.add(index(s.at(key), i), "expected text, found %s", describe(e))
			continue
		}
		out = append(out, t)
	}
	return out
}

// list reads key as a list; null is nil.
func (s *section) list(key string) []any {
	v, _ := s.raw(key)
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		s.p.add(s.at(key), "expected a list, found %s", describe(v))
		return nil
	}
	return list
}

// mapping reads key as a mapping kept as it is; null is nil.
func (s *section) mapping(key string) map[string]any {
	v, _ := s.raw(key)
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		s.p.add(s.at(key), "expected a mapping, found %s", describe(v))
		return nil
	}
	return m
}

// rest returns the keys not read, or nil when there are none.
func (s *section) rest() map[string]any {
	var out map[string]any
	for k, v := range s.m {
		if s.used[k] {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}

// describe names a value's kind for a message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("the text %q", x)
	case bool:
		return fmt.Sprintf("%t", x)
	case int, float64:
		return fmt.Sprintf("the number %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
