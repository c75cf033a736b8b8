package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// recorder is a server that answers every request with an empty JSON object and records the
// path and Authorization header of the last one.
type recorder struct {
	*httptest.Server
	path, auth string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.path, r.auth = req.URL.Path, req.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(r.Close)
	return r
}

// TestNewBaseURL checks that the base address reaches the /v1 API with or without /v1 and
// trailing slashes, and under a path prefix.
func TestNewBaseURL(t *testing.T) {
	srv := newRecorder(t)
	for suffix, want := range map[string]string{
		"":            "/v1/parameters",
		"/":           "/v1/parameters",
		"/v1":         "/v1/parameters",
		"/v1/":        "/v1/parameters",
		"/v1//":       "/v1/parameters",
		"/parley":     "/parley/v1/parameters",
		"/parley/v1/": "/parley/v1/parameters",
	} {
		c, err := client.New(srv.URL + suffix)
		if err != nil {
			t.Fatalf("New(%q): %v", srv.URL+suffix, err)
		}
		if _, err := c.GetAppParametersWithResponse(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if srv.path != want {
			t.Errorf("New(%q) requested %s, want %s", srv.URL+suffix, srv.path, want)
		}
		// The service greeting is the API's root.
		if _, err := c.GetServiceInfoWithResponse(context.Background()); err != nil {
			t.Fatal(err)
		}
		if root := strings.TrimSuffix(want, "parameters"); srv.path != root {
			t.Errorf("New(%q) greeting at %s, want %s", srv.URL+suffix, srv.path, root)
		}
	}
}

// TestNewBaseURLOption checks that an address given with WithBaseURL is normalised as well.
func TestNewBaseURLOption(t *testing.T) {
	srv := newRecorder(t)
	c, err := client.New("http://127.0.0.1:9", client.WithBaseURL(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetAppParametersWithResponse(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if srv.path != "/v1/parameters" {
		t.Errorf("requested %s, want /v1/parameters", srv.path)
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:5001", "ftp://example.test", "http://", "http://example.test/v1?x=1", "http://example.test/#v1", "http://[::1"} {
		if _, err := client.New(bad); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
}

func TestWithAPIKey(t *testing.T) {
	srv := newRecorder(t)
	c, err := client.New(srv.URL, client.WithAPIKey("app-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.GetAppParametersWithResponse(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if srv.auth != "Bearer app-secret" {
		t.Errorf("Authorization %q, want %q", srv.auth, "Bearer app-secret")
	}

	// An editor of one call runs after the client's and can send another key.
	other := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer app-other")
		return nil
	}
	if _, err := c.GetAppParametersWithResponse(ctx, nil, other); err != nil {
		t.Fatal(err)
	}
	if srv.auth != "Bearer app-other" {
		t.Errorf("Authorization %q with a per-call editor, want %q", srv.auth, "Bearer app-other")
	}

	// The generated constructor takes the option too.
	g, err := client.NewClient(srv.URL+"/v1", client.WithAPIKey("app-generated"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := g.GetAppParameters(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if srv.auth != "Bearer app-generated" {
		t.Errorf("Authorization %q through NewClient, want %q", srv.auth, "Bearer app-generated")
	}

	if _, err := client.New(srv.URL, client.WithAPIKey("")); err == nil {
		t.Error("an empty key was accepted")
	}
}
