package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// A JSON body is read twice: by the request validator (into a map, where the last of two equal
// member names wins, and where an undeclared member is ignored) and by what binds it into Go
// types (encoding/json, which matches member names case-insensitively, here or when the
// knowledge service re-reads a retrieval model or a process rule). Any text the two could read
// differently is a way past the validator, so such a body is refused before it is validated, in
// one place: the body decoder the validator uses for application/json (see init), which scans
// the body once, alongside its schema, before kin-openapi decodes it, and refuses:
//   - a member name given twice in one object, at any depth (400 invalid_param);
//   - in an object with declared members, an undeclared member whose name differs from a
//     declared one only in case (400 invalid_param): the validator would ignore it and
//     encoding/json would bind it. Objects without declared members (`inputs`) keep their
//     names as they are: there, "Name" and "name" are two variables;
//   - anything after the top-level value, and nesting deeper than encoding/json accepts
//     (400 bad_request, as malformed JSON; Dify's json.loads refuses both too).
//
// The scan is a small hand-written tokenizer rather than json.Decoder.Token, which allocates for
// every token and cost more than the validation it guards; it allocates only for member names
// with escapes and for objects of more than a few members. It checks the grammar as it goes,
// so that it finds the end of each value where encoding/json does.

// maxJSONDepth is encoding/json's own nesting limit.
const maxJSONDepth = 10000

// jsonMemberError is a member name the scan refuses: given twice, or a case variant of a
// declared one.
type jsonMemberError struct {
	key, where string
	declared   string   // the declared name key is a case variant of; "" for a duplicate
	rpath      []string // where, innermost first, while the scan unwinds
}

func (e *jsonMemberError) Error() string {
	var msg string
	if e.declared == "" {
		msg = fmt.Sprintf("duplicate key %q", e.key)
	} else {
		msg = fmt.Sprintf("unknown member %q; member names are case-sensitive (did you mean %q?)", e.key, e.declared)
	}
	if e.where == "" {
		return msg + " in the JSON body"
	}
	return e.where + ": " + msg
}

// errJSONSyntax is a body that is not exactly one JSON value.
var errJSONSyntax = errors.New("malformed JSON")

// objectShape is what the scan needs of an object schema: its declared members, allOf merged.
type objectShape struct {
	props map[string]*openapi3.Schema
	names [][]byte
}

var shapes sync.Map // *openapi3.Schema → *objectShape

func shapeOf(s *openapi3.Schema) *objectShape {
	if v, ok := shapes.Load(s); ok {
		return v.(*objectShape)
	}
	sh := &objectShape{props: map[string]*openapi3.Schema{}}
	var merge func(s *openapi3.Schema)
	merge = func(s *openapi3.Schema) {
		for name, ref := range s.Properties {
			if _, ok := sh.props[name]; !ok && ref != nil {
				sh.props[name] = ref.Value
				sh.names = append(sh.names, []byte(name))
			}
		}
		for _, ref := range s.AllOf {
			if ref != nil && ref.Value != nil {
				merge(ref.Value)
			}
		}
	}
	merge(s)
	v, _ := shapes.LoadOrStore(s, sh)
	return v.(*objectShape)
}

// jsonScan is the state of one scan.
type jsonScan struct {
	data []byte
	i    int
	keys [][]byte // member names of the open objects, each object's after its parent's
}

// scanJSON checks that data is exactly one JSON value in which no object repeats a member name
// or has a case variant of a member its schema s (which may be nil) declares. It returns a
// *jsonMemberError, or an error wrapping errJSONSyntax.
func scanJSON(data []byte, s *openapi3.Schema) error {
	sc := jsonScan{data: data}
	sc.space()
	err := sc.value(s, 0)
	if err == nil {
		sc.space()
		if sc.i < len(sc.data) {
			err = sc.syntax("data after the top-level value")
		}
	}
	var me *jsonMemberError
	if errors.As(err, &me) {
		slices.Reverse(me.rpath)
		me.where = strings.Join(me.rpath, ".")
	}
	return err
}

func (sc *jsonScan) syntax(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errJSONSyntax, what, sc.i)
}

func (sc *jsonScan) space() {
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *jsonScan) value(s *openapi3.Schema, depth int) error {
	if sc.i >= len(sc.data) {
		return sc.syntax("unexpected end of input")
	}
	switch c := sc.data[sc.i]; {
	case c == '{':
		return sc.object(s, depth+1)
	case c == '[':
		return sc.array(s, depth+1)
	case c == '"':
		_, _, err := sc.str()
		return err
	case c == 't':
		return sc.literal("true")
	case c == 'f':
		return sc.literal("false")
	case c == 'n':
		return sc.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number()
	}
	return sc.syntax("invalid character")
}

func (sc *jsonScan) object(s *openapi3.Schema, depth int) error {
	if depth > maxJSONDepth {
		return sc.syntax("nested too deeply")
	}
	var shape *objectShape
	if s != nil {
		if sh := shapeOf(s); len(sh.names) > 0 {
			shape = sh
		}
	}
	sc.i++ // {
	base := len(sc.keys)
	defer func() { sc.keys = sc.keys[:base] }()
	var set map[string]struct{}
	sc.space()
	if sc.i < len(sc.data) && sc.data[sc.i] == '}' {
		sc.i++
		return nil
	}
	for {
		sc.space()
		if sc.i >= len(sc.data) || sc.data[sc.i] != '"' {
			return sc.syntax("expected a member name")
		}
		raw, escaped, err := sc.str()
		if err != nil {
			return err
		}
		key := raw[1 : len(raw)-1]
		if escaped {
			var k string
			if err := json.Unmarshal(raw, &k); err != nil {
				return sc.syntax("invalid member name")
			}
			key = []byte(k)
		}
		dup := false
		if set != nil {
			_, dup = set[string(key)]
			set[string(key)] = struct{}{}
		} else {
			for _, k := range sc.keys[base:] {
				if bytes.Equal(k, key) {
					dup = true
					break
				}
			}
			sc.keys = append(sc.keys, key)
			if len(sc.keys)-base > 16 {
				set = make(map[string]struct{}, 64)
				for _, k := range sc.keys[base:] {
					set[string(k)] = struct{}{}
				}
			}
		}
		if dup {
			return &jsonMemberError{key: string(key)}
		}
		var member *openapi3.Schema
		if shape != nil {
			if ps, ok := shape.props[string(key)]; ok {
				member = ps
			} else {
				for _, name := range shape.names {
					if bytes.EqualFold(name, key) {
						return &jsonMemberError{key: string(key), declared: string(name)}
					}
				}
			}
		}
		sc.space()
		if sc.i >= len(sc.data) || sc.data[sc.i] != ':' {
			return sc.syntax("expected ':'")
		}
		sc.i++
		sc.space()
		if err := sc.value(member, depth); err != nil {
			return inMember(err, string(key))
		}
		if done, err := sc.separator('}'); done || err != nil {
			return err
		}
	}
}

// separator consumes, after an element, the ',' before the next one or the closing byte of the
// object or array; done reports the closing byte.
func (sc *jsonScan) separator(closing byte) (done bool, err error) {
	sc.space()
	if sc.i >= len(sc.data) {
		return false, sc.syntax("unexpected end of input")
	}
	switch sc.data[sc.i] {
	case ',':
		sc.i++
		return false, nil
	case closing:
		sc.i++
		return true, nil
	}
	return false, sc.syntax("expected ',' or '" + string(closing) + "'")
}

func (sc *jsonScan) array(s *openapi3.Schema, depth int) error {
	if depth > maxJSONDepth {
		return sc.syntax("nested too deeply")
	}
	var items *openapi3.Schema
	if s != nil && s.Items != nil {
		items = s.Items.Value
	}
	sc.i++ // [
	sc.space()
	if sc.i < len(sc.data) && sc.data[sc.i] == ']' {
		sc.i++
		return nil
	}
	for n := 0; ; n++ {
		sc.space()
		if err := sc.value(items, depth); err != nil {
			return inMember(err, strconv.Itoa(n))
		}
		if done, err := sc.separator(']'); done || err != nil {
			return err
		}
	}
}

// inMember records, on a member error, the name of the member or index it was found under.
func inMember(err error, name string) error {
	if me, ok := err.(*jsonMemberError); ok {
		me.rpath = append(me.rpath, name)
	}
	return err
}

// str reads a string, quotes included, and reports whether it has escapes.
func (sc *jsonScan) str() (raw []byte, escaped bool, err error) {
	start := sc.i
	sc.i++ // "
	for sc.i < len(sc.data) {
		switch c := sc.data[sc.i]; {
		case c == '"':
			sc.i++
			return sc.data[start:sc.i], escaped, nil
		case c == '\\':
			escaped = true
			if sc.i+1 >= len(sc.data) {
				return nil, false, sc.syntax("unexpected end of input")
			}
			switch sc.data[sc.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				sc.i += 2
			case 'u':
				if sc.i+6 > len(sc.data) || !isHex4(sc.data[sc.i+2:sc.i+6]) {
					return nil, false, sc.syntax("invalid escape")
				}
				sc.i += 6
			default:
				return nil, false, sc.syntax("invalid escape")
			}
		case c < 0x20:
			return nil, false, sc.syntax("control character in a string")
		default:
			sc.i++
		}
	}
	return nil, false, sc.syntax("unexpected end of input")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func (sc *jsonScan) literal(word string) error {
	if !bytes.HasPrefix(sc.data[sc.i:], []byte(word)) {
		return sc.syntax("invalid literal")
	}
	sc.i += len(word)
	return nil
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (sc *jsonScan) number() error {
	digits := func() int {
		n := 0
		for sc.i < len(sc.data) && sc.data[sc.i] >= '0' && sc.data[sc.i] <= '9' {
			sc.i++
			n++
		}
		return n
	}
	if sc.data[sc.i] == '-' {
		sc.i++
	}
	switch {
	case sc.i < len(sc.data) && sc.data[sc.i] == '0':
		sc.i++
	case digits() == 0:
		return sc.syntax("invalid number")
	}
	if sc.i < len(sc.data) && sc.data[sc.i] == '.' {
		sc.i++
		if digits() == 0 {
			return sc.syntax("invalid number")
		}
	}
	if sc.i < len(sc.data) && (sc.data[sc.i] == 'e' || sc.data[sc.i] == 'E') {
		sc.i++
		if sc.i < len(sc.data) && (sc.data[sc.i] == '+' || sc.data[sc.i] == '-') {
			sc.i++
		}
		if digits() == 0 {
			return sc.syntax("invalid number")
		}
	}
	return nil
}

// requestSchemas holds the schemas of the contract's JSON request bodies: the decoder below also
// decodes the responses the response validator checks, which it leaves to kin-openapi alone.
var requestSchemas sync.Map // *openapi3.SchemaRef → struct{}

// registerRequestSchemas records doc's JSON request body schemas for jsonBodyDecoder.
func registerRequestSchemas(doc *openapi3.T) {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			if mt := op.RequestBody.Value.Content.Get(echo.MIMEApplicationJSON); mt != nil && mt.Schema != nil {
				requestSchemas.Store(mt.Schema, struct{}{})
			}
		}
	}
}

// jsonBodyDecoder is kin-openapi's JSON decoder, behind scanJSON for request bodies.
func jsonBodyDecoder(body io.Reader, h http.Header, schema *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
	if _, isRequest := requestSchemas.Load(schema); !isRequest {
		return openapi3filter.JSONBodyDecoder(body, h, schema, enc)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	if err := scanJSON(data, schema.Value); err != nil {
		var me *jsonMemberError
		if errors.As(err, &me) {
			return nil, me
		}
		return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err}
	}
	return openapi3filter.JSONBodyDecoder(bytes.NewReader(data), h, schema, enc)
}

func init() {
	openapi3filter.RegisterBodyDecoder(echo.MIMEApplicationJSON, jsonBodyDecoder)
}

// Text that PostgreSQL cannot store (a NUL character, invalid UTF-8) fails there and nowhere
// else, so it is refused at the edge on every engine: in the path, the query, the validated
// JSON body and the text parts of a form.

// errNotStorable names where text holds a NUL character or invalid UTF-8.
func errNotStorable(where string) *APIError {
	if where == "" {
		return errInvalidParam("NUL characters and invalid UTF-8 are not allowed in the request.")
	}
	return errInvalidParam(where + ": NUL characters and invalid UTF-8 are not allowed.")
}

// storable reports whether s can be stored as text.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// unstorable returns the path of the first string in a decoded JSON value that is not
// storable (for a member name, the path of its object: the name itself is not repeated back),
// and whether there is one.
func unstorable(v any, path string) (string, bool) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case string:
		return path, !storable(x)
	case map[string]any:
		for k, val := range x {
			if !storable(k) {
				return path, true
			}
			if p, bad := unstorable(val, join(k)); bad {
				return p, true
			}
		}
	case []any:
		for i, val := range x {
			if p, bad := unstorable(val, join(strconv.Itoa(i))); bad {
				return p, true
			}
		}
	}
	return "", false
}

// storableText refuses a request whose path, query or validated JSON body holds text that
// cannot be stored: 400 invalid_param, or for the path 404 not_found (no stored resource has
// such a name) where the operation has a 404. Elsewhere (stopping a task, whose ids are not
// stored and an unknown one is ignored) the path is let through. It runs after the request
// validator, which leaves the validated body on the request.
func storableText(doc *openapi3.T, basePath string) echo.MiddlewareFunc {
	has404 := map[string]bool{} // "METHOD /v1/echo/:path"
	for tmpl, item := range doc.Paths.Map() {
		route := basePath + strings.NewReplacer("{", ":", "}", "").Replace(tmpl)
		for method, op := range item.Operations() {
			has404[method+" "+route] = op.Responses.Value(strconv.Itoa(http.StatusNotFound)) != nil
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if !storable(r.URL.Path) && has404[r.Method+" "+c.Path()] {
				return apiError(http.StatusNotFound, "not_found", msgNotFoundURL)
			}
			if r.URL.RawQuery != "" {
				for k, vs := range r.URL.Query() {
					if !storable(k) {
						return errNotStorable("")
					}
					for _, v := range vs {
						if !storable(v) {
							return errNotStorable(k)
						}
					}
				}
			}
			if vb, ok := r.Body.(interface{ ValidatedValue() any }); ok {
				if where, bad := unstorable(vb.ValidatedValue(), ""); bad {
					return errNotStorable(where)
				}
			}
			return next(c)
		}
	}
}
