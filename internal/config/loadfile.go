package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/configs"
)

// FieldError is one problem in the configuration file. Path locates the
// value in YAML terms, e.g. "providers[0].models[2].pricing.input".
type FieldError struct {
	// Path is the dotted path of the offending value; empty for the
	// document itself.
	Path string
	// Message says what is wrong.
	Message string
}

// Error implements error as "path: message".
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// LoadFile reads and parses the configuration file at path. An empty path
// selects the sample embedded from configs/parley.yaml. Errors are prefixed
// with the file name.
func LoadFile(path string, getenv func(string) string) (*File, error) {
	if path == "" {
		f, err := ParseFile(configs.Sample, getenv)
		if err != nil {
			return nil, fmt.Errorf("embedded sample config: %w", err)
		}
		return f, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	f, err := ParseFile(data, getenv)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return f, nil
}

// ParseFile parses a YAML configuration document:
//
//  1. the YAML is parsed (one document; duplicate keys are errors);
//  2. ${VAR} and ${VAR:-default} are expanded through getenv in string
//     scalars only (never in keys, numbers or booleans), so expanded values
//     are never re-parsed as YAML and may hold any character; $$ is a
//     literal dollar and a $ followed by anything else is kept as is;
//  3. unknown keys and values of the wrong kind are reported with their
//     path;
//  4. defaults are applied and the whole file is validated, including
//     references from apps and knowledge bases to providers and models.
//
// All problems found in a step are returned together, joined.
func ParseFile(data []byte, getenv func(string) string) (*File, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	f := &File{}
	switch err := dec.Decode(&root); {
	case errors.Is(err, io.EOF):
		// An empty file is an empty workspace.
	case err != nil:
		return nil, err
	default:
		var extra yaml.Node
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, errors.New("the file must hold exactly one YAML document")
		}
		doc := &root
		if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
			doc = doc.Content[0]
		}
		var errs []error
		expandNode(doc, getenv, "", &errs)
		checkNode(doc, reflect.TypeFor[File](), "", &errs)
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		if err := doc.Decode(f); err != nil {
			return nil, err
		}
	}
	if err := f.normalize(); err != nil {
		return nil, err
	}
	return f, nil
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func addErr(errs *[]error, path, format string, args ...any) {
	*errs = append(*errs, &FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// expandNode expands variables in every string scalar value below n. Alias
// nodes are not followed: their anchor is expanded where it is defined, and
// following them would expand it twice (turning "$${X}" into X's value).
func expandNode(n *yaml.Node, getenv func(string) string, path string, errs *[]error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" {
			return
		}
		v, err := expandString(n.Value, getenv)
		if err != nil {
			addErr(errs, path, "%v (line %d)", err, n.Line)
			return
		}
		n.Value = v
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, getenv, indexPath(path, i), errs)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandNode(n.Content[i+1], getenv, joinPath(path, n.Content[i].Value), errs)
		}
	}
}

// expandString replaces ${VAR} with getenv(VAR) and ${VAR:-default} with
// the default when VAR is unset or empty. "$$" yields "$". The result is
// not expanded again, and a default cannot contain "}".
func expandString(s string, getenv func(string) string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", errors.New(`unterminated "${"`)
			}
			name, def, hasDef := strings.Cut(s[i+2:i+2+end], ":-")
			if !validEnvName(name) {
				return "", fmt.Errorf("invalid variable name %q in ${...}", name)
			}
			v := getenv(name)
			if v == "" && hasDef {
				v = def
			}
			b.WriteString(v)
			i += end + 3
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// checkNode compares the node tree with the Go type it will be decoded
// into. It reports unknown mapping keys (what yaml.v3's KnownFields does,
// which node decoding cannot do) and scalars of the wrong kind, naming the
// path so that typos are easy to find.
func checkNode(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	custom := reflect.PointerTo(t).Implements(unmarshalerType)
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			addErr(errs, path, "expected a mapping (line %d)", n.Line)
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				checkMerge(v, t, path, errs)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				addErr(errs, joinPath(path, k.Value), "unknown key (line %d)", k.Line)
				continue
			}
			checkNode(v, ft, joinPath(path, k.Value), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			if custom && n.Kind == yaml.ScalarNode {
				return
			}
			addErr(errs, path, "expected a mapping (line %d)", n.Line)
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				addErr(errs, path, "keys must be scalars (line %d)", k.Line)
				continue
			}
			checkNode(n.Content[i+1], t.Elem(), joinPath(path, k.Value), errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			addErr(errs, path, "expected a list (line %d)", n.Line)
			return
		}
		for i, c := range n.Content {
			checkNode(c, t.Elem(), indexPath(path, i), errs)
		}
	case reflect.Interface:
		// Free-form (model parameters): anything goes.
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			addErr(errs, path, "expected a string (line %d)", n.Line)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			addErr(errs, path, "expected true or false (line %d)", n.Line)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t == durationType {
			if _, err := time.ParseDuration(n.Value); n.Kind != yaml.ScalarNode || err != nil {
				addErr(errs, path, `expected a duration such as "60s" or "2m" (line %d)`, n.Line)
			}
			return
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			addErr(errs, path, "expected an integer (line %d)", n.Line)
		}
	}
}

// checkMerge checks the target of a "<<" merge key, a mapping or a list of
// mappings, against the struct type it merges into.
func checkMerge(v *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind == yaml.SequenceNode {
		for _, c := range v.Content {
			checkNode(c, t, path, errs)
		}
		return
	}
	checkNode(v, t, path, errs)
}

// yamlFields maps the YAML keys of a struct to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}
