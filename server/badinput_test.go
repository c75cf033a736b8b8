package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestClientMistakesAre4xx sends what used to end in a 500: validation failures nested in a
// nullable member, values the validator accepts but Go types cannot hold, duplicate and
// case-variant member names, an empty `user`, a multipart body without a boundary, and text the
// database cannot store. Each is a 4xx with the Error body, and nothing reaches a handler (the
// fixture has no knowledge service: a request that got through would panic into a 500).
func TestClientMistakesAre4xx(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	const ds = "/v1/datasets/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"
	const msg = "/v1/messages/8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22"
	chat := func(body string) string { return `{"inputs":{},"response_mode":"blocking",` + body + `}` }
	for _, tc := range []struct {
		name              string
		method, path, ct  string
		body              string
		app               bool
		status            int
		code, msgContains string
	}{
		{"permission out of its enum", "POST", "/v1/datasets", "application/json", `{"name":"a","permission":"everyone"}`, false, 400, "invalid_param", "permission: value is not one of the allowed values"},
		{"nested search_method out of its enum", "POST", "/v1/datasets", "application/json", `{"name":"b","retrieval_model":{"search_method":"psychic"}}`, false, 400, "invalid_param", "retrieval_model.search_method"},
		{"update permission out of its enum", "PATCH", ds, "application/json", `{"permission":"x"}`, false, 400, "invalid_param", "permission"},
		{"retrieve search_method out of its enum", "POST", ds + "/retrieve", "application/json", `{"query":"q","retrieval_model":{"search_method":"psychic"}}`, false, 400, "invalid_param", "retrieval_model.search_method"},
		{"retrieve score_threshold a string", "POST", ds + "/retrieve", "application/json", `{"query":"q","retrieval_model":{"score_threshold":"x"}}`, false, 400, "invalid_param", "retrieval_model.score_threshold"},
		{"retrieve score_threshold past float64", "POST", ds + "/retrieve", "application/json", `{"query":"q","retrieval_model":{"score_threshold":1e400}}`, false, 400, "invalid_param", ""},
		{"top_k past int64", "POST", ds + "/retrieve", "application/json", `{"query":"q","retrieval_model":{"top_k":9223372036854775808}}`, false, 400, "invalid_param", ""},
		{"duplicate query", "POST", "/v1/chat-messages", "application/json", `{"query":5,"query":"x","inputs":{},"user":"u"}`, true, 400, "invalid_param", `duplicate key "query"`},
		{"duplicate nested member", "POST", "/v1/datasets", "application/json", `{"name":"c","retrieval_model":{"top_k":1,"top_k":2}}`, false, 400, "invalid_param", `retrieval_model: duplicate key "top_k"`},
		{"case variant of user", "POST", "/v1/chat-messages", "application/json", chat(`"query":"x","user":"u","USER":""`), true, 400, "invalid_param", `unknown member "USER"`},
		{"data after the body", "POST", "/v1/chat-messages", "application/json", chat(`"query":"x","user":"u"`) + ` {}`, true, 400, "bad_request", ""},
		{"empty user", "POST", "/v1/chat-messages", "application/json", chat(`"query":"x","user":""`), true, 400, "invalid_param", msgUserRequired},
		{"missing user", "POST", "/v1/chat-messages", "application/json", chat(`"query":"x"`), true, 400, "invalid_param", msgUserRequired},
		{"empty user on stop", "POST", "/v1/chat-messages/t1/stop", "application/json", `{"user":""}`, true, 400, "invalid_param", msgUserRequired},
		{"empty user on feedback", "POST", msg + "/feedbacks", "application/json", `{"rating":"like","user":""}`, true, 400, "invalid_param", msgUserRequired},
		{"empty user in the query", "GET", msg + "/suggested?user=", "", "", true, 400, "invalid_param", msgUserRequired},
		{"multipart without boundary", "POST", "/v1/files/upload", "multipart/form-data", "--x--\r\n", true, 400, "bad_request", ""},
		{"multipart with an empty boundary", "POST", "/v1/files/upload", "multipart/form-data; boundary=", "--x--\r\n", true, 400, "bad_request", ""},
		{"NUL in a body string", "POST", "/v1/datasets/tags", "application/json", `{"name":"a\u0000b"}`, false, 400, "invalid_param", "name: NUL characters"},
		{"NUL in a member name", "POST", "/v1/chat-messages", "application/json", `{"query":"x","user":"u","inputs":{"a\u0000":1}}`, true, 400, "invalid_param", "NUL characters"},
		{"NUL in the query", "GET", "/v1/datasets?keyword=a%00", "", "", false, 400, "invalid_param", "keyword: NUL characters"},
		{"invalid UTF-8 in the query", "GET", "/v1/datasets?keyword=%ff", "", "", false, 400, "invalid_param", "keyword"},
		{"NUL in the path", "GET", "/v1/datasets/a%00b", "", "", false, 404, "not_found", ""},
		{"invalid UTF-8 in the path", "DELETE", "/v1/datasets/%ff", "", "", false, 404, "not_found", ""},
		{"NUL in a form field", "POST", "/v1/files/upload", "multipart/form-data; boundary=b",
			"--b\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\na\x00b\r\n--b--\r\n", true, 400, "invalid_param", "user: NUL characters"},
		{"page past int64", "GET", "/v1/datasets?page=9223372036854775808", "", "", false, 400, "invalid_param", "page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := f.kbKey
			if tc.app {
				key = f.appKey
			}
			rec := f.do(tc.method, tc.path, key, tc.ct, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			code, message := decodeErr(t, rec)
			if code != tc.code || !strings.Contains(message, tc.msgContains) {
				t.Fatalf("got %s %q, want %s containing %q", code, message, tc.code, tc.msgContains)
			}
		})
	}
	if n := f.srv.Violations(); n != 0 {
		t.Fatalf("%d contract violations", n)
	}
}

// TestNoKeyBeatsBadBody keeps authentication first: a body the scan refuses still gets 401
// without a key.
func TestNoKeyBeatsBadBody(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	rec := f.do("POST", "/v1/chat-messages", "", "application/json", `{"query":5,"query":"x"}`)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401: %s", rec.Code, rec.Body)
	}
}

// TestHeadIsNotAViolation: HEAD, which no operation declares, gets its 405 without a body; the
// response validator used to find that empty body "not JSON" and, enforcing, turn it into a 500.
func TestHeadIsNotAViolation(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	rec := f.do("HEAD", "/v1/info", f.appKey, "", "")
	if rec.Code != http.StatusMethodNotAllowed || rec.Body.Len() != 0 || rec.Header().Get("Allow") != "GET" {
		t.Fatalf("HEAD: %d %q Allow %q", rec.Code, rec.Body, rec.Header().Get("Allow"))
	}
	if n := f.srv.Violations(); n != 0 {
		t.Fatalf("%d contract violations", n)
	}
}
