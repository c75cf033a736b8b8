package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
)

func stubSites(sites ...PageSite) SiteFinder {
	return SiteFinderFunc(func(_ context.Context, code string) (PageSite, error) {
		for _, s := range sites {
			if s.Code == code {
				return s, nil
			}
		}
		return PageSite{}, ErrNoSite
	})
}

func pageRequest(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// TestPages serves the pages through the server's Echo: the shell of each kind with the site's
// code, mode and title escaped, the headers (CSP, nosniff, referrer policy, frame-ancestors from
// the allowed origins), a redirect to the page of the app's kind, 404 pages for unknown codes,
// the hashed assets with immutable caching, and /embed.min.js.
func TestPages(t *testing.T) {
	e, _, err := New(Options{PageSites: stubSites(
		PageSite{Code: "chat123", Mode: "advanced-chat", Title: `Help <script>alert(1)</script> & "desk"`, DefaultLanguage: "en-US"},
		PageSite{Code: "embed1", Mode: "chat", Title: "Bubble", AllowedOrigins: []string{"https://shop.example", "http://127.0.0.1:8081/", "javascript:alert(1)", "https://x.example; script-src *"}},
		PageSite{Code: "flow1", Mode: "workflow", Title: "Flow"},
	)})
	if err != nil {
		t.Fatal(err)
	}

	rec := pageRequest(t, e, "GET", "/chat/chat123")
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("chat page: %d %s", rec.Code, body)
	}
	for _, want := range []string{`data-code="chat123"`, `data-page="chat"`, `data-mode="advanced-chat"`, `lang="en-US"`,
		`<title>Help &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;desk&#34;</title>`, `<script type="module" src="../web-assets/app-`} {
		if !strings.Contains(body, want) {
			t.Errorf("chat page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Fatalf("title not escaped:\n%s", body)
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP lacks %q: %s", want, csp)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP allows unsafe sources: %s", csp)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Referrer-Policy") != "no-referrer" || rec.Header().Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: %v", rec.Header())
	}

	// The embedded variant may be framed by the listed origins, and only the well-formed ones.
	rec = pageRequest(t, e, "GET", "/chatbot/embed1?name=H4sIAAAAAAAAA")
	csp = rec.Header().Get("Content-Security-Policy")
	if rec.Code != 200 || !strings.HasSuffix(csp, "frame-ancestors https://shop.example http://127.0.0.1:8081") || rec.Header().Get("X-Frame-Options") != "" {
		t.Fatalf("chatbot page: %d %s %v", rec.Code, csp, rec.Header())
	}
	if !strings.Contains(rec.Body.String(), `data-page="chatbot"`) {
		t.Fatalf("chatbot page: %s", rec.Body)
	}

	// Each app kind has its page; another kind's path redirects to it, the query kept.
	rec = pageRequest(t, e, "GET", "/chat/flow1?x=1")
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "../workflow/flow1?x=1" {
		t.Fatalf("redirect: %d %v", rec.Code, rec.Header())
	}
	if rec = pageRequest(t, e, "GET", "/chatbot/flow1"); rec.Code != http.StatusFound || rec.Header().Get("Location") != "../workflow/flow1" {
		t.Fatalf("chatbot of a workflow: %d %v", rec.Code, rec.Header())
	}
	if rec = pageRequest(t, e, "GET", "/workflow/flow1"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `data-page="workflow"`) {
		t.Fatalf("workflow page: %d %s", rec.Code, rec.Body)
	}
	if rec = pageRequest(t, e, "GET", "/chat/chat123/"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "../chat123" {
		t.Fatalf("trailing slash: %d %v", rec.Code, rec.Header())
	}

	// Unknown, malformed and nested codes are a plain 404 page with the same policy.
	for _, path := range []string{"/chat/nope", "/completion/nope", "/chat/bad%20code", "/chat/", "/workflow/a/b"} {
		rec = pageRequest(t, e, "GET", path)
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), "not available") || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec = pageRequest(t, e, "POST", "/chat/chat123"); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST page: %d", rec.Code)
	}
	if rec = pageRequest(t, e, "HEAD", "/chat/chat123"); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Fatalf("HEAD page: %d %d", rec.Code, rec.Body.Len())
	}

	// Assets: hashed names, cached for good; anything else is not found.
	p, err := newPages(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{p.script, p.style} {
		rec = pageRequest(t, e, "GET", AssetsPath+name)
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: %d %v", name, rec.Code, rec.Header())
		}
	}
	if ct := pageRequest(t, e, "GET", AssetsPath+p.script).Header().Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
		t.Fatalf("script type %q", ct)
	}
	for _, path := range []string{AssetsPath + "nope.js", AssetsPath + "../manifest.json", AssetsPath, AssetsPath + "..%2fmanifest.json"} {
		if rec = pageRequest(t, e, "GET", path); rec.Code != 404 {
			t.Errorf("%s: %d", path, rec.Code)
		}
	}
	rec = pageRequest(t, e, "GET", EmbedScriptPath)
	raw, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") || !strings.Contains(string(raw), "difyChatbotConfig") {
		t.Fatalf("embed.min.js: %d %v", rec.Code, rec.Header())
	}

	// The API is still the API.
	if rec = pageRequest(t, e, "GET", "/v1/parameters"); rec.Code != 401 {
		t.Fatalf("API behind the pages: %d %s", rec.Code, rec.Body)
	}
}

func TestFramingOrigins(t *testing.T) {
	got := framingOrigins([]string{"*", "https://a.example", "https://*.b.example:8443", "ftp://c", "https://d.example/path", "'self'", "https://e.example 'unsafe-inline'"})
	want := []string{"*", "https://a.example", "https://*.b.example:8443", "'self'"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v", got)
	}
	if csp := PageCSP(nil); !strings.HasSuffix(csp, "frame-ancestors 'none'") {
		t.Fatal(csp)
	}
}

// TestFileUploadParameters: an app that takes files says which in GET /parameters, in Dify's
// shape, so its page offers the upload.
func TestFileUploadParameters(t *testing.T) {
	got := fileUploadParameters(apps.FileUpload{Enabled: true, AllowedFileTypes: []string{"image"}, AllowedUploadMethods: []string{"local_file"}, NumberLimits: 3})
	raw, _ := json.Marshal(got)
	want := `{"allowed_file_extensions":[],"allowed_file_types":["image"],"allowed_file_upload_methods":["local_file"],"enabled":true,` +
		`"image":{"detail":"high","enabled":false,"number_limits":3,"transfer_methods":["remote_url","local_file"]},"number_limits":3}`
	if string(raw) != want {
		t.Fatalf("file_upload\n got %s\nwant %s", raw, want)
	}
}
