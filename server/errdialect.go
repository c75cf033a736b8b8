package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/knowledge"
)

// An error dialect is how the operations of another API that Parley implements answer errors:
// OpenAI's error object on the OpenAI-compatible operations, and the External Knowledge API's
// {error_code, error_msg} on Parley's provider of it. Every error of a request under a
// dialect's paths — the key check, the request validator, a handler, a contract violation, an
// unknown route — is written in the dialect by writeError (through APIError.render), the one
// place that writes an error; the response validator checks it against the dialect's schema.
type errorDialect struct {
	// schema names the dialect's error body in api/openapi.yaml.
	schema string
	// match reports whether an API path (after BasePath) speaks the dialect.
	match func(rest string) bool
	// render gives the HTTP status and body of e.
	render func(e *APIError) (int, []byte)
}

// errorDialects are the dialects, tried in order; a path none matches answers the Error body.
var errorDialects = []errorDialect{
	{schema: "OpenAIErrorResponse", match: isOpenAIRoute, render: func(e *APIError) (int, []byte) {
		return e.Status, e.openAIBody()
	}},
	{schema: "ExternalKnowledgeErrorResponse", match: isExternalKnowledgeRoute, render: (*APIError).externalKnowledgeBody},
}

// dialectOf is the error dialect of an API path, or nil for the Error body.
func dialectOf(path string) *errorDialect {
	rest, ok := strings.CutPrefix(path, BasePath)
	if !ok {
		return nil
	}
	for i := range errorDialects {
		if errorDialects[i].match(rest) {
			return &errorDialects[i]
		}
	}
	return nil
}

// render is e as the operation r asked for answers errors: its status and body in the path's
// dialect, or the Error body.
func (e *APIError) render(r *http.Request) (int, []byte) {
	if d := dialectOf(r.URL.Path); d != nil {
		return d.render(e)
	}
	return e.Status, e.body()
}

// isOpenAIPath says whether an API path is one of the OpenAI-compatible operations', whose
// errors are OpenAI's error object.
func isOpenAIPath(p string) bool {
	rest, ok := strings.CutPrefix(p, BasePath)
	return ok && isOpenAIRoute(rest)
}

func isOpenAIRoute(rest string) bool {
	return rest == "/chat/completions" || rest == "/responses" || rest == "/models" || strings.HasPrefix(rest, "/models/")
}

// externalKnowledgePrefix is where Parley serves the External Knowledge API: its endpoint for a
// client is {base}/v1/external-knowledge.
const externalKnowledgePrefix = "/external-knowledge"

func isExternalKnowledgeRoute(rest string) bool {
	return rest == externalKnowledgePrefix || strings.HasPrefix(rest, externalKnowledgePrefix+"/")
}

// The External Knowledge API's error codes (Dify's) and their texts.
const (
	extCodeHeaderFormat = 1001
	extCodeAuthFailed   = 1002
	extCodeNoKnowledge  = 2001
	extMsgHeaderFormat  = "Invalid Authorization header format. Expected 'Bearer <api-key>' format."
	extMsgAuthFailed    = "Authorization failed"
)

// externalKnowledgeBody is e as the External Knowledge API answers it. Dify's specification
// gives a key refusal status 403 (AccessDeniedException): 1001 for an Authorization header that
// is not `Bearer <key>`, 1002 for a key that is not a valid knowledge-base key, and for a
// knowledge base whose API access is off. A knowledge base that does not exist (or that Parley
// does not serve) is 2001 with 404.
// Every other failure keeps its status, which is then also its error_code.
func (e *APIError) externalKnowledgeBody() (int, []byte) {
	status, code, msg := e.Status, e.Status, e.Message
	switch {
	case e.Status == http.StatusUnauthorized && (errors.Is(e, auth.ErrMissingBearer) || errors.Is(e, auth.ErrBearerScheme)):
		status, code, msg = http.StatusForbidden, extCodeHeaderFormat, extMsgHeaderFormat
	case e.Status == http.StatusUnauthorized:
		status, code, msg = http.StatusForbidden, extCodeAuthFailed, extMsgAuthFailed
	case e.Status == http.StatusForbidden:
		code, msg = extCodeAuthFailed, extMsgAuthFailed+": "+e.Message
	case errors.Is(e, knowledge.ErrKnowledgeNotFound):
		code = extCodeNoKnowledge
	}
	b, _ := json.Marshal(struct {
		ErrorCode int    `json:"error_code"`
		ErrorMsg  string `json:"error_msg"`
	}{code, msg})
	return status, b
}
