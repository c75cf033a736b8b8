// Package openapi turns the operations of an OpenAPI 3.x or Swagger 2.0 document (JSON or YAML)
// into tools, as Dify's custom API tool providers do: each operation is one tool named by its
// operationId, its parameters are the operation's path, query and header parameters and the
// properties of its JSON request body, and calling it makes the HTTP request with the provider's
// declared credentials.
//
// Parsing never leaves the process: a document is bounded in size and external $refs (other files,
// URLs) are refused; only references inside the document resolve.
package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// MaxDocumentBytes bounds the size of a document New accepts.
const MaxDocumentBytes = 1 << 20

// ErrInvalidDocument: the document is too large, is not an OpenAPI 3.x or Swagger 2.0 document,
// cannot be parsed, refers outside itself, has no server URL, or declares no operation. The
// wrapping error says which.
var ErrInvalidDocument = errors.New("openapi: invalid API document")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidDocument, fmt.Sprintf(format, args...))
}

// operation is one parsed operation: what a tool needs to describe and call it.
type operation struct {
	name        string
	description string
	method      string
	path        string
	params      []param
	// body is how the request body is built: bodyNone, bodyObject (the remaining arguments are the
	// object's properties) or bodyValue (the argument "body" is the whole body).
	body       bodyKind
	schema     json.RawMessage
	required   []string
	serverURLs []string
}

type bodyKind int

const (
	bodyNone bodyKind = iota
	bodyObject
	bodyValue
)

type param struct {
	name     string
	in       string // path, query, header
	required bool
}

// load parses doc into an OpenAPI 3 model, converting Swagger 2.0.
func load(doc []byte) (*openapi3.T, error) {
	if len(doc) > MaxDocumentBytes {
		return nil, invalid("the document is %d bytes, more than the %d allowed", len(doc), MaxDocumentBytes)
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, invalid("the document is empty")
	}
	// YAML is a superset of JSON, so one decoder reads both to find out which version this is.
	var head struct {
		OpenAPI any `yaml:"openapi"`
		Swagger any `yaml:"swagger"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, invalid("neither JSON nor YAML: %v", err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	switch {
	case strings.HasPrefix(fmt.Sprint(head.OpenAPI), "3."):
		t, err := loader.LoadFromData(doc)
		if err != nil {
			return nil, invalid("%v", err)
		}
		return t, nil
	case fmt.Sprint(head.Swagger) == "2.0":
		var generic any
		if err := yaml.Unmarshal(doc, &generic); err != nil {
			return nil, invalid("%v", err)
		}
		js, err := json.Marshal(generic)
		if err != nil {
			return nil, invalid("the document does not convert to JSON: %v", err)
		}
		var t2 openapi2.T
		if err := json.Unmarshal(js, &t2); err != nil {
			return nil, invalid("%v", err)
		}
		t, err := openapi2conv.ToV3WithLoader(&t2, loader, nil)
		if err != nil {
			return nil, invalid("%v", err)
		}
		return t, nil
	default:
		return nil, invalid(`not an OpenAPI 3.x or Swagger 2.0 document (no "openapi: 3.x" or "swagger: 2.0" field)`)
	}
}

var methods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// operations lists the document's operations in path order, then method order.
func operations(t *openapi3.T) ([]operation, error) {
	if t.Paths == nil || t.Paths.Len() == 0 {
		return nil, invalid("the document has no paths")
	}
	docServers := serverURLs(t.Servers)
	var ops []operation
	seen := map[string]string{}
	paths := t.Paths.Map()
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, path := range keys {
		item := paths[path]
		if item == nil {
			continue
		}
		for _, m := range methods {
			op := item.GetOperation(strings.ToUpper(m))
			if op == nil {
				continue
			}
			o, err := buildOperation(path, m, item, op)
			if err != nil {
				return nil, err
			}
			o.serverURLs = docServers
			if s := serverURLs(item.Servers); len(s) > 0 {
				o.serverURLs = s
			}
			if op.Servers != nil {
				if s := serverURLs(*op.Servers); len(s) > 0 {
					o.serverURLs = s
				}
			}
			if prev, dup := seen[o.name]; dup {
				return nil, invalid("operations %s and %s %s have the same name %q", prev, strings.ToUpper(m), path, o.name)
			}
			seen[o.name] = strings.ToUpper(m) + " " + path
			ops = append(ops, o)
		}
	}
	if len(ops) == 0 {
		return nil, invalid("the document declares no operation")
	}
	return ops, nil
}

func serverURLs(servers openapi3.Servers) []string {
	var out []string
	for _, s := range servers {
		if s == nil || s.URL == "" {
			continue
		}
		u := s.URL
		// Server variables take their defaults.
		for name, v := range s.Variables {
			if v != nil {
				u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
			}
		}
		out = append(out, u)
	}
	return out
}

// operationName is the operationId, or, as Dify does when it is missing, the path without its
// leading slash and without characters outside [a-zA-Z0-9_-], then "_" and the lower-case method.
// Where nothing of the path is left (the root path), the name is the method alone rather than
// Dify's random prefix, so that a tool keeps its name across restarts.
func operationName(path, method, operationID string) string {
	if operationID != "" {
		return operationID
	}
	p := unsafeName.ReplaceAllString(strings.TrimPrefix(path, "/"), "")
	if p == "" {
		return method
	}
	return p + "_" + method
}

func buildOperation(path, method string, item *openapi3.PathItem, op *openapi3.Operation) (operation, error) {
	o := operation{
		name:   operationName(path, method, op.OperationID),
		method: strings.ToUpper(method),
		path:   path,
	}
	// Like Dify, the description wins over the summary.
	o.description = op.Description
	if o.description == "" {
		o.description = op.Summary
	}
	props := map[string]any{}
	var order []string
	var required []string
	add := func(name string, schema map[string]any, req bool) {
		if _, dup := props[name]; dup {
			return
		}
		props[name] = schema
		order = append(order, name)
		if req {
			required = append(required, name)
		}
	}
	// Operation parameters override path-item parameters of the same name and location.
	all := map[string]*openapi3.Parameter{}
	var allOrder []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			p := ref.Value
			key := p.In + " " + p.Name
			if _, ok := all[key]; !ok {
				allOrder = append(allOrder, key)
			}
			all[key] = p
		}
	}
	for _, key := range allOrder {
		p := all[key]
		switch p.In {
		case openapi3.ParameterInPath, openapi3.ParameterInQuery, openapi3.ParameterInHeader:
		default:
			continue // cookie parameters are not offered to the model
		}
		req := p.Required || p.In == openapi3.ParameterInPath
		s := map[string]any{"type": "string"}
		if p.Schema != nil && p.Schema.Value != nil {
			s = schemaJSON(p.Schema.Value, 0)
		}
		if p.Description != "" {
			s["description"] = p.Description
		}
		if _, dup := props[p.Name]; dup {
			continue
		}
		o.params = append(o.params, param{name: p.Name, in: p.In, required: req})
		add(p.Name, s, req)
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		rb := op.RequestBody.Value
		if mt := jsonMediaType(rb.Content); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
			bs := mt.Schema.Value
			if bs.Type.Is(openapi3.TypeObject) || (bs.Type == nil && len(bs.Properties) > 0) {
				o.body = bodyObject
				names := make([]string, 0, len(bs.Properties))
				for n := range bs.Properties {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					ps := map[string]any{}
					if r := bs.Properties[n]; r != nil && r.Value != nil {
						ps = schemaJSON(r.Value, 0)
					}
					add(n, ps, rb.Required && contains(bs.Required, n))
				}
			} else {
				o.body = bodyValue
				s := schemaJSON(bs, 0)
				if rb.Description != "" {
					s["description"] = rb.Description
				}
				add("body", s, rb.Required)
			}
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return operation{}, invalid("%s %s: parameters do not encode: %v", o.method, path, err)
	}
	o.schema = raw
	o.required = required
	return o, nil
}

func jsonMediaType(content openapi3.Content) *openapi3.MediaType {
	if mt := content.Get("application/json"); mt != nil {
		return mt
	}
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasSuffix(strings.SplitN(k, ";", 2)[0], "json") {
			return content[k]
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxSchemaDepth bounds how deep a schema is copied for the model; recursive schemas stop there.
const maxSchemaDepth = 6

// schemaJSON copies the parts of a schema a model uses: type, description, enum, format, default,
// items, properties and required.
func schemaJSON(s *openapi3.Schema, depth int) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	if s.Type != nil && len(*s.Type) == 1 {
		out["type"] = (*s.Type)[0]
	} else if s.Type != nil && len(*s.Type) > 1 {
		out["type"] = []string(*s.Type)
	}
	if s.Description != "" {
		out["description"] = s.Description
	} else if s.Title != "" {
		out["description"] = s.Title
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.Default != nil {
		out["default"] = s.Default
	}
	if depth >= maxSchemaDepth {
		return out
	}
	if s.Items != nil && s.Items.Value != nil {
		out["items"] = schemaJSON(s.Items.Value, depth+1)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for n, r := range s.Properties {
			if r != nil && r.Value != nil {
				props[n] = schemaJSON(r.Value, depth+1)
			}
		}
		out["properties"] = props
		if len(s.Required) > 0 {
			out["required"] = s.Required
		}
	}
	return out
}

// joinURL appends an operation path to a server URL.
func joinURL(server, path string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(server, "/") + path)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q is not http or https", server)
	}
	return u, nil
}
