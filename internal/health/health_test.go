package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/internal/health"
)

func get(t *testing.T, h http.Handler, method, path string) (int, health.Status) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	var st health.Status
	if method == http.MethodGet && rec.Code != http.StatusMethodNotAllowed {
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%s %s: %v (%q)", method, path, err, rec.Body.String())
		}
	}
	return rec.Code, st
}

func TestProbes(t *testing.T) {
	var redisDown atomic.Bool
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := health.Handler(api, nil,
		health.Check{Name: "database", Ping: func(context.Context) error { return nil }},
		health.Check{Name: "redis", Ping: func(context.Context) error {
			if redisDown.Load() {
				return errors.New("connection refused")
			}
			return nil
		}})

	if code, st := get(t, h, "GET", "/health"); code != 200 || st.Status != "ok" {
		t.Fatalf("/health = %d %+v", code, st)
	}
	code, st := get(t, h, "GET", "/ready")
	if want := (health.Status{Status: "ready", Checks: map[string]string{"database": "up", "redis": "up"}}); code != 200 || !reflect.DeepEqual(st, want) {
		t.Fatalf("/ready = %d %+v", code, st)
	}
	redisDown.Store(true)
	code, st = get(t, h, "GET", "/ready")
	if want := (health.Status{Status: "unavailable", Checks: map[string]string{"database": "up", "redis": "down"}}); code != 503 || !reflect.DeepEqual(st, want) {
		t.Fatalf("/ready with redis down = %d %+v", code, st)
	}
	// Liveness does not depend on the dependencies.
	if code, _ := get(t, h, "GET", "/health"); code != 200 {
		t.Fatalf("/health with redis down = %d", code)
	}
	if code, _ := get(t, h, "HEAD", "/ready"); code != 503 {
		t.Fatalf("HEAD /ready = %d", code)
	}
	redisDown.Store(false)
	if code, _ := get(t, h, "GET", "/ready"); code != 200 {
		t.Fatalf("/ready after recovery = %d", code)
	}
	if code, _ := get(t, h, "POST", "/ready"); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ready = %d", code)
	}
	if code, _ := get(t, h, "POST", "/v1/chat-messages"); code != http.StatusTeapot {
		t.Fatalf("other paths go to the API: %d", code)
	}
}
