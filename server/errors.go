package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// APIError is an error with its place in the contract: the HTTP status, the stable code and a
// message that is safe to show a client. The cause stays private and is only logged.
type APIError struct {
	Status  int
	Code    string
	Message string
	cause   error
	// param names the request member the error is about, for OpenAI's error object ("" when
	// none is named).
	param string
	// header holds headers the answer carries (Retry-After of a rate limit).
	header http.Header
}

// Error implements error.
func (e *APIError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s (%d): %s: %v", e.Code, e.Status, e.Message, e.cause)
	}
	return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
}

// Unwrap returns the private cause.
func (e *APIError) Unwrap() error { return e.cause }

func apiError(status int, code, message string) *APIError {
	return &APIError{Status: status, Code: code, Message: message}
}

// body is the contract's Error body of e, {code, message, status}: the one place it is
// encoded, for a JSON response and, through appendMembers, for a stream's error event.
func (e *APIError) body() []byte {
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Status  int    `json:"status"`
	}{e.Code, e.Message, e.Status})
	return b
}

// appendMembers appends the members of e's Error body to a JSON object being written: a
// stream's error event carries them after its envelope, exactly as a JSON response has them.
func (e *APIError) appendMembers(b []byte) []byte {
	body := e.body()
	return append(append(b, ','), body[1:len(body)-1]...)
}

// withCause returns a copy of e that remembers cause for the log.
func (e *APIError) withCause(cause error) *APIError {
	c := *e
	c.cause = cause
	return &c
}

// Messages follow Dify's where Dify has one.
const (
	msgInvalidToken     = "Access token is invalid"
	msgInvalidJSON      = "Invalid JSON payload received or JSON payload is empty."
	msgNotFoundURL      = "The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again."
	msgMethodNotAllowed = "The method is not allowed for the requested URL."
	msgInternal         = "Internal Server Error."
	msgUserRequired     = "Arg user must be provided."
)

func errUnauthorized(message string) *APIError {
	return apiError(http.StatusUnauthorized, "unauthorized", message)
}

func errInvalidParam(message string) *APIError {
	return apiError(http.StatusBadRequest, "invalid_param", message)
}

func errInternal(cause error) *APIError {
	return apiError(http.StatusInternalServerError, "internal_server_error", msgInternal).withCause(cause)
}

// errorHandler is Echo's HTTPErrorHandler and the only place where an error becomes the
// {code, message, status} body: whatever a strict handler, a middleware or Echo itself returns
// comes here, domain errors as they are. 5xx causes are logged here, once, with the types along
// the error's chain: a 500 for an outcome a client caused means a mapping is missing in
// errmap.go.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		// A stream already started; its producer reports failures as an `error` event.
		s.log.DebugContext(c.Request().Context(), "error after response committed", "error", err, "path", c.Request().URL.Path)
		return
	}
	e := toAPIError(err, c.Request())
	op, _ := c.Get(operationEchoKey).(string)
	e = forOperation(op, e)
	c.Set(errorCodeEchoKey, e.Code)
	if e.Status >= 500 {
		s.log.ErrorContext(c.Request().Context(), "request failed", slog.Group("request",
			"method", c.Request().Method, "path", c.Request().URL.Path, "operation", op),
			"status", e.Status, "code", e.Code, "error", err, "error_types", errorTypes(err))
	}
	writeAPIError(c, e)
}

func writeAPIError(c echo.Context, e *APIError) {
	writeError(c.Response(), c.Request(), e)
}

// writeError answers r with e's Error body, or its body in the dialect of r's path
// (errdialect.go); headers only to a HEAD request.
func writeError(w http.ResponseWriter, r *http.Request, e *APIError) {
	status, body := e.render(r)
	h := w.Header()
	if status == http.StatusUnauthorized {
		h.Set(echo.HeaderWWWAuthenticate, `Bearer realm="api"`)
	}
	for k, v := range e.header {
		h[k] = v
	}
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// toAPIError finds the contract error for any error a request can end with: our own, the
// domain packages' (errmap.go), Echo's (routing, body limit, binding), kin-openapi's request
// validation errors and the multipart reader's. Whatever it does not recognise is a 500.
func toAPIError(err error, r *http.Request) *APIError {
	if e := knownError(err, r); e != nil {
		return e
	}
	return errInternal(err)
}

// knownError is toAPIError for the errors it recognises, nil for the rest.
func knownError(err error, r *http.Request) *APIError {
	// A body cut off by its cap or by its deadline ends whichever reader met it (the validator,
	// a form reader, a decoder), however that reader wrapped the error.
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errTooLarge(r).withCause(err)
	}
	if errors.Is(err, errBodyTimeout) {
		return apiError(http.StatusRequestTimeout, "request_timeout", "The request body was not received in time.").withCause(err)
	}
	if e := mapDomain(err); e != nil {
		return e
	}
	var reqErr *openapi3filter.RequestError
	if errors.As(err, &reqErr) {
		return fromRequestError(reqErr).withCause(err)
	}
	// The request validator middleware hands on a schema failure nested in the body's schema
	// (a nullable member with allOf, say) as a bare MultiError, without its RequestError.
	var me openapi3.MultiError
	if errors.As(err, &me) {
		if e := fromSchemaErrors(me); e != nil {
			return e.withCause(err)
		}
	}
	// The generated handlers open multipart bodies themselves: a multipart Content-Type without
	// a usable boundary fails there.
	if errors.Is(err, http.ErrNotMultipart) || errors.Is(err, http.ErrMissingBoundary) {
		return errMalformedForm.withCause(err)
	}
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return nil
	}
	if he.Internal != nil && he.Internal != err {
		if inner := knownError(he.Internal, r); inner != nil && (inner.Status == he.Code || he.Code == http.StatusBadRequest) {
			return inner
		}
	}
	switch he.Code {
	case http.StatusNotFound:
		return apiError(http.StatusNotFound, "not_found", msgNotFoundURL)
	case http.StatusMethodNotAllowed:
		return apiError(http.StatusMethodNotAllowed, "method_not_allowed", msgMethodNotAllowed)
	case http.StatusRequestEntityTooLarge:
		return errTooLarge(r)
	case http.StatusUnsupportedMediaType:
		return apiError(http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprint(he.Message))
	case http.StatusUnauthorized:
		return errUnauthorized(msgInvalidToken)
	case http.StatusBadRequest:
		return fromBindError(he).withCause(err)
	}
	if he.Code >= 500 {
		return errInternal(err)
	}
	return apiError(he.Code, snakeStatus(he.Code), fmt.Sprint(he.Message))
}

// fromBindError maps a 400 of the generated handlers, which bind what the request validator
// has already accepted: the body into Go types (a number past the range of its Go type, or a
// member the validator did not see because the decoder matched its name case-insensitively)
// and the parameters. Their messages name Go types, so they are not passed on.
func fromBindError(he *echo.HTTPError) *APIError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(he.Internal, &typeErr):
		if typeErr.Field != "" {
			return errInvalidParam(typeErr.Field + ": invalid value")
		}
		return errInvalidParam("Invalid value in the request body.")
	case errors.As(he.Internal, &syntaxErr):
		return apiError(http.StatusBadRequest, "bad_request", msgInvalidJSON)
	case he.Internal != nil:
		return errInvalidParam("Invalid value in the request body.")
	}
	msg := fmt.Sprint(he.Message)
	if rest, ok := strings.CutPrefix(msg, "Invalid format for parameter "); ok {
		name, _, _ := strings.Cut(rest, ":")
		return errInvalidParam(name + ": invalid value")
	}
	return apiError(http.StatusBadRequest, "bad_request", msg)
}

func errTooLarge(r *http.Request) *APIError {
	if strings.HasPrefix(r.Header.Get(echo.HeaderContentType), echo.MIMEMultipartForm) {
		return apiError(http.StatusRequestEntityTooLarge, "file_too_large", "File size exceeded.")
	}
	return apiError(http.StatusRequestEntityTooLarge, "request_entity_too_large",
		"The data value transmitted exceeds the capacity limit.")
}

// snakeStatus names a status the way Dify's werkzeug errors do (Not Found → not_found).
func snakeStatus(status int) string {
	return strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
}

// fromRequestError maps a kin-openapi request validation failure to the contract: malformed or
// empty JSON is `bad_request`, a wrong content type is 415, and anything else is
// `invalid_param` with a message that names the offending field.
func fromRequestError(e *openapi3filter.RequestError) *APIError {
	if strings.HasPrefix(e.Reason, "header Content-Type has unexpected value") {
		return apiError(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Unsupported Content-Type "+quoteOrEmpty(e.Input)+"; the operation accepts "+accepted(e)+".")
	}
	var parseErr *openapi3filter.ParseError
	if e.RequestBody != nil && errors.As(e.Err, &parseErr) {
		return apiError(http.StatusBadRequest, "bad_request", msgInvalidJSON)
	}
	if e.RequestBody != nil && errors.Is(e.Err, openapi3filter.ErrInvalidRequired) {
		return apiError(http.StatusBadRequest, "bad_request", msgInvalidJSON)
	}
	var memberErr *jsonMemberError
	if errors.As(e.Err, &memberErr) {
		return errInvalidParam(memberErr.Error())
	}
	var where string
	if e.Parameter != nil {
		where = e.Parameter.Name
	}
	if where == "user" && errors.Is(e.Err, openapi3filter.ErrInvalidRequired) {
		return errInvalidParam(msgUserRequired)
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(e.Err, &schemaErr) {
		return fromSchemaError(where, schemaErr)
	}
	reason := e.Reason
	if e.Err != nil {
		reason = e.Err.Error()
	}
	if where == "" {
		return errInvalidParam(firstLine(reason))
	}
	return errInvalidParam(where + ": " + firstLine(reason))
}

// fromSchemaError names the offending member (after the parameter, if any) in the message.
func fromSchemaError(where string, schemaErr *openapi3.SchemaError) *APIError {
	field := strings.Join(schemaErr.JSONPointer(), ".")
	switch {
	case where != "" && field != "":
		where += "." + field
	case field != "":
		where = field
	}
	// Dify refuses a missing or empty `user` with this message wherever `user` is required.
	if where == "user" && (schemaErr.SchemaField == "required" || schemaErr.SchemaField == "minLength") {
		return errInvalidParam(msgUserRequired)
	}
	reason := schemaErr.Reason
	if reason == "" {
		reason = schemaErr.Error()
	}
	if where == "" {
		return errInvalidParam(firstLine(reason))
	}
	return errInvalidParam(where + ": " + firstLine(reason))
}

// fromSchemaErrors maps the first schema failure of a MultiError, or returns nil.
func fromSchemaErrors(me openapi3.MultiError) *APIError {
	var schemaErr *openapi3.SchemaError
	if !errors.As(me, &schemaErr) {
		return nil
	}
	return fromSchemaError("", schemaErr)
}

func quoteOrEmpty(in *openapi3filter.RequestValidationInput) string {
	if in == nil || in.Request == nil {
		return `""`
	}
	return fmt.Sprintf("%q", in.Request.Header.Get(echo.HeaderContentType))
}

func accepted(e *openapi3filter.RequestError) string {
	if e.RequestBody == nil {
		return "no body"
	}
	types := make([]string, 0, len(e.RequestBody.Content))
	for ct := range e.RequestBody.Content {
		types = append(types, ct)
	}
	return strings.Join(types, ", ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
