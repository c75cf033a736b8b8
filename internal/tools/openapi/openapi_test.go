package openapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/tools"
)

// petsV3 is an OpenAPI 3 document in YAML: a path parameter, query and header parameters, a JSON
// body through a component $ref, and an operation without an operationId.
const petsV3 = `
openapi: 3.0.3
info: {title: Pets, version: "1"}
servers:
  - url: https://pets.invalid/v1
paths:
  /pets/{petId}:
    get:
      operationId: getPet
      summary: Get a pet
      description: Returns one pet by id.
      parameters:
        - {name: petId, in: path, required: true, schema: {type: string}, description: the pet's id}
        - {name: verbose, in: query, schema: {type: boolean}}
        - {name: X-Trace, in: header, schema: {type: string}}
        - {name: tags, in: query, schema: {type: array, items: {type: string}}}
  /pets:
    post:
      operationId: createPet
      summary: Create a pet
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/NewPet'}
      parameters:
        - {name: dryRun, in: query, schema: {type: boolean}}
  /store/inventory:
    get:
      summary: Inventory counts
components:
  schemas:
    NewPet:
      type: object
      required: [name]
      properties:
        name: {type: string, description: the pet's name}
        age: {type: integer}
        owner: {$ref: '#/components/schemas/Owner'}
    Owner:
      type: object
      properties:
        email: {type: string, format: email}
        friend: {$ref: '#/components/schemas/Owner'}
`

// weatherV2 is a Swagger 2.0 document in JSON.
const weatherV2 = `{
  "swagger": "2.0",
  "info": {"title": "Weather", "version": "1"},
  "host": "weather.invalid",
  "basePath": "/api",
  "schemes": ["https"],
  "paths": {
    "/cities/{city}/forecast": {
      "get": {
        "operationId": "forecast",
        "summary": "Forecast for a city",
        "parameters": [
          {"name": "city", "in": "path", "required": true, "type": "string"},
          {"name": "days", "in": "query", "required": true, "type": "integer"}
        ],
        "responses": {"200": {"description": "ok"}}
      }
    },
    "/reports": {
      "post": {
        "operationId": "report",
        "description": "File a weather report.",
        "consumes": ["application/json"],
        "parameters": [
          {"name": "body", "in": "body", "required": true,
           "schema": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}, "severity": {"type": "integer"}}}}
        ],
        "responses": {"200": {"description": "ok"}}
      }
    }
  }
}`

type seen struct {
	method, path, rawPath, query string
	header                       http.Header
	body                         string
}

// recorder is a loopback API that records what it was sent and answers with reply.
func recorder(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, chan seen) {
	t.Helper()
	got := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), string(b)}
		if reply != nil {
			reply(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func byName(t *testing.T, list []tools.Tool, name string) tools.Tool {
	t.Helper()
	for _, tl := range list {
		if tl.Identity().Name == name {
			return tl
		}
	}
	var names []string
	for _, tl := range list {
		names = append(names, tl.Identity().Name)
	}
	t.Fatalf("no tool %q among %v", name, names)
	return nil
}

func mustNew(t *testing.T, doc string, opts Options) []tools.Tool {
	t.Helper()
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	list, err := New([]byte(doc), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return list
}

func invoke(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	res, err := tl.Invoke(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return res
}

func TestOpenAPI3Tools(t *testing.T) {
	list := mustNew(t, petsV3, Options{Provider: "pets"})
	if len(list) != 3 {
		t.Fatalf("got %d tools, want 3", len(list))
	}
	get := byName(t, list, "getPet")
	if id := get.Identity(); id.Provider != "pets" || id.Label["en_US"] != "getPet" {
		t.Errorf("identity = %+v", id)
	}
	if get.Description() != "Returns one pet by id." {
		t.Errorf("description = %q, want the description over the summary", get.Description())
	}
	var schema struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(get.Parameters(), &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Properties) != 4 || fmt.Sprint(schema.Required) != "[petId]" {
		t.Errorf("getPet parameters = %s", get.Parameters())
	}
	if schema.Properties["petId"]["description"] != "the pet's id" || schema.Properties["verbose"]["type"] != "boolean" {
		t.Errorf("getPet parameters = %s", get.Parameters())
	}

	create := byName(t, list, "createPet")
	if create.Description() != "Create a pet" {
		t.Errorf("description = %q, want the summary when there is no description", create.Description())
	}
	schema.Properties, schema.Required = nil, nil
	if err := json.Unmarshal(create.Parameters(), &schema); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"name", "age", "owner", "dryRun"} {
		if _, ok := schema.Properties[p]; !ok {
			t.Errorf("createPet lacks %q: %s", p, create.Parameters())
		}
	}
	if fmt.Sprint(schema.Required) != "[name]" {
		t.Errorf("createPet required = %v", schema.Required)
	}
	// The recursive Owner schema is copied to a bounded depth, not forever.
	if len(create.Parameters()) > 4096 {
		t.Errorf("createPet parameters are %d bytes", len(create.Parameters()))
	}

	// Without an operationId the name is the sanitised path and the method, as in Dify.
	inv := byName(t, list, "storeinventory_get")
	if inv.Description() != "Inventory counts" {
		t.Errorf("description = %q", inv.Description())
	}
}

func TestOpenAPI3InvokeBuildsTheRequest(t *testing.T) {
	srv, got := recorder(t, nil)
	list := mustNew(t, petsV3, Options{ServerURL: srv.URL + "/v1"})

	res := invoke(t, byName(t, list, "getPet"), `{"petId":"a b/c","verbose":true,"X-Trace":"t-1","tags":["x","y"]}`)
	if res.IsError || res.Text != `{"ok":true}` {
		t.Fatalf("result = %+v", res)
	}
	s := <-got
	if s.method != "GET" || s.path != "/v1/pets/a b/c" || s.rawPath != "/v1/pets/a%20b%2Fc" {
		t.Errorf("request = %s %s (raw %s)", s.method, s.path, s.rawPath)
	}
	if s.query != "tags=x&tags=y&verbose=true" || s.header.Get("X-Trace") != "t-1" || s.body != "" {
		t.Errorf("query %q, header %q, body %q", s.query, s.header.Get("X-Trace"), s.body)
	}

	res = invoke(t, byName(t, list, "createPet"), `{"name":"Rex","age":3,"owner":{"email":"a@b.c"},"dryRun":false}`)
	if res.IsError {
		t.Fatalf("result = %+v", res)
	}
	s = <-got
	if s.method != "POST" || s.path != "/v1/pets" || s.query != "dryRun=false" || s.header.Get("Content-Type") != "application/json" {
		t.Errorf("request = %s %s?%s %q", s.method, s.path, s.query, s.header.Get("Content-Type"))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(s.body), &body); err != nil {
		t.Fatalf("body %q: %v", s.body, err)
	}
	if len(body) != 3 || body["name"] != "Rex" || body["age"] != float64(3) {
		t.Errorf("body = %s, want the arguments that are not parameters", s.body)
	}
}

func TestSwagger2Tools(t *testing.T) {
	srv, got := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "sunny")
	})
	list := mustNew(t, weatherV2, Options{})
	if len(list) != 2 {
		t.Fatalf("got %d tools", len(list))
	}
	// The document's own server comes from host, basePath and schemes.
	if tl := byName(t, list, "forecast").(*Tool); tl.server != "https://weather.invalid/api" {
		t.Errorf("server = %q", tl.server)
	}
	if d := byName(t, list, "report").Description(); d != "File a weather report." {
		t.Errorf("description = %q", d)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(byName(t, list, "report").Parameters(), &schema)
	if fmt.Sprint(schema.Required) != "[text]" {
		t.Errorf("report parameters = %s", byName(t, list, "report").Parameters())
	}

	list = mustNew(t, weatherV2, Options{ServerURL: srv.URL + "/api"})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"Oslo","days":3}`)
	if res.IsError || res.Text != "sunny" {
		t.Fatalf("result = %+v", res)
	}
	if s := <-got; s.path != "/api/cities/Oslo/forecast" || s.query != "days=3" {
		t.Errorf("request = %s?%s", s.path, s.query)
	}
	res = invoke(t, byName(t, list, "report"), `{"text":"rain","severity":2}`)
	if res.IsError {
		t.Fatalf("result = %+v", res)
	}
	if s := <-got; s.method != "POST" || s.path != "/api/reports" || s.body != `{"severity":2,"text":"rain"}` {
		t.Errorf("request = %s %s %s", s.method, s.path, s.body)
	}
}

func TestAuth(t *testing.T) {
	cases := []struct {
		name       string
		auth       Auth
		header     string
		want       string
		wantQuery  string
		wantNoAuth bool
	}{
		{name: "none", auth: Auth{Type: AuthNone}, wantNoAuth: true},
		{name: "api key custom header", auth: Auth{Type: AuthAPIKey, Header: "X-API-Key", Value: "k1"}, header: "X-API-Key", want: "k1"},
		{name: "api key default header", auth: Auth{Type: AuthAPIKeyHeader, Value: "raw"}, header: "Authorization", want: "raw"},
		{name: "bearer", auth: Auth{Type: AuthAPIKey, Prefix: PrefixBearer, Value: "tok"}, header: "Authorization", want: "Bearer tok"},
		{name: "basic encoded", auth: Auth{Type: AuthAPIKey, Prefix: PrefixBasic, Value: "dTpw"}, header: "Authorization", want: "Basic dTpw"},
		{name: "basic user:password", auth: Auth{Type: AuthAPIKey, Prefix: PrefixBasic, Value: "u:p"}, header: "Authorization", want: "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p"))},
		{name: "api key query", auth: Auth{Type: AuthAPIKeyQuery, QueryParam: "apikey", Value: "q s"}, wantQuery: "apikey=q+s&days=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, got := recorder(t, nil)
			list := mustNew(t, weatherV2, Options{ServerURL: srv.URL, Auth: c.auth})
			if res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`); res.IsError {
				t.Fatalf("result = %+v", res)
			}
			s := <-got
			if c.wantNoAuth && s.header.Get("Authorization") != "" {
				t.Errorf("Authorization = %q, want none", s.header.Get("Authorization"))
			}
			if c.header != "" && s.header.Get(c.header) != c.want {
				t.Errorf("%s = %q, want %q", c.header, s.header.Get(c.header), c.want)
			}
			if c.wantQuery != "" && s.query != c.wantQuery {
				t.Errorf("query = %q, want %q", s.query, c.wantQuery)
			}
		})
	}
	if _, err := New([]byte(weatherV2), Options{HTTPClient: &http.Client{}, Auth: Auth{Type: "oauth"}}); err == nil {
		t.Error("an unknown auth type was accepted")
	}
}

func TestHTTPErrorIsTheObservation(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "database on fire "+strings.Repeat("x", 5000), http.StatusInternalServerError)
	})
	list := mustNew(t, weatherV2, Options{ServerURL: srv.URL})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`)
	if !res.IsError || !strings.Contains(res.Text, "500") || !strings.Contains(res.Text, "database on fire") {
		t.Fatalf("result = %+v", res)
	}
	if len(res.Text) > 2*excerptBytes {
		t.Errorf("the observation is %d bytes; the body should be cut to an excerpt", len(res.Text))
	}
}

func TestTimeoutIsTheObservation(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	list := mustNew(t, weatherV2, Options{ServerURL: srv.URL, Timeout: 50 * time.Millisecond})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`)
	if !res.IsError || !strings.Contains(res.Text, "no answer within") {
		t.Fatalf("result = %+v", res)
	}
}

func TestCancelledContextIsAnError(t *testing.T) {
	list := mustNew(t, weatherV2, Options{ServerURL: "http://127.0.0.1:1"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := byName(t, list, "forecast").Invoke(ctx, json.RawMessage(`{"city":"x","days":1}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestConnectionRefusedIsTheObservation(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	list := mustNew(t, weatherV2, Options{ServerURL: "http://" + addr})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`)
	if !res.IsError || !strings.Contains(res.Text, "refused") {
		t.Fatalf("result = %+v", res)
	}
}

func TestOversizedResponseIsTheObservation(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("a", 2000))
	})
	list := mustNew(t, weatherV2, Options{ServerURL: srv.URL, MaxResponseBytes: 1000})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`)
	if !res.IsError || !strings.Contains(res.Text, "larger than 1000 bytes") {
		t.Fatalf("result = %+v", res)
	}
	// Exactly at the cap is fine.
	list = mustNew(t, weatherV2, Options{ServerURL: srv.URL, MaxResponseBytes: 2000})
	if res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`); res.IsError || len(res.Text) != 2000 {
		t.Fatalf("result at the cap: IsError %v, %d bytes", res.IsError, len(res.Text))
	}
}

func TestBinaryResponseIsAFile(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00")
	srv, _ := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	})
	list := mustNew(t, weatherV2, Options{ServerURL: srv.URL})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`)
	if res.IsError || len(res.Files) != 1 || res.Files[0].MIMEType != "image/png" || string(res.Files[0].Data) != string(png) {
		t.Fatalf("result = %+v", res)
	}
}

func TestMalformedArguments(t *testing.T) {
	srv, got := recorder(t, nil)
	list := mustNew(t, weatherV2, Options{ServerURL: srv.URL})
	forecast, report := byName(t, list, "forecast"), byName(t, list, "report")
	cases := []struct {
		tool tools.Tool
		args string
		want string
	}{
		{forecast, `[1,2]`, "JSON object"},
		{forecast, `"Oslo"`, "JSON object"},
		{forecast, `{"city":`, "not a JSON object"},
		{forecast, `{"city":"x"}`, "missing required argument(s): days"},
		{forecast, `{}`, "city, days"},
		{forecast, `{"city":{"a":1},"days":1}`, `path parameter "city"`},
		{report, `{"severity":1}`, "missing required argument(s): text"},
	}
	for _, c := range cases {
		res := invoke(t, c.tool, c.args)
		if !res.IsError || !strings.Contains(res.Text, c.want) || !strings.Contains(res.Text, tools.ErrBadArguments.Error()) {
			t.Errorf("%s: result = %+v, want an error naming %q", c.args, res, c.want)
		}
	}
	select {
	case s := <-got:
		t.Errorf("a request was sent for bad arguments: %+v", s)
	default:
	}
}

func TestInvalidDocuments(t *testing.T) {
	huge := "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths:\n" +
		strings.Repeat("  /p:\n    get: {summary: padding padding padding padding}\n", MaxDocumentBytes/40)
	cases := map[string]string{
		"empty":            "",
		"not yaml":         "{{{ not: [",
		"not openapi":      `{"name": "a package.json", "version": "1.0.0"}`,
		"openapi 1":        `{"swagger": "1.2", "paths": {}}`,
		"huge":             huge,
		"no operations":    "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths: {}\n",
		"no server":        "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get: {operationId: a}\n",
		"external ref":     "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths:\n  /a:\n    get:\n      operationId: a\n      parameters: [{$ref: 'http://127.0.0.1:1/evil.yaml#/p'}]\n",
		"file ref":         "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths:\n  /a:\n    get:\n      operationId: a\n      parameters: [{$ref: '/etc/passwd#/p'}]\n",
		"duplicate names":  "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths:\n  /a:\n    get: {operationId: same}\n  /b:\n    get: {operationId: same}\n",
		"non-http server":  "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'file:///etc'}]\npaths:\n  /a:\n    get: {operationId: a}\n",
		"swagger bad host": `{"swagger": "2.0", "info": {"title": "x", "version": "1"}, "host": "a/b", "paths": {"/a": {"get": {"operationId": "a", "responses": {"200": {"description": "ok"}}}}}}`,
	}
	if len(huge) <= MaxDocumentBytes {
		t.Fatalf("the huge document is only %d bytes", len(huge))
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New([]byte(doc), Options{HTTPClient: &http.Client{}})
			if !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("err = %v, want ErrInvalidDocument", err)
			}
		})
	}
	if _, err := New([]byte(petsV3), Options{}); err == nil {
		t.Error("New accepted options without an HTTP client")
	}
}

// TestAliasBombIsRefused: a small YAML document whose aliases expand to billions of nodes is
// refused rather than expanded.
func TestAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	for _, head := range []string{"openapi: 3.0.3\n", "swagger: '2.0'\n"} {
		doc := head + "info: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths: {/a: {get: {operationId: a, responses: {'200': {description: ok}}}}}\nx-bomb:\n" +
			strings.ReplaceAll(b.String(), "\na", "\n  a")
		doc = strings.Replace(doc, "x-bomb:\na0", "x-bomb:\n  a0", 1)
		_, err := New([]byte(doc), Options{HTTPClient: &http.Client{}})
		if !errors.Is(err, ErrInvalidDocument) || !strings.Contains(err.Error(), "aliasing") {
			t.Fatalf("%s: err = %v, want ErrInvalidDocument for excessive aliasing", strings.TrimSpace(head), err)
		}
	}
}

func TestErrorTextHidesTheQueryKey(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusUnauthorized)
	})
	list := mustNew(t, weatherV2, Options{ServerURL: srv.URL, Auth: Auth{Type: AuthAPIKeyQuery, Value: "s3cret"}})
	res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`)
	if !res.IsError || !strings.Contains(res.Text, "401") || strings.Contains(res.Text, "s3cret") {
		t.Fatalf("result = %+v", res)
	}
}

// BenchmarkNewNearLimit parses a document just under MaxDocumentBytes with thousands of
// operations, the worst a registration can ask for.
func BenchmarkNewNearLimit(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.invalid'}]\npaths:\n")
	for i := 0; ; i++ {
		entry := fmt.Sprintf("  /items%d/{id}:\n    get:\n      operationId: get%d\n      summary: Get item %d\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n      responses: {'200': {description: ok}}\n", i, i, i)
		if sb.Len()+len(entry) > MaxDocumentBytes {
			break
		}
		sb.WriteString(entry)
	}
	doc := []byte(sb.String())
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(doc, Options{HTTPClient: &http.Client{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCustomKeyHeaderStaysOnItsHost: a redirect to another host does not carry the API key.
func TestCustomKeyHeaderStaysOnItsHost(t *testing.T) {
	other, got := recorder(t, nil)
	// The same loopback server under another host name: 127.0.0.1 redirects to localhost.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "k1" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(origin.Close)
	list := mustNew(t, weatherV2, Options{ServerURL: origin.URL, Auth: Auth{Type: AuthAPIKey, Header: "X-API-Key", Value: "k1"}})
	if res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`); res.IsError {
		t.Fatalf("result = %+v", res)
	}
	if s := <-got; s.header.Get("X-API-Key") != "" {
		t.Errorf("the redirected request carried X-API-Key %q", s.header.Get("X-API-Key"))
	}
}

// TestCustomHeaders: the provider's headers go with every request, win over a header parameter
// of the same name, lose to the credentials, and stay on their host across a redirect.
func TestCustomHeaders(t *testing.T) {
	other, got := recorder(t, nil)
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	origin, first := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	})
	h := http.Header{}
	h.Set("X-Tenant", "acme")
	h.Set("Authorization", "overridden")
	list := mustNew(t, weatherV2, Options{ServerURL: origin.URL, Headers: h,
		Auth: Auth{Type: AuthAPIKey, Prefix: PrefixBearer, Value: "tok"}})
	if res := invoke(t, byName(t, list, "forecast"), `{"city":"x","days":1}`); res.IsError {
		t.Fatalf("result = %+v", res)
	}
	s := <-first
	if s.header.Get("X-Tenant") != "acme" || s.header.Get("Authorization") != "Bearer tok" {
		t.Errorf("first request headers %v", s.header)
	}
	if s := <-got; s.header.Get("X-Tenant") != "" || s.header.Get("Authorization") != "" {
		t.Errorf("the redirected request carried %v", s.header)
	}
	if _, err := New([]byte(weatherV2), Options{HTTPClient: &http.Client{}, Headers: http.Header{"X-A": {"a\r\nb"}}}); err == nil {
		t.Error("a header with a line break was accepted")
	}
}
