package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/knowledge"
)

// TestErrorDialects: an error is written in the dialect of its path — the Error body, OpenAI's
// error object, or the External Knowledge API's {error_code, error_msg} with Dify's codes and
// statuses — and only a 401 that stays a 401 asks for credentials.
func TestErrorDialects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		err        error
		status     int
		body       string
	}{
		{"error body", BasePath + "/datasets", errInvalidParam("name: required"), 400,
			`{"code":"invalid_param","message":"name: required","status":400}`},
		{"openai", BasePath + "/chat/completions", errUnauthorized(msgInvalidToken), 401,
			`{"error":{"code":"invalid_api_key","message":"Access token is invalid","param":null,"type":"authentication_error"}}`},
		{"no bearer", BasePath + "/external-knowledge/retrieval", mapError(fmt.Errorf("key: %w", auth.ErrMissingBearer)), 403,
			`{"error_code":1001,"error_msg":"Invalid Authorization header format. Expected 'Bearer \u003capi-key\u003e' format."}`},
		{"not bearer", BasePath + "/external-knowledge/retrieval", mapError(auth.ErrBearerScheme), 403,
			`{"error_code":1001,"error_msg":"Invalid Authorization header format. Expected 'Bearer \u003capi-key\u003e' format."}`},
		{"bad key", BasePath + "/external-knowledge/retrieval", mapError(auth.ErrInvalidKey), 403,
			`{"error_code":1002,"error_msg":"Authorization failed"}`},
		{"api disabled", BasePath + "/external-knowledge/retrieval", mapError(knowledge.ErrAPIDisabled), 403,
			`{"error_code":1002,"error_msg":"Authorization failed: Dataset api access is not enabled."}`},
		{"no knowledge", BasePath + "/external-knowledge/retrieval", mapError(knowledge.ErrKnowledgeNotFound), 404,
			`{"error_code":2001,"error_msg":"The knowledge does not exist."}`},
		{"unknown route", BasePath + "/external-knowledge/other", apiError(http.StatusNotFound, "not_found", msgNotFoundURL), 404,
			`{"error_code":404,"error_msg":"` + msgNotFoundURL + `"}`},
		{"bad request", BasePath + "/external-knowledge/retrieval", errInvalidParam("retrieval_setting: required"), 400,
			`{"error_code":400,"error_msg":"retrieval_setting: required"}`},
		{"server failure", BasePath + "/external-knowledge/retrieval", errInternal(nil), 500,
			`{"error_code":500,"error_msg":"Internal Server Error."}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e *APIError
			if !asAPIError(tc.err, &e) {
				t.Fatalf("%v is not an APIError", tc.err)
			}
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest(http.MethodPost, tc.path, nil), e)
			var got, want any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %s: %v", w.Body, err)
			}
			_ = json.Unmarshal([]byte(tc.body), &want)
			if w.Code != tc.status || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%d %s, want %d %s", w.Code, w.Body, tc.status, tc.body)
			}
			if asks := w.Header().Get("WWW-Authenticate") != ""; asks != (tc.status == http.StatusUnauthorized) {
				t.Fatalf("WWW-Authenticate %q on a %d", w.Header().Get("WWW-Authenticate"), w.Code)
			}
		})
	}
}

func asAPIError(err error, e **APIError) bool {
	a, ok := err.(*APIError)
	*e = a
	return ok
}
