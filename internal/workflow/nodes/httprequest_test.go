package nodes_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/httpreq"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// httpDeps are the deps of http-request nodes: the SSRF-guarded client allowing loopback only
// (as PARLEY_TOOLS_ALLOWED_NETWORKS=127.0.0.1/32 would), shared transports and the fixture's files.
func httpDeps(t *testing.T, f *fixture) nodes.Deps {
	t.Helper()
	hc, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &httpreq.Transports{}
	t.Cleanup(tr.Close)
	d := nodes.Deps{HTTP: nodes.HTTP{Client: hc, Transports: tr}}
	if f != nil {
		d.Files = f.files
	}
	return d
}

func httpGraph(node map[string]any, answer string) []any {
	node["title"] = "req"
	return []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("req", "http-request", node),
		nodeOf("a", "answer", map[string]any{"answer": answer}),
	}
}

var httpEdges = []any{edgeOf("start", "source", "req"), edgeOf("req", "source", "a")}

// TestHTTPRequestGetJSON: a GET with a rendered URL, params and headers; the JSON body, status
// and headers are the outputs, and process_data.request is the request as sent.
func TestHTTPRequestGetJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cities/paris" || r.URL.Query().Get("units") != "metric" || r.Header.Get("X-Trace") != "t-1" || r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"temp": 21}`)
	}))
	t.Cleanup(srv.Close)
	pool := workflow.NewPool()
	pool.Set("src", "city", "paris")
	node := map[string]any{"method": "get", "url": srv.URL + "/cities/{{#src.city#}}", "params": "units:metric", "headers": "X-Trace:t-1",
		"authorization": map[string]any{"type": "api-key", "config": map[string]any{"type": "bearer", "api_key": "s3cret"}},
		"body":          map[string]any{"type": "none", "data": []any{}}}
	rep, ev := execute(t, httpDeps(t, nil), nil, pool, httpGraph(node, "{{#req.status_code#}} {{#req.body#}}"), httpEdges)
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != `200 {"temp": 21}` {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
	fin := ev.finished["req"]
	headers := fin["outputs"].(map[string]any)["headers"].(map[string]any)
	if headers["content-type"] != "application/json" {
		t.Fatalf("headers %v", headers)
	}
	req := fin["process_data"].(map[string]any)["request"].(string)
	if !strings.HasPrefix(req, "GET /cities/paris?units=metric HTTP/1.1") || strings.Contains(req, "s3cret") {
		t.Fatalf("process_data.request %q", req)
	}
}

// TestHTTPRequestFormDataWithFile: a POST form-data body sends a text field and the bytes of an
// uploaded file read through the files service.
func TestHTTPRequestFormDataWithFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	doc := f.upload(t, "notes.txt", "text/plain", []byte("file body here"))
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fh := r.MultipartForm.File["doc"]
		if len(fh) != 1 {
			http.Error(w, "no file", http.StatusBadRequest)
			return
		}
		rc, _ := fh[0].Open()
		b, _ := io.ReadAll(rc)
		got.Store(r.FormValue("who") + "|" + fh[0].Filename + "|" + string(b))
		_, _ = io.WriteString(w, "received")
	}))
	t.Cleanup(srv.Close)
	pool := workflow.NewPool()
	pool.Set("start", "doc", doc)
	pool.Set("start", "name", "ada")
	node := map[string]any{"method": "post", "url": srv.URL + "/upload", "headers": "", "params": "",
		"body": map[string]any{"type": "form-data", "data": []any{
			map[string]any{"key": "who", "type": "text", "value": "{{#start.name#}}"},
			map[string]any{"key": "doc", "type": "file", "file": []any{"start", "doc"}},
		}}}
	rep, ev := execute(t, httpDeps(t, f), f.env, pool, httpGraph(node, "{{#req.body#}}"), httpEdges)
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != "received" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
	if got.Load() != "ada|notes.txt|file body here" {
		t.Fatalf("server got %v", got.Load())
	}
}

// TestHTTPRequestRetryThenFailBranch: a 500 with retries enabled fails each attempt
// (HTTPResponseCodeError), node_retry is sent per retry, and once they are spent the fail
// branch runs with the error's outputs. A 500 without retries or strategy is a success.
func TestHTTPRequestRetryThenFailBranch(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	node := func(strategy bool) map[string]any {
		m := map[string]any{"method": "get", "url": srv.URL, "headers": "", "params": "", "body": map[string]any{"type": "none"}}
		if strategy {
			m["retry_config"] = map[string]any{"retry_enabled": true, "max_retries": 2, "retry_interval": 0}
			m["error_strategy"] = "fail-branch"
		}
		return m
	}
	ns := httpGraph(node(true), "ok")
	ns = append(ns, nodeOf("fb", "answer", map[string]any{"answer": "{{#req.error_type#}}: {{#req.error_message#}}"}))
	rep, ev := execute(t, httpDeps(t, nil), nil, nil, ns, append(httpEdges[:1:1], edgeOf("req", "source", "a"), edgeOf("req", "fail-branch", "fb")))
	if rep.Status != workflow.StatusPartialSucceeded || ev.answer.String() != "HTTPResponseCodeError: Request failed with status code 500" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
	if calls.Load() != 3 || ev.retries["req"] != 2 {
		t.Fatalf("%d calls, %d retries", calls.Load(), ev.retries["req"])
	}
	rep, ev = execute(t, httpDeps(t, nil), nil, nil, httpGraph(node(false), "{{#req.status_code#}}"), httpEdges)
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != "500" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
}

// TestHTTPRequestBinaryResponseBecomesFile: an image response is kept as a tool file of the
// message; files holds it as a file value with a signed link that serves the same bytes.
func TestHTTPRequestBinaryResponseBecomesFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic.Bytes())
	}))
	t.Cleanup(srv.Close)
	pool := workflow.NewPool()
	node := map[string]any{"method": "get", "url": srv.URL + "/chart.png", "headers": "", "params": "", "body": map[string]any{"type": "none"}}
	rep, ev := execute(t, httpDeps(t, f), f.env, pool, httpGraph(node, "{{#req.files#}}"), httpEdges)
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("%+v", rep)
	}
	v, _ := pool.Get([]string{"req", "files"})
	fs, _ := v.([]any)
	if len(fs) != 1 {
		t.Fatalf("files %#v", v)
	}
	file := fs[0].(*value.File)
	if file.Type != "image" || file.TransferMethod != value.TransferToolFile || file.MimeType != "image/png" || file.Size != int64(pic.Len()) ||
		!strings.Contains(file.URL, "/files/tools/"+file.RelatedID+".png?") || file.Filename != "chart.png" {
		t.Fatalf("file %+v", file)
	}
	if !strings.Contains(ev.answer.String(), "![chart.png]("+file.URL+")") {
		t.Fatalf("answer %q", ev.answer.String())
	}
	up, err := f.files.Lookup(t.Context(), file.RelatedID)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.files.Open(t.Context(), up)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); !bytes.Equal(b, pic.Bytes()) {
		t.Fatal("stored bytes differ")
	}
	byMsg, err := f.st.MessageFiles(t.Context(), []string{f.env.MessageID})
	mfs := byMsg[f.env.MessageID]
	if err != nil || len(mfs) != 1 || mfs[0].BelongsTo != "assistant" {
		t.Fatalf("message files %v %+v", err, mfs)
	}
	js, _ := json.Marshal(ev.finished["req"]["outputs"])
	if !strings.Contains(string(js), `"transfer_method":"tool_file"`) {
		t.Fatalf("outputs %s", js)
	}
}

// TestHTTPRequestGuard: without the loopback allowance the guard refuses the address.
func TestHTTPRequestGuard(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "secret") }))
	t.Cleanup(srv.Close)
	hc, err := netguard.ClientAllowing(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := map[string]any{"method": "get", "url": srv.URL, "headers": "", "params": "", "body": map[string]any{"type": "none"},
		"error_strategy": "default-value", "default_value": []any{map[string]any{"key": "body", "type": "string", "value": "blocked"}}}
	rep, ev := execute(t, nodes.Deps{HTTP: nodes.HTTP{Client: hc}}, nil, nil, httpGraph(node, "{{#req.body#}} {{#req.error_type#}}"), httpEdges)
	if rep.Status != workflow.StatusPartialSucceeded || ev.answer.String() != "blocked ToolSSRFError" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
}
