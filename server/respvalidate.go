package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/internal/sse"
)

// ValidationMode says what the response validator does with a response that breaks the contract.
type ValidationMode string

// Validation modes.
const (
	// ValidationEnforce replaces a violating JSON response with a 500 and a violating SSE event
	// with an `error` event that ends the stream; tests and CI run in this mode.
	ValidationEnforce ValidationMode = "enforce"
	// ValidationLog logs violations and lets the response through unchanged.
	ValidationLog ValidationMode = "log"
	// ValidationOff skips response validation.
	ValidationOff ValidationMode = "off"
)

// ParseValidationMode parses enforce, log or off.
func ParseValidationMode(s string) (ValidationMode, error) {
	switch m := ValidationMode(s); m {
	case ValidationEnforce, ValidationLog, ValidationOff:
		return m, nil
	}
	return "", fmt.Errorf("response validation mode %q: want enforce, log or off", s)
}

// ErrStreamViolation is returned to an SSE producer whose event broke the contract in enforce
// mode; the stream has been ended with an `error` event.
var ErrStreamViolation = errors.New("stream event violates the contract")

// ResponseValidator checks every response against api/openapi.yaml: JSON bodies whole, and
// event streams event by event as they pass, without buffering the stream.
type ResponseValidator struct {
	router    routers.Router
	mode      ValidationMode
	log       *slog.Logger
	errSchema *openapi3.Schema
	// dialectSchemas are the error bodies of the error dialects, by schema name (errdialect.go).
	dialectSchemas map[string]*openapi3.Schema
	events         map[string]*streamSchemas // operation id → its stream's events
	violations     atomic.Int64
}

// NewResponseValidator builds a validator over doc, whose servers must already be relative to
// where the API is mounted.
func NewResponseValidator(doc *openapi3.T, router routers.Router, mode ValidationMode, log *slog.Logger) (*ResponseValidator, error) {
	v := &ResponseValidator{router: router, mode: mode, log: log, events: map[string]*streamSchemas{}}
	ref := doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		return nil, errors.New("response validator: the contract has no Error schema")
	}
	v.errSchema = ref.Value
	v.dialectSchemas = map[string]*openapi3.Schema{}
	for _, d := range errorDialects {
		ref = doc.Components.Schemas[d.schema]
		if ref == nil || ref.Value == nil {
			return nil, fmt.Errorf("response validator: the contract has no %s schema", d.schema)
		}
		v.dialectSchemas[d.schema] = ref.Value
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				if resp.Value == nil {
					continue
				}
				// Looked up by exact name: Content.Get would match a `*/*` response (a file) too.
				mt := resp.Value.Content["text/event-stream"]
				if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
					continue
				}
				byEvent, err := eventSchemas(mt.Schema.Value, doc)
				if err != nil {
					return nil, fmt.Errorf("response validator: %s: %w", op.OperationID, err)
				}
				// A stream may end with a sentinel data line (OpenAI's `[DONE]`).
				byEvent.done, _ = mt.Extensions["x-stream-done"].(string)
				v.events[op.OperationID] = byEvent
			}
		}
	}
	return v, nil
}

// streamSchemas are the events of an operation's stream: a schema per event name, the name
// given by the member the discriminator names (Dify's `event`, OpenAI's Responses `type`); or,
// for a stream whose events have no name (OpenAI's chat chunks), one schema for all. done is the
// data line that ends the stream, if it has one.
type streamSchemas struct {
	prop   string
	byName map[string]*openapi3.Schema
	any    *openapi3.Schema
	// branches are the branches of any when it is a oneOf of object schemas: an event is checked
	// against the first whose required members it has (as a named event against its own), not
	// against every branch.
	branches []*openapi3.Schema
	done     string
}

// branchFor is the schema an unnamed event is checked against.
func (ss *streamSchemas) branchFor(doc any) *openapi3.Schema {
	if obj, ok := doc.(map[string]any); ok {
	branches:
		for _, b := range ss.branches {
			for _, r := range b.Required {
				if _, has := obj[r]; !has {
					continue branches
				}
			}
			return b
		}
	}
	return ss.any
}

// eventSchemas resolves the discriminator mapping of an event-stream schema to the schema of
// each event name, so an event is checked against its own branch only.
func eventSchemas(s *openapi3.Schema, doc *openapi3.T) (*streamSchemas, error) {
	if s.Discriminator == nil {
		// One schema for every event (OpenAI's chunks, which carry no event name).
		ss := &streamSchemas{any: flattenAllOf(s)}
		for _, b := range s.OneOf {
			if b.Value == nil || len(b.Value.Required) == 0 {
				ss.branches = nil
				break
			}
			ss.branches = append(ss.branches, flattenAllOf(b.Value))
		}
		return ss, nil
	}
	out := &streamSchemas{prop: s.Discriminator.PropertyName, byName: make(map[string]*openapi3.Schema, len(s.Discriminator.Mapping))}
	for name, ref := range s.Discriminator.Mapping {
		const prefix = "#/components/schemas/"
		target, ok := strings.CutPrefix(ref.Ref, prefix)
		if !ok {
			return nil, fmt.Errorf("event %q: unsupported mapping %q", name, ref.Ref)
		}
		sr := doc.Components.Schemas[target]
		if sr == nil || sr.Value == nil {
			return nil, fmt.Errorf("event %q: no schema %q", name, target)
		}
		out.byName[name] = flattenAllOf(sr.Value)
	}
	return out, nil
}

// flattenAllOf returns a schema that accepts exactly what s accepts, with every allOf of plain
// object schemas (the envelope + payload pattern of the events) merged into one object schema.
// kin-openapi validates an allOf by visiting each branch separately, which made it most of the
// cost of checking an event; the merged form is checked in one pass. Anything that is not a
// plain merge (oneOf, anyOf, not, closed or typed additionalProperties, a property defined twice)
// is left as it is.
func flattenAllOf(s *openapi3.Schema) *openapi3.Schema {
	if s == nil {
		return nil
	}
	out := *s
	if len(s.AllOf) > 0 {
		if merged, ok := mergeObjects(s); ok {
			out = *merged
		}
	}
	if out.Properties != nil {
		props := make(openapi3.Schemas, len(out.Properties))
		for k, ref := range out.Properties {
			props[k] = &openapi3.SchemaRef{Value: flattenAllOf(ref.Value)}
		}
		out.Properties = props
	}
	if out.Items != nil {
		out.Items = &openapi3.SchemaRef{Value: flattenAllOf(out.Items.Value)}
	}
	return &out
}

func mergeObjects(s *openapi3.Schema) (*openapi3.Schema, bool) {
	parts := []*openapi3.Schema{s}
	for _, ref := range s.AllOf {
		if ref.Value == nil {
			return nil, false
		}
		sub := flattenAllOf(ref.Value)
		if len(sub.AllOf) > 0 || sub.Nullable {
			return nil, false
		}
		parts = append(parts, sub)
	}
	merged := *s
	merged.AllOf = nil
	merged.Type = &openapi3.Types{openapi3.TypeObject}
	merged.Properties = openapi3.Schemas{}
	merged.Required = nil
	for _, p := range parts {
		if len(p.OneOf) > 0 || len(p.AnyOf) > 0 || p.Not != nil || p.Discriminator != nil ||
			(p.Type != nil && !p.Type.Is(openapi3.TypeObject)) ||
			p.AdditionalProperties.Schema != nil ||
			(p.AdditionalProperties.Has != nil && !*p.AdditionalProperties.Has) {
			return nil, false
		}
		for k, v := range p.Properties {
			if _, dup := merged.Properties[k]; dup {
				return nil, false
			}
			merged.Properties[k] = v
		}
		merged.Required = append(merged.Required, p.Required...)
	}
	merged.AdditionalProperties = openapi3.AdditionalProperties{}
	return &merged, true
}

// Violations counts the responses and events that broke the contract since start.
func (v *ResponseValidator) Violations() int64 { return v.violations.Load() }

// Middleware validates the responses of the handlers it wraps. It must sit outside the request
// validator so that error bodies produced there are checked as well.
func (v *ResponseValidator) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if v.mode == ValidationOff {
			return next
		}
		return func(c echo.Context) error {
			req := c.Request()
			route, params, rerr := v.router.FindRoute(req)
			if rerr != nil {
				route = nil
			}
			orig := c.Response().Writer
			cw := &captureWriter{ResponseWriter: orig, v: v, req: req, route: route, params: params}
			c.Response().Writer = cw
			defer func() { c.Response().Writer = orig }()

			if err := next(c); err != nil {
				c.Error(err)
			}
			if cw.stream != nil || cw.passthrough {
				return nil
			}
			cw.finish()
			return nil
		}
	}
}

func (v *ResponseValidator) violation(req *http.Request, what string, err error) {
	v.violations.Add(1)
	v.log.ErrorContext(req.Context(), "response violates the contract",
		slog.Group("request", "method", req.Method, "path", req.URL.Path),
		"what", what, "error", err)
}

// captureWriter buffers a JSON response until the handler is done, or passes an event stream
// through frame by frame while validating each event.
type captureWriter struct {
	http.ResponseWriter
	v      *ResponseValidator
	req    *http.Request
	route  *routers.Route
	params map[string]string

	status      int
	wroteHeader bool
	buf         bytes.Buffer
	stream      *sseChecker
	// passthrough: a successful binary body (a file, an archive), sent as it is written once its
	// status and headers are checked; only JSON bodies are buffered and validated whole.
	passthrough bool
}

func (w *captureWriter) WriteHeader(status int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	w.status = status
	ct := w.Header().Get(echo.HeaderContentType)
	switch {
	case isEventStream(ct):
		w.startStream()
	case status < 300 && ct != "" && !isJSON(ct):
		w.startPassthrough()
	}
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json")
}

// startPassthrough checks the status and headers of a binary response and lets its body
// through unbuffered.
func (w *captureWriter) startPassthrough() {
	if w.route != nil {
		in := w.responseInput(nil)
		in.Options.ExcludeResponseBody = true
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			w.v.violation(w.req, "response "+strconv.Itoa(w.status)+" status/headers", err)
		}
	}
	w.passthrough = true
	w.ResponseWriter.WriteHeader(w.status)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.stream != nil {
		return w.stream.write(p)
	}
	if w.passthrough {
		return w.ResponseWriter.Write(p)
	}
	return w.buf.Write(p)
}

// Flush forwards to the real writer while streaming; a buffered response is flushed at the end.
func (w *captureWriter) Flush() {
	if w.stream != nil || w.passthrough {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines, hijack).
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack is not supported through the validator.
func (w *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("hijack not supported")
}

func (w *captureWriter) startStream() {
	opID := ""
	if w.route != nil && w.route.Operation != nil {
		opID = w.route.Operation.OperationID
	}
	schemas := w.v.events[opID]
	if w.route != nil {
		in := w.responseInput(nil)
		in.Options.ExcludeResponseBody = true
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			w.v.violation(w.req, "stream status/headers", err)
		}
	}
	if schemas == nil {
		w.v.violation(w.req, "stream", fmt.Errorf("operation %q declares no event stream", opID))
	}
	w.ResponseWriter.WriteHeader(w.status)
	w.stream = &sseChecker{w: w.ResponseWriter, v: w.v, req: w.req, schemas: schemas}
}

func (w *captureWriter) responseInput(body []byte) *openapi3filter.ResponseValidationInput {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: w.req, PathParams: w.params, Route: w.route,
		},
		Status:  w.status,
		Header:  w.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if body != nil {
		in.SetBodyBytes(body)
	}
	return in
}

// finish validates the buffered response and sends it, or its replacement.
func (w *captureWriter) finish() {
	if !w.wroteHeader {
		// Nothing was written at all; let the server send its default.
		return
	}
	body := w.buf.Bytes()
	if err := w.validate(body); err != nil {
		w.v.violation(w.req, "response "+strconv.Itoa(w.status), err)
		if w.v.mode == ValidationEnforce {
			w.status, body = errContractViolation(err).render(w.req)
			h := w.Header()
			h.Del(echo.HeaderWWWAuthenticate)
			h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		}
	}
	w.Header().Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	w.ResponseWriter.WriteHeader(w.status)
	if w.req.Method != http.MethodHead {
		_, _ = w.ResponseWriter.Write(body)
	}
}

func (w *captureWriter) validate(body []byte) error {
	if w.req.Method == http.MethodHead && len(body) == 0 {
		// A HEAD answer has no body to check (and the contract declares no HEAD operation).
		return nil
	}
	if w.route == nil {
		// No operation (unknown route, wrong method): the body must still be the Error body,
		// or the error body of the path's dialect.
		if d := dialectOf(w.req.URL.Path); d != nil {
			return validateJSON(w.v.dialectSchemas[d.schema], body)
		}
		return validateJSON(w.v.errSchema, body)
	}
	return openapi3filter.ValidateResponse(context.Background(), w.responseInput(body))
}

func validateJSON(s *openapi3.Schema, body []byte) error {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return s.VisitJSON(doc, openapi3.MultiErrors())
}

func isEventStream(ct string) bool {
	return strings.HasPrefix(strings.TrimSpace(ct), "text/event-stream")
}

// sseChecker splits a stream into frames (blank-line separated), validates each event against
// the schema its `event` member names, and forwards the frame bytes unchanged.
type sseChecker struct {
	w       http.ResponseWriter
	v       *ResponseValidator
	req     *http.Request
	schemas *streamSchemas
	pending []byte
	n       int
	ended   bool
}

var frameSep = []byte("\n\n")

func (s *sseChecker) write(p []byte) (int, error) {
	if s.ended {
		return 0, ErrStreamViolation
	}
	s.pending = append(s.pending, p...)
	out := s.pending[:0:0]
	for {
		i := bytes.Index(s.pending, frameSep)
		if i < 0 {
			break
		}
		frame := s.pending[:i+len(frameSep)]
		s.n++
		if err := s.check(frame[:i]); err != nil {
			s.v.violation(s.req, fmt.Sprintf("event #%d", s.n), err)
			if s.v.mode == ValidationEnforce {
				out = append(out, s.replacement(frame[:i])...)
				s.ended = true
				s.pending = nil
				if _, werr := s.w.Write(out); werr != nil {
					return 0, werr
				}
				return 0, ErrStreamViolation
			}
		}
		out = append(out, frame...)
		s.pending = s.pending[i+len(frameSep):]
	}
	if len(out) > 0 {
		if _, err := s.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// CheckEvent validates one frame's payload (the text between blank lines); exported for the
// benchmark and for tools that check recorded transcripts.
func (v *ResponseValidator) CheckEvent(operationID string, frame []byte) error {
	s := sseChecker{v: v, schemas: v.events[operationID]}
	return s.check(frame)
}

func (s *sseChecker) check(frame []byte) error {
	var data []byte
	eventField := ""
	comments := false
	for line := range bytes.SplitSeq(frame, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		case bytes.HasPrefix(line, []byte("event:")):
			eventField = strings.TrimSpace(string(line[len("event:"):]))
		case len(line) == 0:
		case line[0] == ':':
			comments = true
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
	if data == nil {
		if eventField == "ping" || eventField == "" && comments {
			return nil
		}
		return fmt.Errorf("frame without data (event %q)", eventField)
	}
	if s.schemas == nil {
		return errors.New("the operation declares no event stream")
	}
	if s.schemas.done != "" && string(data) == s.schemas.done {
		return nil
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("data is not JSON: %w", err)
	}
	schema := s.schemas.any
	if schema != nil {
		schema = s.schemas.branchFor(doc)
	} else {
		obj, _ := doc.(map[string]any)
		name, _ := obj[s.schemas.prop].(string)
		if schema = s.schemas.byName[name]; schema == nil {
			return fmt.Errorf("unknown event %q", name)
		}
		if eventField != "" && eventField != name {
			return fmt.Errorf("the event: line names %q, the data %q", eventField, name)
		}
	}
	return schema.VisitJSON(doc, openapi3.MultiErrors())
}

// errContractViolation is what a client gets, in enforce mode, instead of a response or an
// event that broke the contract.
func errContractViolation(cause error) *APIError {
	e := errInternal(cause)
	e.Message = "The response violated the API contract."
	return e
}

// replacement is the `error` event that ends a stream whose event broke the contract; it keeps
// the envelope of the offending event so that it is itself valid.
func (s *sseChecker) replacement(frame []byte) []byte {
	var bad map[string]json.RawMessage
	for line := range bytes.SplitSeq(frame, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			_ = json.Unmarshal(bytes.TrimSpace(rest), &bad)
		}
	}
	switch {
	case s.schemas != nil && s.schemas.any != nil:
		// A stream of unnamed events (OpenAI's chunks) ends with its error object.
		return sse.AppendFrame(nil, errContractViolation(nil).openAIBody())
	case s.schemas != nil && s.schemas.prop == "type":
		// OpenAI's Responses stream ends with its error event.
		return openAIErrorEvent(nil, errContractViolation(nil), 0)
	}
	b := []byte(`data: {"event":"error"`)
	for _, k := range []string{"conversation_id", "message_id", "created_at", "workflow_run_id"} {
		if val, ok := bad[k]; ok {
			b = append(append(append(append(b, `,"`...), k...), `":`...), val...)
		}
	}
	b = append(errContractViolation(nil).appendMembers(b), '}')
	return append(b, frameSep...)
}

var _ io.Writer = (*captureWriter)(nil)
