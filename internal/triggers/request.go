package triggers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// DefaultMaxBody bounds a webhook request's body, Dify's WEBHOOK_REQUEST_BODY_MAX_SIZE default
// (10 MiB).
const DefaultMaxBody = 10 << 20

// RequestError is a webhook request its manifest refuses: the HTTP status (400, or 413 for a
// body over the limit) and a message that names what is wrong, in Dify's words.
type RequestError struct {
	Status  int
	Message string
}

func (e *RequestError) Error() string { return e.Message }

func badRequest(format string, args ...any) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// SaveFile keeps a file a webhook request carries (a multipart file field, or an
// application/octet-stream body) and returns it as Dify's file dict, for the run's variables.
type SaveFile func(ctx context.Context, filename, contentType string, body io.Reader) (map[string]any, error)

// Read reads a webhook request and checks it against the manifest, as Dify's
// WebhookService.extract_and_validate_webhook_data does: the method, the content type, the
// required headers, the query parameters (required ones present, values converted to their
// declared type) and the body members (the same, JSON values checked against their type, form
// values converted). It returns the request as Dify's webhook_data: method, headers,
// query_params, body and files; undeclared parameters are kept as they came. save keeps the
// request's files (nil: they are read and dropped, their dict without an id). A refusal is a
// *RequestError.
func Read(ctx context.Context, r *http.Request, w *Webhook, maxBody int64, save SaveFile) (map[string]any, error) {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	if r.ContentLength > maxBody {
		return nil, tooLarge(r.ContentLength, maxBody)
	}
	if got := strings.ToUpper(r.Method); got != w.Method {
		return nil, badRequest("HTTP method mismatch. Expected %s, got %s", w.Method, got)
	}
	ct := contentType(r.Header)
	if ct != w.ContentType {
		return nil, badRequest("Content-type mismatch. Expected %s, got %s", w.ContentType, ct)
	}
	headers := map[string]any{}
	for k, vs := range r.Header {
		if len(vs) > 0 {
			headers[k] = vs[0]
		}
	}
	query := map[string]any{}
	for k, vs := range r.URL.Query() {
		if len(vs) > 0 {
			query[k] = vs[0]
		}
	}
	for _, h := range w.Headers {
		if h.Required && headerOf(r.Header, h.Name) == "" && !hasHeader(r.Header, h.Name) {
			return nil, badRequest("Required header missing: %s", h.Name)
		}
	}
	var err error
	if query, err = checkParams(query, w.Params, true, "Required parameter missing: %s"); err != nil {
		return nil, err
	}
	body, files, err := readBody(ctx, r, w, maxBody, save)
	if err != nil {
		return nil, err
	}
	if body, err = checkBody(body, files, w); err != nil {
		return nil, err
	}
	return map[string]any{"method": strings.ToUpper(r.Method), "headers": headers, "query_params": query, "body": body,
		"files": files}, nil
}

func tooLarge(n, limit int64) *RequestError {
	what := "Webhook request too large"
	if n > 0 {
		what += fmt.Sprintf(": %d bytes exceeds", n)
	} else {
		what += ": the body exceeds"
	}
	return &RequestError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("%s maximum allowed size of %d bytes", what, limit)}
}

// contentType is the request's media type, lower case and without parameters; JSON when the
// request has none, as Dify reads it.
func contentType(h http.Header) string {
	ct := strings.ToLower(h.Get("Content-Type"))
	if ct == "" {
		return ContentJSON
	}
	return strings.TrimSpace(strings.Split(ct, ";")[0])
}

// headerOf finds a header by its declared name, or with "-" and "_" swapped, ignoring case.
func headerOf(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	for k, vs := range h {
		if len(vs) > 0 && strings.EqualFold(strings.ReplaceAll(k, "-", "_"), strings.ReplaceAll(name, "-", "_")) {
			return vs[0]
		}
	}
	return ""
}

func hasHeader(h http.Header, name string) bool {
	for k := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "-", "_"), strings.ReplaceAll(name, "-", "_")) {
			return true
		}
	}
	return false
}

// limited reads at most limit bytes of r's body; more is a 413.
func limited(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, tooLarge(r.ContentLength, limit)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(r.ContentLength, limit)
	}
	return b, nil
}

// readBody reads the body as its content type says: JSON, a form, multipart (fields and files),
// text (as body.raw) or binary (a file, as body.raw).
func readBody(ctx context.Context, r *http.Request, w *Webhook, limit int64, save SaveFile) (map[string]any, map[string]any, error) {
	files := map[string]any{}
	switch w.ContentType {
	case ContentJSON:
		raw, err := limited(r, limit)
		if err != nil {
			return nil, nil, err
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			return map[string]any{}, files, nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, badRequest("Invalid JSON body: %v", err)
		}
		if dec.More() {
			return nil, nil, badRequest("Invalid JSON body: more than one JSON value")
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, badRequest("Invalid JSON body: expected a JSON object, got %s", jsonKind(v))
		}
		return plainNumbers(m).(map[string]any), files, nil
	case ContentForm:
		raw, err := limited(r, limit)
		if err != nil {
			return nil, nil, err
		}
		vals, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, nil, badRequest("Invalid form body: %v", err)
		}
		body := map[string]any{}
		for k, vs := range vals {
			if len(vs) > 0 {
				body[k] = vs[0]
			}
		}
		return body, files, nil
	case ContentFormData:
		return readMultipart(ctx, r, limit, save)
	case ContentText:
		raw, err := limited(r, limit)
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"raw": string(raw)}, files, nil
	case ContentBinary:
		raw, err := limited(r, limit)
		if err != nil {
			return nil, nil, err
		}
		if len(raw) == 0 {
			return map[string]any{"raw": nil}, files, nil
		}
		f, err := keep(ctx, save, "", http.DetectContentType(raw), raw)
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"raw": f}, files, nil
	}
	return map[string]any{}, files, nil
}

func readMultipart(ctx context.Context, r *http.Request, limit int64, save SaveFile) (map[string]any, map[string]any, error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return nil, nil, badRequest("Invalid multipart body: the Content-Type has no boundary")
	}
	body, files := map[string]any{}, map[string]any{}
	if r.Body == nil {
		return body, files, nil
	}
	mr := multipart.NewReader(io.LimitReader(r.Body, limit+1), params["boundary"])
	var read int64
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if read >= limit {
				return nil, nil, tooLarge(r.ContentLength, limit)
			}
			return nil, nil, badRequest("Invalid multipart body: %v", err)
		}
		name := p.FormName()
		data, err := io.ReadAll(io.LimitReader(p, limit-read+1))
		read += int64(len(data))
		if err != nil || read > limit {
			if read > limit {
				return nil, nil, tooLarge(r.ContentLength, limit)
			}
			return nil, nil, badRequest("Invalid multipart body: %v", err)
		}
		if name == "" {
			continue
		}
		if p.FileName() == "" {
			if _, dup := body[name]; !dup {
				body[name] = string(data)
			}
			continue
		}
		if _, dup := files[name]; dup {
			continue
		}
		ct := p.Header.Get("Content-Type")
		if ct == "" {
			ct = http.DetectContentType(data)
		}
		f, err := keep(ctx, save, p.FileName(), ct, data)
		if err != nil {
			return nil, nil, err
		}
		files[name] = f
	}
	return body, files, nil
}

// keep saves a file of the request, or describes it when nothing keeps files.
func keep(ctx context.Context, save SaveFile, filename, contentType string, data []byte) (map[string]any, error) {
	if save == nil {
		return map[string]any{"dify_model_identity": "__dify__file__", "filename": filename, "mime_type": contentType,
			"size": int64(len(data)), "transfer_method": "local_file", "type": "custom"}, nil
	}
	f, err := save(ctx, filename, contentType, bytes.NewReader(data))
	if err != nil {
		var re *RequestError
		if errors.As(err, &re) {
			return nil, re
		}
		return nil, fmt.Errorf("triggers: keep the request's file: %w", err)
	}
	return f, nil
}

// checkParams checks the declared parameters among got: a required one must be there, and a
// value is converted to its declared type (from its text when form says the values are text).
// Undeclared values stay as they came.
func checkParams(got map[string]any, declared []Param, form bool, missing string) (map[string]any, error) {
	out := make(map[string]any, len(got))
	for k, v := range got {
		out[k] = v
	}
	for _, p := range declared {
		v, ok := got[p.Name]
		if !ok {
			if p.Required {
				return nil, badRequest(missing, p.Name)
			}
			continue
		}
		cv, err := convert(v, p.Type, form)
		if err != nil {
			return nil, badRequest("Parameter '%s' validation failed: %v", p.Name, err)
		}
		out[p.Name] = cv
	}
	return out, nil
}

// checkBody checks the body's declared members: text and binary bodies are one value (raw),
// present when a member is required; a structured body's members are checked as parameters,
// and a file member of a multipart body must be a file part.
func checkBody(body, files map[string]any, w *Webhook) (map[string]any, error) {
	switch w.ContentType {
	case ContentText, ContentBinary:
		for _, p := range w.Body {
			if !p.Required {
				continue
			}
			if raw := body["raw"]; raw == nil || raw == "" {
				return nil, badRequest("Required body content missing for %s request (body parameter %s)", w.ContentType, p.Name)
			}
		}
		return body, nil
	}
	var members []Param
	for _, p := range w.Body {
		if p.Type == "file" && w.ContentType == ContentFormData {
			if _, ok := files[p.Name]; !ok && p.Required {
				if _, asField := body[p.Name]; asField {
					return nil, badRequest("Parameter '%s' validation failed: Expected file, got a text field", p.Name)
				}
				return nil, badRequest("Required body parameter missing: %s", p.Name)
			}
			continue
		}
		members = append(members, p)
	}
	form := w.ContentType == ContentForm || w.ContentType == ContentFormData
	return checkParams(body, members, form, "Required body parameter missing: %s")
}

// convert checks a value against a declared type: form values are text and are converted
// (numbers, booleans as Dify reads them: true/false, 1/0, yes/no), JSON values must have the
// type already.
func convert(v any, typ string, form bool) (any, error) {
	if form {
		s, _ := v.(string)
		switch typ {
		case "string":
			return s, nil
		case "number":
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("Cannot convert '%s' to number", s)
			}
			if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return int64(f), nil
			}
			return f, nil
		case "boolean":
			switch strings.ToLower(s) {
			case "true", "1", "yes":
				return true, nil
			case "false", "0", "no":
				return false, nil
			}
			return nil, fmt.Errorf("Cannot convert '%s' to boolean", s)
		}
		return nil, fmt.Errorf("Unsupported type '%s' for form data", typ)
	}
	ok := false
	switch typ {
	case "string":
		_, ok = v.(string)
	case "number":
		ok = isNumber(v)
	case "boolean":
		_, ok = v.(bool)
	case "object":
		_, ok = v.(map[string]any)
	case "array[string]", "array[number]", "array[boolean]", "array[object]":
		l, isList := v.([]any)
		ok = isList
		for _, e := range l {
			switch typ {
			case "array[string]":
				_, ok = e.(string)
			case "array[number]":
				ok = isNumber(e)
			case "array[boolean]":
				_, ok = e.(bool)
			case "array[object]":
				_, ok = e.(map[string]any)
			}
			if !ok {
				break
			}
		}
	case "file":
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("Expected %s, got %s", expected(typ), jsonKind(v))
	}
	return v, nil
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

func expected(typ string) string {
	switch typ {
	case "array[string]":
		return "array of strings"
	case "array[number]":
		return "array of numbers"
	case "array[boolean]":
		return "array of booleans"
	case "array[object]":
		return "array of objects"
	}
	return typ
}

// jsonKind names a decoded JSON value's type.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// plainNumbers turns the json.Numbers of a decoded value into int64 (integers) or float64.
func plainNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = plainNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = plainNumbers(e)
		}
		return t
	}
	return v
}
