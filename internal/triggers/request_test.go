package triggers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// hook is a manifest for the tests: POST JSON with a required header, query parameters and body
// members of every kind.
func hook(t *testing.T, data map[string]any) *Webhook {
	t.Helper()
	w, err := ParseWebhook("n", data)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var jsonHook = map[string]any{
	"method": "POST", "content_type": "application/json",
	"headers": []any{map[string]any{"name": "X-Api-Key", "required": true}},
	"params": []any{map[string]any{"name": "page", "type": "number"}, map[string]any{"name": "dry", "type": "boolean"},
		map[string]any{"name": "ref", "required": true}},
	"body": []any{map[string]any{"name": "name", "type": "string", "required": true}, map[string]any{"name": "age", "type": "number"},
		map[string]any{"name": "tags", "type": "array[string]"}, map[string]any{"name": "meta", "type": "object"},
		map[string]any{"name": "ok", "type": "boolean"}, map[string]any{"name": "scores", "type": "array[number]"}},
}

func request(method, target, ct, body string, headers ...string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

func TestReadAccepts(t *testing.T) {
	t.Parallel()
	w := hook(t, jsonHook)
	r := request("POST", "/triggers/webhook/x?ref=r1&page=2&dry=yes&extra=kept", "application/json; charset=utf-8",
		`{"name": "Ann", "age": 41.5, "tags": ["a"], "meta": {"k": 1}, "ok": false, "scores": [1, 2.5], "more": "kept"}`,
		"x-api-key", "secret")
	got, err := Read(context.Background(), r, w, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["method"] != "POST" {
		t.Errorf("method %v", got["method"])
	}
	wantQuery := map[string]any{"ref": "r1", "page": int64(2), "dry": true, "extra": "kept"}
	if !reflect.DeepEqual(got["query_params"], wantQuery) {
		t.Errorf("query %#v, want %#v", got["query_params"], wantQuery)
	}
	wantBody := map[string]any{"name": "Ann", "age": 41.5, "tags": []any{"a"}, "meta": map[string]any{"k": int64(1)}, "ok": false,
		"scores": []any{int64(1), 2.5}, "more": "kept"}
	if !reflect.DeepEqual(got["body"], wantBody) {
		t.Errorf("body %#v, want %#v", got["body"], wantBody)
	}
	if h := got["headers"].(map[string]any); h["X-Api-Key"] != "secret" {
		t.Errorf("headers %v", h)
	}
	// A request without a content type is JSON, as Dify reads it; an empty body is an empty
	// object.
	w = hook(t, map[string]any{"method": "POST"})
	got, err = Read(context.Background(), request("POST", "/x", "", ""), w, 0, nil)
	if err != nil || len(got["body"].(map[string]any)) != 0 {
		t.Fatalf("empty JSON: %v %v", got, err)
	}
}

func TestReadRefusesNamingWhatIsWrong(t *testing.T) {
	t.Parallel()
	w := hook(t, jsonHook)
	ok := `{"name": "Ann"}`
	for _, tc := range []struct {
		what string
		r    *http.Request
		want string
	}{
		{"method", request("GET", "/x?ref=1", "application/json", ok, "X-Api-Key", "k"), "HTTP method mismatch. Expected POST, got GET"},
		{"content type", request("POST", "/x?ref=1", "text/plain", ok, "X-Api-Key", "k"), "Content-type mismatch. Expected application/json, got text/plain"},
		{"header", request("POST", "/x?ref=1", "application/json", ok), "Required header missing: X-Api-Key"},
		{"query", request("POST", "/x", "application/json", ok, "X-Api-Key", "k"), "Required parameter missing: ref"},
		{"query number", request("POST", "/x?ref=1&page=two", "application/json", ok, "X-Api-Key", "k"), "Parameter 'page' validation failed: Cannot convert 'two' to number"},
		{"query boolean", request("POST", "/x?ref=1&dry=maybe", "application/json", ok, "X-Api-Key", "k"), "Parameter 'dry' validation failed: Cannot convert 'maybe' to boolean"},
		{"body required", request("POST", "/x?ref=1", "application/json", `{"age": 3}`, "X-Api-Key", "k"), "Required body parameter missing: name"},
		{"body number", request("POST", "/x?ref=1", "application/json", `{"name": "a", "age": "3"}`, "X-Api-Key", "k"), "Parameter 'age' validation failed: Expected number, got string"},
		{"body array", request("POST", "/x?ref=1", "application/json", `{"name": "a", "tags": ["a", 1]}`, "X-Api-Key", "k"), "Parameter 'tags' validation failed: Expected array of strings, got array"},
		{"body object", request("POST", "/x?ref=1", "application/json", `{"name": "a", "meta": []}`, "X-Api-Key", "k"), "Parameter 'meta' validation failed: Expected object, got array"},
		{"body string", request("POST", "/x?ref=1", "application/json", `{"name": null}`, "X-Api-Key", "k"), "Parameter 'name' validation failed: Expected string, got null"},
		{"invalid JSON", request("POST", "/x?ref=1", "application/json", `{"name": `, "X-Api-Key", "k"), "Invalid JSON body"},
		{"not an object", request("POST", "/x?ref=1", "application/json", `["a"]`, "X-Api-Key", "k"), "expected a JSON object, got array"},
	} {
		_, err := Read(context.Background(), tc.r, w, 0, nil)
		var re *RequestError
		if !errors.As(err, &re) || re.Status != 400 || !strings.Contains(re.Message, tc.want) {
			t.Errorf("%s: %v, want 400 %q", tc.what, err, tc.want)
		}
	}
}

func TestReadHeaderSpellings(t *testing.T) {
	t.Parallel()
	w := hook(t, map[string]any{"method": "GET", "headers": []any{map[string]any{"name": "x_api_key", "required": true}}})
	if _, err := Read(context.Background(), request("GET", "/x", "", "", "X-Api-Key", "k"), w, 0, nil); err != nil {
		t.Fatalf("a declared x_api_key is found as X-Api-Key: %v", err)
	}
}

func TestReadForm(t *testing.T) {
	t.Parallel()
	w := hook(t, map[string]any{"method": "PUT", "content_type": ContentForm,
		"body": []any{map[string]any{"name": "amount", "type": "number", "required": true}, map[string]any{"name": "paid", "type": "boolean"}}})
	got, err := Read(context.Background(), request("PUT", "/x", ContentForm, "amount=12.5&paid=1&note=x"), w, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"amount": 12.5, "paid": true, "note": "x"}; !reflect.DeepEqual(got["body"], want) {
		t.Fatalf("body %#v, want %#v", got["body"], want)
	}
	_, err = Read(context.Background(), request("PUT", "/x", ContentForm, "amount=lots"), w, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "Parameter 'amount' validation failed: Cannot convert 'lots' to number") {
		t.Fatalf("a form value that is no number: %v", err)
	}
}

func TestReadTextAndBinary(t *testing.T) {
	t.Parallel()
	text := hook(t, map[string]any{"method": "POST", "content_type": ContentText, "body": []any{map[string]any{"name": "note", "required": true}}})
	got, err := Read(context.Background(), request("POST", "/x", "text/plain", "hello"), text, 0, nil)
	if err != nil || got["body"].(map[string]any)["raw"] != "hello" {
		t.Fatalf("text: %v %v", got, err)
	}
	if _, err := Read(context.Background(), request("POST", "/x", "text/plain", ""), text, 0, nil); err == nil ||
		!strings.Contains(err.Error(), "Required body content missing for text/plain request (body parameter note)") {
		t.Fatalf("empty text: %v", err)
	}
	bin := hook(t, map[string]any{"method": "POST", "content_type": ContentBinary})
	var saved []byte
	save := func(_ context.Context, name, ct string, body io.Reader) (map[string]any, error) {
		saved, _ = io.ReadAll(body)
		return map[string]any{"id": "f1", "mime_type": ct, "filename": name}, nil
	}
	got, err = Read(context.Background(), request("POST", "/x", ContentBinary, "%PDF-1.4 ..."), bin, 0, save)
	if err != nil || string(saved) != "%PDF-1.4 ..." || got["body"].(map[string]any)["raw"].(map[string]any)["id"] != "f1" {
		t.Fatalf("binary: %v %v %q", got, err, saved)
	}
}

func TestReadMultipart(t *testing.T) {
	t.Parallel()
	w := hook(t, map[string]any{"method": "POST", "content_type": ContentFormData,
		"body": []any{map[string]any{"name": "doc", "type": "file", "required": true}, map[string]any{"name": "count", "type": "number"}}})
	form := func(withFile bool) (*http.Request, error) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.WriteField("count", "3")
		if withFile {
			fw, err := mw.CreateFormFile("doc", "notes.txt")
			if err != nil {
				return nil, err
			}
			_, _ = fw.Write([]byte("some notes"))
		} else {
			_ = mw.WriteField("doc", "not a file")
		}
		_ = mw.Close()
		return request("POST", "/x", mw.FormDataContentType(), b.String()), nil
	}
	r, _ := form(true)
	got, err := Read(context.Background(), r, w, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["body"].(map[string]any)["count"] != int64(3) {
		t.Errorf("body %v", got["body"])
	}
	f, _ := got["files"].(map[string]any)["doc"].(map[string]any)
	if f["filename"] != "notes.txt" || f["size"] != int64(10) {
		t.Errorf("files %v", got["files"])
	}
	r, _ = form(false)
	if _, err := Read(context.Background(), r, w, 0, nil); err == nil || !strings.Contains(err.Error(), "Parameter 'doc' validation failed: Expected file") {
		t.Fatalf("a text field for a file: %v", err)
	}
	if _, err := Read(context.Background(), request("POST", "/x", "multipart/form-data", "x"), w, 0, nil); err == nil ||
		!strings.Contains(err.Error(), "no boundary") {
		t.Fatalf("no boundary: %v", err)
	}
}

func TestReadBoundsTheBody(t *testing.T) {
	t.Parallel()
	w := hook(t, map[string]any{"method": "POST", "content_type": ContentText})
	// Declared too large: refused before reading.
	r := request("POST", "/x", "text/plain", strings.Repeat("a", 100))
	_, err := Read(context.Background(), r, w, 10, nil)
	var re *RequestError
	if !errors.As(err, &re) || re.Status != 413 || !strings.Contains(re.Message, "100 bytes exceeds maximum allowed size of 10 bytes") {
		t.Fatalf("declared: %v", err)
	}
	// Sent without a length (chunked): refused once read past the limit.
	r = request("POST", "/x", "text/plain", strings.Repeat("a", 100))
	r.ContentLength = -1
	if _, err := Read(context.Background(), r, w, 10, nil); !errors.As(err, &re) || re.Status != 413 {
		t.Fatalf("chunked: %v", err)
	}
}
