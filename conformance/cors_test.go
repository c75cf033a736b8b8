package conformance

import (
	"net/http"
	"strings"
	"testing"
)

// A page on another origin may call the Service API and the MCP endpoints with a key, as it may
// call Dify's: preflights are answered, responses (errors too) are readable and expose the
// headers a client needs; requests without an Origin, and other paths, get no CORS headers.
func TestCrossOriginRequests(t *testing.T) {
	p := startParley(t, "sqlite")
	const origin = "https://app.example.com"
	preflight := func(path, method, headers string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodOptions, path, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", method)
		req.Header.Set("Access-Control-Request-Headers", headers)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{p.URL + "/chat-messages", p.URL + "/datasets/x/documents/y", p.URL + "/chat/completions"} {
		resp := preflight(path, "POST", "authorization,content-type,idempotency-key")
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Idempotency-Key") ||
			h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight of %s: %d %v", path, resp.StatusCode, h)
		}
	}

	call := func(key string, withOrigin bool) *http.Response {
		t.Helper()
		req, err := newRequest("GET", p.URL+"/parameters", "", key)
		if err != nil {
			t.Fatal(err)
		}
		req.Body, req.ContentLength = nil, 0
		if withOrigin {
			req.Header.Set("Origin", origin)
		}
		resp, _ := rawDo(t, req)
		return resp
	}
	for _, key := range []string{p.AppKey, "app-not-a-key"} {
		resp := call(key, true)
		h := resp.Header
		if h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "X-RateLimit-Remaining") {
			t.Errorf("GET /parameters (%d) from another origin: %v", resp.StatusCode, h)
		}
	}
	if resp := call(p.AppKey, false); resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("same-origin request: %d %v", resp.StatusCode, resp.Header)
	}

	// The MCP endpoints: the SDKs' browser transports send their session headers.
	mcp := strings.TrimSuffix(p.URL, "/v1") + "/mcp/server/nope/mcp"
	if h := preflight(mcp, "POST", "content-type,mcp-protocol-version,mcp-session-id").Header; h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
		t.Errorf("MCP preflight: %v", h)
	}
	// Other paths keep their own rules.
	if h := preflight(strings.TrimSuffix(p.URL, "/v1")+"/health", "GET", "").Header; h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a probe answered a preflight: %v", h)
	}
}
