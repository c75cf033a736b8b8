package builtin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newPageServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<html><head><title>T</title><script>alert(1)</script></head><body>
<h1>Hello</h1><p>Some <b>bold</b> text and <a href="/next">a link</a>.</p><ul><li>one</li><li>two</li></ul>
<p>UA=` + r.UserAgent() + `</p></body></html>`))
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("just text"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 64 {
			if _, err := w.Write([]byte(strings.Repeat("x", 1024))); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG"))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/hang", func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func urlArgs(t *testing.T, u string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"url": u})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWebScraper(t *testing.T) {
	t.Parallel()
	srv, _ := newPageServer(t)
	s := New(Options{AllowPrivateNetworks: true, MaxPageBytes: 10 << 10, PageTimeout: 2 * time.Second})

	res := call(t, s, "webscraper", "webscraper", map[string]any{"user_agent": "agent-007"}, urlArgs(t, srv.URL+"/page"))
	if res.IsError {
		t.Fatalf("page: %s", res.Text)
	}
	for _, want := range []string{"# Hello", "**bold**", "[a link](", "- one", "UA=agent-007"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("page Markdown lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "alert(1)") {
		t.Errorf("script text leaked into the Markdown:\n%s", res.Text)
	}
	wantText(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/plain")), "just text")

	big := call(t, s, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/big"))
	if big.IsError || !strings.HasPrefix(big.Text, strings.Repeat("x", 10<<10)+"\n") || !strings.Contains(big.Text, "cut off after 10240 bytes") || strings.Count(big.Text, "x") != 10<<10 {
		t.Errorf("big page: IsError %v, %d bytes, ends %q", big.IsError, len(big.Text), big.Text[max(0, len(big.Text)-60):])
	}
	wantError(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/image")), "not text or HTML")
	wantError(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/fail")), "500")
	wantError(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/to-file")), `redirect to a "file" URL`)
	wantError(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/loop")), "redirects")
	impatient := New(Options{AllowPrivateNetworks: true, PageTimeout: 50 * time.Millisecond})
	wantError(t, call(t, impatient, "webscraper", "webscraper", nil, urlArgs(t, srv.URL+"/hang")), "no complete answer")
	for _, bad := range []string{"", "not a url", "/relative", "ftp://example.com/", "file:///etc/passwd", "http://", "javascript:alert(1)"} {
		wantError(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, bad)), "bad arguments")
	}
}

// TestWebScraperRefusesInternalAddresses: with the default options the guard refuses loopback,
// by address and by name, and private ranges; the server never sees a request.
func TestWebScraperRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	srv, hits := newPageServer(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{PageTimeout: 2 * time.Second})
	for _, raw := range []string{
		srv.URL + "/page",
		"http://localhost:" + u.Port() + "/page",
		"http://[::1]:" + u.Port() + "/page",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/",
		"http://0.0.0.0:" + u.Port() + "/page",
	} {
		wantError(t, call(t, s, "webscraper", "webscraper", nil, urlArgs(t, raw)), "not allowed")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
	// The package-level set is guarded too.
	tool, err := Lookup("webscraper", "webscraper", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Invoke(t.Context(), json.RawMessage(urlArgs(t, srv.URL+"/page")))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "not allowed") {
		t.Errorf("default set: %+v, %v", res, err)
	}
}
