// Package httpreq runs the http-request node of a Dify workflow graph: it reads the node's DSL
// data into a [Config] and sends the request it describes with [Do], rendering variable
// references through the engine, reading the response under Dify's size limits and timeouts,
// and classifying it as text or as a file the way Dify does. It knows nothing of the engine:
// retries and error strategies stay there (see [Config.FailsOnStatus]).
package httpreq

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Methods the node accepts, lower case as the DSL spells them (any case is accepted).
var methods = map[string]string{
	"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH",
	"delete": "DELETE", "head": "HEAD", "options": "OPTIONS",
}

// Authorization types and API-key header kinds, as the DSL spells them.
const (
	AuthNone   = "no-auth"
	AuthAPIKey = "api-key"

	KeyBasic  = "basic"
	KeyBearer = "bearer"
	KeyCustom = "custom"
)

// Body types, as the DSL spells them.
const (
	BodyNone       = "none"
	BodyFormData   = "form-data"
	BodyURLEncoded = "x-www-form-urlencoded"
	BodyRawText    = "raw-text"
	BodyJSON       = "json"
	BodyBinary     = "binary"
)

// Body item types.
const (
	ItemText = "text"
	ItemFile = "file"
)

// Config is one http-request node, as read from its DSL data. Texts are templates: [Do] renders
// them through [Env.Render].
type Config struct {
	// Method is the upper-case HTTP method.
	Method string
	// URL is the URL template.
	URL string
	// Auth is the authorization block.
	Auth Auth
	// Headers and Params are the "Key:Value" line texts of the DSL.
	Headers string
	Params  string
	// Body is the request body; Type is BodyNone when the DSL has none.
	Body Body
	// Timeout holds the node's own timeouts; zero fields take the server's defaults.
	Timeout Timeout
	// SSLVerify is the node's ssl_verify; nil takes the server's default.
	SSLVerify *bool
	// Retry is the node's retry_config, for the engine.
	Retry Retry
	// ErrorStrategy is the node's error_strategy ("fail-branch", "default-value" or empty).
	ErrorStrategy string
}

// Auth is the authorization block.
type Auth struct {
	// Type is AuthNone or AuthAPIKey.
	Type string
	// KeyType is KeyBasic, KeyBearer or KeyCustom (empty: no header is added, as old exports
	// with a null config type behave in Dify).
	KeyType string
	// APIKey is a template.
	APIKey string
	// Header names the header; "Authorization" when empty.
	Header string
}

// Body is the request body.
type Body struct {
	Type  string
	Items []Item
}

// Item is one entry of body.data.
type Item struct {
	Key string
	// Type is ItemText or ItemFile.
	Type  string
	Value string
	// File is the selector of a file variable, for ItemFile items and binary bodies.
	File []string
}

// Timeout holds the node's timeouts; zero means the server's default.
type Timeout struct {
	Connect, Read, Write time.Duration
}

// Retry is the node's retry_config.
type Retry struct {
	Enabled    bool
	MaxRetries int
	// Interval is the wait before each retry.
	Interval time.Duration
}

// FailsOnStatus reports whether a response outside 2xx fails the node. Dify's node succeeds
// with any status code unless the node has an error strategy or retries enabled; then a non-2xx
// response fails it (error type HTTPResponseCodeError), which is what triggers the retry or the
// strategy. Use [Response.StatusError] for the error itself.
func (c Config) FailsOnStatus() bool {
	return c.ErrorStrategy != "" || c.Retry.Enabled
}

// ConfigError is a node configuration [Parse] cannot accept; Field names the DSL field.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	return "http-request node: " + e.Field + ": " + e.Msg
}

func bad(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads an http-request node's DSL data. It is strict about types and enumerations (a
// typo must not silently change what is sent) and lenient where Dify's own exports vary: a
// missing authorization is no-auth, a body whose data is a string (older exports) is one text
// item, headers and params may also be lists of {key, value}. Checks that depend on rendered
// values, and the one-item rule of raw-text, json and binary bodies, happen in [Do], as in Dify.
func Parse(data map[string]any) (Config, error) {
	var c Config
	m, err := str(data, "method", true)
	if err != nil {
		return c, err
	}
	c.Method = methods[strings.ToLower(m)]
	if c.Method == "" {
		return c, bad("method", "unsupported HTTP method %q (want get, post, put, patch, delete, head or options)", m)
	}
	if c.URL, err = str(data, "url", true); err != nil {
		return c, err
	}
	if c.Auth, err = parseAuth(data["authorization"]); err != nil {
		return c, err
	}
	if c.Headers, err = lines(data, "headers"); err != nil {
		return c, err
	}
	if c.Params, err = lines(data, "params"); err != nil {
		return c, err
	}
	if c.Body, err = parseBody(data["body"]); err != nil {
		return c, err
	}
	if c.Timeout, err = parseTimeout(data["timeout"]); err != nil {
		return c, err
	}
	switch v := data["ssl_verify"].(type) {
	case nil:
	case bool:
		c.SSLVerify = &v
	default:
		return c, bad("ssl_verify", "want a boolean, got %T", v)
	}
	if c.Retry, err = parseRetry(data["retry_config"]); err != nil {
		return c, err
	}
	if c.ErrorStrategy, err = str(data, "error_strategy", false); err != nil {
		return c, err
	}
	switch c.ErrorStrategy {
	case "", "none", "fail-branch", "default-value":
		if c.ErrorStrategy == "none" {
			c.ErrorStrategy = ""
		}
	default:
		return c, bad("error_strategy", "unknown strategy %q (want fail-branch or default-value)", c.ErrorStrategy)
	}
	return c, nil
}

// str reads a string field; absent or null is "" (an error when required).
func str(m map[string]any, key string, required bool) (string, error) {
	switch v := m[key].(type) {
	case string:
		return v, nil
	case nil:
		if required {
			return "", bad(key, "required")
		}
		return "", nil
	default:
		return "", bad(key, "want a string, got %T", v)
	}
}

// lines reads headers or params: the DSL's "Key:Value" text, or a list of {key, value} objects,
// which is turned into that text.
func lines(m map[string]any, key string) (string, error) {
	switch v := m[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		var b strings.Builder
		for i, e := range v {
			kv, ok := e.(map[string]any)
			if !ok {
				return "", bad(fmt.Sprintf("%s[%d]", key, i), "want an object with key and value, got %T", e)
			}
			k, err := str(kv, "key", false)
			if err != nil {
				return "", bad(fmt.Sprintf("%s[%d].key", key, i), "want a string")
			}
			val, err := str(kv, "value", false)
			if err != nil {
				return "", bad(fmt.Sprintf("%s[%d].value", key, i), "want a string")
			}
			b.WriteString(k + ":" + val + "\n")
		}
		return b.String(), nil
	default:
		return "", bad(key, "want a text of Key:Value lines, got %T", v)
	}
}

func parseAuth(v any) (Auth, error) {
	a := Auth{Type: AuthNone}
	if v == nil {
		return a, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return a, bad("authorization", "want an object, got %T", v)
	}
	t, err := str(m, "type", false)
	if err != nil {
		return a, bad("authorization.type", "want a string")
	}
	switch t {
	case "", AuthNone:
		return a, nil
	case AuthAPIKey:
	default:
		return a, bad("authorization.type", "unknown type %q (want no-auth or api-key)", t)
	}
	a.Type = AuthAPIKey
	cfg, ok := m["config"].(map[string]any)
	if !ok {
		return a, bad("authorization.config", "required for api-key authorization")
	}
	if a.KeyType, err = str(cfg, "type", false); err != nil {
		return a, bad("authorization.config.type", "want a string")
	}
	switch a.KeyType {
	case "", KeyBasic, KeyBearer, KeyCustom:
	default:
		return a, bad("authorization.config.type", "unknown type %q (want basic, bearer or custom)", a.KeyType)
	}
	if a.APIKey, err = str(cfg, "api_key", false); err != nil {
		return a, bad("authorization.config.api_key", "want a string")
	}
	if a.Header, err = str(cfg, "header", false); err != nil {
		return a, bad("authorization.config.header", "want a string")
	}
	return a, nil
}

func parseBody(v any) (Body, error) {
	b := Body{Type: BodyNone}
	if v == nil {
		return b, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return b, bad("body", "want an object, got %T", v)
	}
	t, err := str(m, "type", true)
	if err != nil {
		return b, bad("body.type", "required")
	}
	switch t {
	case BodyNone, BodyFormData, BodyURLEncoded, BodyRawText, BodyJSON, BodyBinary:
		b.Type = t
	default:
		return b, bad("body.type", "unknown type %q (want none, form-data, x-www-form-urlencoded, raw-text, json or binary)", t)
	}
	switch d := m["data"].(type) {
	case nil:
	case string:
		// Older exports keep a raw-text or json body as one string.
		if d != "" {
			b.Items = []Item{{Type: ItemText, Value: d}}
		}
	case []any:
		for i, e := range d {
			it, err := parseItem(e, fmt.Sprintf("body.data[%d]", i))
			if err != nil {
				return b, err
			}
			b.Items = append(b.Items, it)
		}
	default:
		return b, bad("body.data", "want a list, got %T", d)
	}
	return b, nil
}

func parseItem(v any, field string) (Item, error) {
	var it Item
	m, ok := v.(map[string]any)
	if !ok {
		return it, bad(field, "want an object, got %T", v)
	}
	var err error
	if it.Key, err = str(m, "key", false); err != nil {
		return it, bad(field+".key", "want a string")
	}
	if it.Type, err = str(m, "type", false); err != nil {
		return it, bad(field+".type", "want a string")
	}
	switch it.Type {
	case "":
		it.Type = ItemText
	case ItemText, ItemFile:
	default:
		return it, bad(field+".type", "unknown type %q (want text or file)", it.Type)
	}
	switch val := m["value"].(type) {
	case nil:
	case string:
		it.Value = val
	case bool, int, int64, float64:
		// YAML may read an unquoted value as a number or a boolean.
		it.Value = fmt.Sprint(val)
	default:
		return it, bad(field+".value", "want a string, got %T", val)
	}
	switch f := m["file"].(type) {
	case nil:
	case []any:
		for j, s := range f {
			p, ok := s.(string)
			if !ok {
				return it, bad(fmt.Sprintf("%s.file[%d]", field, j), "want a string, got %T", s)
			}
			it.File = append(it.File, p)
		}
	case []string:
		it.File = append(it.File, f...)
	default:
		return it, bad(field+".file", "want a variable selector (a list of strings), got %T", f)
	}
	return it, nil
}

func parseTimeout(v any) (Timeout, error) {
	var t Timeout
	if v == nil {
		return t, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return t, bad("timeout", "want an object, got %T", v)
	}
	// max_*_timeout are the editor's limits, not the node's own settings.
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"connect", &t.Connect}, {"read", &t.Read}, {"write", &t.Write}} {
		secs, err := number(m[f.key], "timeout."+f.key)
		if err != nil {
			return t, err
		}
		if secs < 0 || secs > 24*3600 {
			return t, bad("timeout."+f.key, "want seconds between 0 and 86400, got %v", secs)
		}
		*f.dst = time.Duration(secs * float64(time.Second))
	}
	return t, nil
}

func parseRetry(v any) (Retry, error) {
	var r Retry
	if v == nil {
		return r, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return r, bad("retry_config", "want an object, got %T", v)
	}
	switch e := m["retry_enabled"].(type) {
	case nil:
	case bool:
		r.Enabled = e
	default:
		return r, bad("retry_config.retry_enabled", "want a boolean, got %T", e)
	}
	n, err := number(m["max_retries"], "retry_config.max_retries")
	if err != nil {
		return r, err
	}
	if n < 0 || n != math.Trunc(n) || n > 1000 {
		return r, bad("retry_config.max_retries", "want a whole number between 0 and 1000, got %v", n)
	}
	r.MaxRetries = int(n)
	ms, err := number(m["retry_interval"], "retry_config.retry_interval")
	if err != nil {
		return r, err
	}
	if ms < 0 || ms > 24*3600*1000 {
		return r, bad("retry_config.retry_interval", "want milliseconds between 0 and 86400000, got %v", ms)
	}
	r.Interval = time.Duration(ms * float64(time.Millisecond))
	return r, nil
}

// number reads a numeric field as YAML or JSON decoding leaves it; null is 0.
func number(v any, field string) (float64, error) {
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case uint64:
		return float64(n), nil
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, bad(field, "want a number, got %v", n)
		}
		return n, nil
	case string:
		if n == "" {
			return 0, nil
		}
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, bad(field, "want a number, got %q", n)
		}
		return f, nil
	default:
		return 0, bad(field, "want a number, got %T", v)
	}
}
