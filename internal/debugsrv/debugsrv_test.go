package debugsrv

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestServesProfiles(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "parley_up 1\n") })
	s, err := Start("127.0.0.1:0", slog.New(slog.DiscardHandler), metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	for path, want := range map[string]string{
		"/":                         "/metrics",
		"/debug/pprof/":             "goroutine",
		"/debug/pprof/heap?debug=1": "heap profile",
		"/debug/pprof/cmdline":      "",
		"/metrics":                  "parley_up 1",
	} {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %.200s", path, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(s.URL + "/v1/parameters")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("the admin listener serves the API: %d", resp.StatusCode)
	}
}

func TestNoMetricsWithoutThem(t *testing.T) {
	s, err := Start("127.0.0.1:0", slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /metrics without metrics: %d", resp.StatusCode)
	}
}
