package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestAccessLogAndRequestID: every request gets one access line (method, route template,
// status, duration) carrying its request id, which the response sends back in X-Request-Id: the
// client's own when it is sane, a new UUID otherwise.
func TestAccessLogAndRequestID(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	f := newFixtureLogging(t, ValidationEnforce, &logs)
	send := func(path, key, id string) (*httptest.ResponseRecorder, map[string]any) {
		t.Helper()
		logs.Reset()
		req := httptest.NewRequest("GET", path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if id != "" {
			req.Header.Set("X-Request-Id", id)
		}
		rec := httptest.NewRecorder()
		f.e.ServeHTTP(rec, req)
		var line map[string]any
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
				if line != nil {
					t.Fatalf("two access lines:\n%s", logs.String())
				}
				line = m
			}
		}
		if line == nil {
			t.Fatalf("no access line for %s:\n%s", path, logs.String())
		}
		if _, ok := line["duration_ms"].(float64); !ok || line["method"] != "GET" {
			t.Fatalf("access line %v", line)
		}
		if got := rec.Header().Get("X-Request-Id"); got == "" || line["request_id"] != got {
			t.Fatalf("X-Request-Id %q, access line %v", got, line)
		}
		return rec, line
	}

	rec, line := send("/v1/parameters", f.appKey, "trace-42.a:b_C")
	if rec.Code != 200 || rec.Header().Get("X-Request-Id") != "trace-42.a:b_C" || line["route"] != "/v1/parameters" || line["status"] != 200.0 {
		t.Fatalf("%d %v", rec.Code, line)
	}
	// The route is the template, not the request's ids.
	rec, line = send("/v1/workspaces/current/models/model-types/llm", f.kbKey, "")
	if rec.Code != 200 || line["route"] != "/v1/workspaces/current/models/model-types/:model_type" || line["status"] != 200.0 {
		t.Fatalf("%d %v", rec.Code, line)
	}
	if _, err := uuid.Parse(rec.Header().Get("X-Request-Id")); err != nil {
		t.Fatalf("generated id %q: %v", rec.Header().Get("X-Request-Id"), err)
	}
	// An unauthenticated request is logged too, with its status, and so is one to no route.
	if rec, line = send("/v1/parameters", "", "abc"); rec.Code != 401 || line["status"] != 401.0 {
		t.Fatalf("%d %v", rec.Code, line)
	}
	if rec, line = send("/v1/nowhere", f.appKey, ""); rec.Code != 404 || line["status"] != 404.0 || line["code"] != "not_found" {
		t.Fatalf("%d %v", rec.Code, line)
	}
	// A refused request carries its error code, and the app's name when an app key was used.
	if rec, line = send("/v1/parameters", "", ""); line["code"] != "unauthorized" || line["app"] != nil {
		t.Fatalf("%d %v", rec.Code, line)
	}
	if rec, line = send("/v1/messages?conversation_id=not-a-uuid", f.appKey, ""); rec.Code/100 != 4 || line["code"] == nil || line["code"] == "" || line["app"] != "chatbot" {
		t.Fatalf("%d %s %v", rec.Code, rec.Body, line)
	}
	// A successful request's line has neither.
	if _, line = send("/v1/parameters", f.appKey, ""); line["code"] != nil || line["app"] != nil {
		t.Fatalf("%v", line)
	}
	// An id that is too long or has other characters is replaced.
	for _, bad := range []string{strings.Repeat("a", 129), "has space", "näive", "a\"b", "x<y>"} {
		rec, _ := send("/v1/parameters", f.appKey, bad)
		if got := rec.Header().Get("X-Request-Id"); got == bad {
			t.Fatalf("kept %q", bad)
		} else if _, err := uuid.Parse(got); err != nil {
			t.Fatalf("replacement of %q is %q", bad, got)
		}
	}
	if !saneRequestID(strings.Repeat("a", 128)) {
		t.Fatal("128 characters refused")
	}
}
