package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// apiErr is the contract's Error body.
type apiErr struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

type call struct {
	method, path string
	key          string
	contentType  string
	body         io.Reader
}

func (p *Parley) do(t *testing.T, hc *http.Client, c call) (*http.Response, apiErr) {
	t.Helper()
	req, err := http.NewRequest(c.method, p.URL+c.path, c.body)
	if err != nil {
		t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", c.key)
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e apiErr
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: error with Content-Type %q, want application/json; body %q", c.method, c.path, ct, raw)
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Errorf("%s %s: error body is not JSON: %q", c.method, c.path, raw)
		}
		if e.Status != resp.StatusCode {
			t.Errorf("%s %s: body status %d, HTTP status %d", c.method, c.path, e.Status, resp.StatusCode)
		}
	}
	return resp, e
}

// TestBadInput sends what real clients get wrong and checks each gets the Error body with the
// right status and code (and that the message names the offending field where it is one).
func TestBadInput(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		app, kb := "Bearer "+p.AppKey, "Bearer "+p.KnowledgeKey
		const models = "/workspaces/current/models/model-types/llm"
		okChat := `{"query":"hi","inputs":{},"user":"u1"}`
		for _, tc := range []struct {
			name        string
			c           call
			status      int
			code        string
			msgContains string
		}{
			{"no key", call{method: "GET", path: models}, 401, "unauthorized", "Authorization header must be provided"},
			{"not bearer", call{method: "GET", path: models, key: "Basic " + p.KnowledgeKey}, 401, "unauthorized", "Bearer"},
			{"bearer without token", call{method: "GET", path: models, key: "Bearer"}, 401, "unauthorized", ""},
			{"unknown key", call{method: "GET", path: models, key: "Bearer dataset-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, 401, "unauthorized", "Access token is invalid"},
			{"malformed key", call{method: "GET", path: models, key: "Bearer nonsense"}, 401, "unauthorized", "Access token is invalid"},
			{"app key on knowledge route", call{method: "GET", path: models, key: app}, 401, "unauthorized", "Access token is invalid"},
			{"knowledge key on app route", call{method: "POST", path: "/chat-messages", key: kb, contentType: "application/json", body: strings.NewReader(okChat)}, 401, "unauthorized", "Access token is invalid"},
			{"no key beats bad body", call{method: "POST", path: "/chat-messages", contentType: "application/json", body: strings.NewReader("{")}, 401, "unauthorized", ""},
			{"unknown route", call{method: "GET", path: "/no-such-thing", key: kb}, 404, "not_found", ""},
			{"unknown route without key", call{method: "GET", path: "/no-such-thing"}, 404, "not_found", ""},
			{"wrong method", call{method: "POST", path: models, key: kb, contentType: "application/json", body: strings.NewReader("{}")}, 405, "method_not_allowed", ""},
			{"invalid model_type enum", call{method: "GET", path: "/workspaces/current/models/model-types/chat", key: kb}, 400, "invalid_param", "model_type"},
			{"malformed JSON", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"query":`)}, 400, "bad_request", ""},
			{"empty JSON body", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader("")}, 400, "bad_request", ""},
			{"wrong content type", call{method: "POST", path: "/chat-messages", key: app, contentType: "text/plain", body: strings.NewReader(okChat)}, 415, "unsupported_media_type", ""},
			{"missing query", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"inputs":{},"user":"u1"}`)}, 400, "invalid_param", "query"},
			{"missing user", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"query":"hi","inputs":{}}`)}, 400, "invalid_param", "user"},
			{"inputs not an object", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"query":"hi","inputs":[],"user":"u1"}`)}, 400, "invalid_param", "inputs"},
			{"invalid response_mode enum", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"query":"hi","inputs":{},"user":"u1","response_mode":"fast"}`)}, 400, "invalid_param", "response_mode"},
			{"invalid file type enum", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"query":"hi","inputs":{},"user":"u1","files":[{"type":"pdf","transfer_method":"local_file","upload_file_id":"x"}]}`)}, 400, "invalid_param", "type"},
			{"oversized JSON body", call{method: "POST", path: "/chat-messages", key: app, contentType: "application/json", body: strings.NewReader(`{"query":"` + strings.Repeat("a", 2<<20) + `","inputs":{},"user":"u1"}`)}, 413, "request_entity_too_large", ""},
			{"oversized upload", call{method: "POST", path: "/datasets/ds/documents/doc/update-by-file", key: kb, contentType: "", body: nil}, 413, "file_too_large", ""},
			{"variables of a conversation id that is no UUID", call{method: "GET", path: "/conversations/c1/variables?user=u1", key: app}, 404, "not_found", "Conversation Not Exists."},
			{"variables limit out of range", call{method: "GET", path: "/conversations/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11/variables?user=u1&limit=0", key: app}, 400, "invalid_param", "limit"},
			{"variables of a knowledge key", call{method: "GET", path: "/conversations/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11/variables", key: kb}, 401, "unauthorized", "Access token is invalid"},
			{"variable update without value", call{method: "PUT", path: "/conversations/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11/variables/8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22", key: app, contentType: "application/json", body: strings.NewReader(`{"user":"u1"}`)}, 400, "invalid_param", "value"},
			{"variable update of an unknown conversation", call{method: "PUT", path: "/conversations/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11/variables/8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22", key: app, contentType: "application/json", body: strings.NewReader(`{"value":"x","user":"u1"}`)}, 404, "not_found", "Conversation Not Exists."},
			// Tool file links need no key, only a valid signature.
			{"tool file without signature", call{method: "GET", path: "/files/tools/f.png?timestamp=1&nonce=n"}, 400, "invalid_param", "sign"},
			{"tool file forged signature", call{method: "GET", path: "/files/tools/f.png?timestamp=1&nonce=n&sign=AAAA"}, 403, "forbidden", ""},
			{"tool file forged signature with a key", call{method: "GET", path: "/files/tools/f.png?timestamp=1&nonce=n&sign=AAAA", key: app}, 403, "forbidden", ""},
			{"tool file name too long", call{method: "GET", path: "/files/tools/" + strings.Repeat("f", 81) + "?timestamp=1&nonce=n&sign=AAAA"}, 400, "invalid_param", "file"},
			{"tool file wrong method", call{method: "POST", path: "/files/tools/f.png?timestamp=1&nonce=n&sign=AAAA", contentType: "application/json", body: strings.NewReader("{}")}, 405, "method_not_allowed", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := tc.c
				if tc.name == "oversized upload" {
					c.body, c.contentType = bigUpload(t, 21<<20) // over the largest upload limit (20 MB)
				}
				resp, e := p.do(t, hc, c)
				if resp.StatusCode != tc.status || e.Code != tc.code {
					t.Fatalf("got %d %q (%q), want %d %q", resp.StatusCode, e.Code, e.Message, tc.status, tc.code)
				}
				if !strings.Contains(e.Message, tc.msgContains) {
					t.Errorf("message %q does not mention %q", e.Message, tc.msgContains)
				}
				if tc.status == 401 && resp.Header.Get("WWW-Authenticate") != `Bearer realm="api"` {
					t.Errorf("401 without WWW-Authenticate: %q", resp.Header.Get("WWW-Authenticate"))
				}
				if tc.status == 405 && resp.Header.Get("Allow") != "GET" {
					t.Errorf("405 Allow header %q, want GET", resp.Header.Get("Allow"))
				}
			})
		}
	})
}

// TestRevokedKey revokes a key through the CLI while the server runs: the next request with
// it is refused at once.
func TestRevokedKey(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		key := p.CLI(t, "keys", "create", "--knowledge")
		get := call{method: "GET", path: "/workspaces/current/models/model-types/llm", key: "Bearer " + key}
		if resp, e := p.do(t, hc, get); resp.StatusCode != 200 {
			t.Fatalf("fresh key refused: %d %+v", resp.StatusCode, e)
		}
		id := ""
		for _, line := range strings.Split(p.CLI(t, "keys", "list"), "\n") {
			f := strings.Fields(line)
			if len(f) >= 4 && f[1] == "dataset" && strings.HasPrefix(key, strings.TrimSuffix(f[3], "…")) {
				id = f[0]
			}
		}
		if id == "" {
			t.Fatalf("key not in `keys list`")
		}
		p.CLI(t, "keys", "revoke", id)
		if resp, e := p.do(t, hc, get); resp.StatusCode != 401 || e.Code != "unauthorized" {
			t.Fatalf("revoked key: got %d %+v, want 401 unauthorized", resp.StatusCode, e)
		}
		// The other knowledge key still works.
		get.key = "Bearer " + p.KnowledgeKey
		if resp, e := p.do(t, hc, get); resp.StatusCode != 200 {
			t.Fatalf("other key refused after revoke: %d %+v", resp.StatusCode, e)
		}
	})
}

// bigUpload builds a multipart body with a file part of size bytes.
func bigUpload(t *testing.T, size int) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("data", `{"process_rule":{"mode":"automatic"}}`); err != nil {
		t.Fatal(err)
	}
	fw, err := mw.CreateFormFile("file", "big.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte("x"), size)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

// newRequest builds a JSON request with an app or knowledge key.
func newRequest(method, url, body, key string) (*http.Request, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return req, nil
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
