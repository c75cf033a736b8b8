package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// contract is api/openapi.yaml read from disk — not the copy embedded in the server — so that
// this suite checks the server against the document, independently of its own middleware.
type contract struct {
	doc       *openapi3.T
	router    routers.Router
	errSchema *openapi3.Schema
	// openAIErrSchema is OpenAI's error object, the error body of the OpenAI-compatible
	// operations (tagged OpenAI), whose paths openAIPaths matches.
	openAIErrSchema *openapi3.Schema
	// externalErrSchema is the External Knowledge API's {error_code, error_msg}, the error body
	// of the operations under externalKnowledgePaths.
	externalErrSchema *openapi3.Schema
	events            map[string]*openapi3.Schema // event name → schema of a chat stream (discriminator mapping)
	// streams are the event schemas of each operation that answers with an event stream, by
	// operation id.
	streams map[string]map[string]*openapi3.Schema
}

var (
	contractOnce sync.Once
	contractVal  *contract
	contractErr  error
)

func loadContract(tb testing.TB) *contract {
	tb.Helper()
	contractOnce.Do(func() {
		// The formats the contract uses, defined here rather than borrowed from the server.
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562))
		openapi3.DefineStringFormatCallback("uri", func(s string) error {
			if u, err := url.Parse(s); err != nil || u.Scheme == "" {
				return fmt.Errorf("%q is not an absolute URL", s)
			}
			return nil
		})
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "api", "openapi.yaml")
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(path)
		if err != nil {
			contractErr = err
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			contractErr = err
			return
		}
		doc.Servers = openapi3.Servers{{URL: "/v1"}}
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			contractErr = err
			return
		}
		byEvent := func(stream *openapi3.Schema) map[string]*openapi3.Schema {
			// The member that names an event (Dify's `event`, OpenAI's Responses `type`).
			out := map[string]*openapi3.Schema{eventProp: {Title: stream.Discriminator.PropertyName}}
			for name, ref := range stream.Discriminator.Mapping {
				out[name] = doc.Components.Schemas[strings.TrimPrefix(ref.Ref, "#/components/schemas/")].Value
			}
			return out
		}
		c := &contract{doc: doc, router: router, errSchema: doc.Components.Schemas["Error"].Value,
			openAIErrSchema:   doc.Components.Schemas["OpenAIErrorResponse"].Value,
			externalErrSchema: doc.Components.Schemas["ExternalKnowledgeErrorResponse"].Value,
			events:            byEvent(doc.Components.Schemas["ChatStreamEvent"].Value), streams: map[string]map[string]*openapi3.Schema{}}
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				if r := op.Responses.Status(http.StatusOK); r != nil && r.Value != nil {
					if mt := r.Value.Content.Get("text/event-stream"); mt != nil && mt.Schema != nil && mt.Schema.Value.Discriminator != nil {
						c.streams[op.OperationID] = byEvent(mt.Schema.Value)
					} else if mt != nil && mt.Schema != nil {
						// Unnamed events (OpenAI's chunks): one schema, and the data line that ends
						// the stream.
						done, _ := mt.Extensions["x-stream-done"].(string)
						c.streams[op.OperationID] = map[string]*openapi3.Schema{"": mt.Schema.Value, streamDone: {Enum: []any{done}}}
					}
				}
			}
		}
		contractVal = c
	})
	if contractErr != nil {
		tb.Fatalf("load contract: %v", contractErr)
	}
	return contractVal
}

// checker collects contract violations seen by a transport and fails the test with them.
type checker struct {
	mu         sync.Mutex
	violations []string
}

func (c *checker) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

func (c *checker) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// contractTransport validates every response that passes through it — status, headers and
// body for JSON, and each event as it is read for event streams — against the contract.
type contractTransport struct {
	base    http.RoundTripper
	c       *contract
	checker *checker
}

// newContractClient returns an HTTP client whose responses are all checked; a violation fails
// t when the test ends.
func newContractClient(t *testing.T) *http.Client {
	t.Helper()
	ck := &checker{}
	t.Cleanup(func() {
		for _, v := range ck.list() {
			t.Errorf("contract violation: %s", v)
		}
	})
	return &http.Client{Transport: &contractTransport{base: http.DefaultTransport, c: loadContract(t), checker: ck}}
}

func (ct *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := ct.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	what := req.Method + " " + req.URL.Path
	route, params, rerr := ct.c.router.FindRoute(req)
	if rerr != nil {
		route = nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if route != nil {
			in := responseInput(req, route, params, resp)
			in.Options.ExcludeResponseBody = true
			if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
				ct.checker.add("%s: stream headers: %v", what, err)
			}
		} else {
			ct.checker.add("%s: event stream from an undeclared operation", what)
		}
		events := ct.c.events
		if route != nil && ct.c.streams[route.Operation.OperationID] != nil {
			events = ct.c.streams[route.Operation.OperationID]
		}
		resp.Body = &eventChecker{rc: resp.Body, r: bufio.NewReader(resp.Body), events: events, checker: ct.checker, what: what}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if req.Method == http.MethodHead {
		// No operation is declared for HEAD, and its answer has no body to check.
		if len(body) != 0 {
			ct.checker.add("%s: %d answer to HEAD has a body", what, resp.StatusCode)
		}
		return resp, nil
	}
	if route == nil {
		// No operation (unknown route or method): the body must still be the Error body (OpenAI's
		// error object under the OpenAI-compatible paths).
		if err := validateBody(ct.c.errSchemaFor(req.URL.Path), body); err != nil {
			ct.checker.add("%s: %d body is not the Error body: %v", what, resp.StatusCode, err)
		}
		return resp, nil
	}
	in := responseInput(req, route, params, resp)
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		ct.checker.add("%s: %d: %v", what, resp.StatusCode, err)
	}
	return resp, nil
}

func responseInput(req *http.Request, route *routers.Route, params map[string]string, resp *http.Response) *openapi3filter.ResponseValidationInput {
	return &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
}

func validateBody(s *openapi3.Schema, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.VisitJSON(v, openapi3.MultiErrors())
}

// eventChecker passes an event stream through unchanged while checking each frame: a `data:`
// frame must be JSON matching the schema its `event` names; a frame without data must be the
// `event: ping` keep-alive.
type eventChecker struct {
	rc      io.ReadCloser
	r       *bufio.Reader
	events  map[string]*openapi3.Schema
	checker *checker
	what    string
	frame   []byte
	n       int
}

func (e *eventChecker) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.frame = append(e.frame, p[:n]...)
	for {
		i := bytes.Index(e.frame, []byte("\n\n"))
		if i < 0 {
			break
		}
		e.n++
		if verr := checkEventFrame(e.events, e.frame[:i]); verr != nil {
			e.checker.add("%s: event #%d: %v", e.what, e.n, verr)
		}
		e.frame = e.frame[i+2:]
	}
	if errors.Is(err, io.EOF) && len(bytes.TrimSpace(e.frame)) > 0 {
		e.checker.add("%s: stream ended inside a frame: %q", e.what, e.frame)
		e.frame = nil
	}
	return n, err
}

func (e *eventChecker) Close() error { return e.rc.Close() }

// streamDone is the key of a stream's closing data line among its event schemas (an enum of
// the one value), for streams of unnamed events.
const streamDone = "\x00done"

// eventProp is the key, among a stream's event schemas, of a schema whose title is the member
// that names an event.
const eventProp = "\x00prop"

// openAIPaths matches the paths of the OpenAI-compatible operations, whose errors are OpenAI's
// error object.
var openAIPaths = regexp.MustCompile(`^/v1/(chat/completions|responses|models(/.*)?)$`)

// externalKnowledgePaths matches the paths of Parley's External Knowledge API, whose errors are
// that API's {error_code, error_msg}.
var externalKnowledgePaths = regexp.MustCompile(`^/v1/external-knowledge(/.*)?$`)

// errSchemaFor is the schema of the error bodies under path.
func (c *contract) errSchemaFor(path string) *openapi3.Schema {
	switch {
	case openAIPaths.MatchString(path):
		return c.openAIErrSchema
	case externalKnowledgePaths.MatchString(path):
		return c.externalErrSchema
	}
	return c.errSchema
}

// hasErrorStatus says whether the error bodies under path carry the HTTP status (the Error
// body does; the dialects of other APIs do not).
func hasErrorStatus(path string) bool {
	return !openAIPaths.MatchString(path) && !externalKnowledgePaths.MatchString(path)
}

// checkFrame checks a frame of a chat stream.
func (c *contract) checkFrame(frame []byte) error { return checkEventFrame(c.events, frame) }

// checkEventFrame checks a frame against the event schemas of its stream.
func checkEventFrame(events map[string]*openapi3.Schema, frame []byte) error {
	if events[""] != nil {
		return checkUnnamedFrame(events, frame)
	}
	prop := "event"
	if p := events[eventProp]; p != nil {
		prop = p.Title
	}
	if prop != "event" && bytes.HasPrefix(frame, []byte(":")) && !bytes.Contains(frame, []byte("\n")) {
		return nil // OpenAI's streams keep alive with a comment
	}
	var data []byte
	event := ""
	for _, line := range strings.Split(string(frame), "\n") {
		switch {
		case strings.HasPrefix(line, "data: "):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, line[len("data: "):]...)
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		default:
			// Dify's framing has only `data: {json}` and the bare `event: ping` frame.
			return fmt.Errorf("unexpected line %q", line)
		}
	}
	if data == nil {
		if event != "ping" || prop != "event" {
			return fmt.Errorf("frame without data is not a ping: %q", frame)
		}
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("data is not a JSON object: %w", err)
	}
	name, _ := v[prop].(string)
	switch {
	case prop == "event" && event != "":
		return fmt.Errorf("JSON events carry no event: line (got %q)", event)
	case prop != "event" && event != name:
		return fmt.Errorf("the event: line names %q, the data %q", event, name)
	}
	s := events[name]
	if s == nil {
		return fmt.Errorf("unknown event %q", name)
	}
	return s.VisitJSON(any(v), openapi3.MultiErrors())
}

// checkUnnamedFrame checks a frame of a stream of unnamed events (OpenAI's): a comment line
// (the keep-alive), the closing data line, or one data line of JSON that the stream's schema
// accepts.
func checkUnnamedFrame(events map[string]*openapi3.Schema, frame []byte) error {
	if bytes.HasPrefix(frame, []byte(":")) && !bytes.Contains(frame, []byte("\n")) {
		return nil
	}
	data, ok := bytes.CutPrefix(frame, []byte("data: "))
	if !ok || bytes.Contains(data, []byte("\n")) {
		return fmt.Errorf("not one data line or a comment: %q", frame)
	}
	if done := events[streamDone]; done != nil && len(done.Enum) == 1 && string(data) == done.Enum[0] {
		return nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("data is not JSON: %w", err)
	}
	return events[""].VisitJSON(v, openapi3.MultiErrors())
}

// TestContractCheckerCatchesViolations proves the checker above can fail: without it every
// other test here would pass on a server that ignores the contract.
func TestContractCheckerCatchesViolations(t *testing.T) {
	c := loadContract(t)
	good := `data: {"event":"message","conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"Hi","from_variable_selector":null}`
	for name, tc := range map[string]struct {
		frame string
		ok    bool
	}{
		"valid message":          {good, true},
		"ping":                   {"event: ping", true},
		"missing answer":         {strings.Replace(good, `"answer":"Hi",`, "", 1), false},
		"id not a uuid":          {strings.Replace(good, `"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22"`, `"id":"x"`, 1), false},
		"unknown event":          {strings.Replace(good, `"event":"message"`, `"event":"mystery"`, 1), false},
		"event line beside data": {"event: message\n" + good, false},
		"not json":               {"data: {", false},
		"created_at as string":   {strings.Replace(good, `1705398420`, `"1705398420"`, 1), false},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.checkFrame([]byte(tc.frame))
			if tc.ok && err != nil {
				t.Fatalf("valid frame rejected: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("invalid frame accepted: %s", tc.frame)
			}
		})
	}
	// A Completion stream is checked against its own operation's events: no conversation.
	completion := c.streams["sendCompletionMessage"]
	goodCompletion := `data: {"event":"message","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"Hi","from_variable_selector":null}`
	if err := checkEventFrame(completion, []byte(goodCompletion)); err != nil {
		t.Fatalf("valid completion frame rejected: %v", err)
	}
	if err := c.checkFrame([]byte(goodCompletion)); err == nil {
		t.Fatal("a completion frame passed as a chat event (no conversation_id)")
	}
	if err := checkEventFrame(completion, []byte(strings.Replace(goodCompletion, `"event":"message"`, `"event":"agent_thought"`, 1))); err == nil {
		t.Fatal("an event Completion streams never send was accepted")
	}
	if err := validateBody(c.errSchema, []byte(`{"code":"not_found","message":"x","status":404}`)); err != nil {
		t.Fatalf("valid error body rejected: %v", err)
	}
	if err := validateBody(c.errSchema, []byte(`{"message":"Not Found"}`)); err == nil {
		t.Fatal("Echo's default error body accepted")
	}
}
