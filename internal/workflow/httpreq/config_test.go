package httpreq

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type publicNode struct {
	Source string         `yaml:"source"`
	NodeID string         `yaml:"node_id"`
	Data   map[string]any `yaml:"data"`
}

func loadPublic(t *testing.T) []publicNode {
	t.Helper()
	raw, err := os.ReadFile("testdata/public-nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []publicNode
	if err := yaml.Unmarshal(raw, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes) == 0 {
		t.Fatal("no fixtures")
	}
	return nodes
}

// Every http-request node of the public exports parses.
func TestParsePublicNodes(t *testing.T) {
	t.Parallel()
	for _, n := range loadPublic(t) {
		if _, err := Parse(n.Data); err != nil {
			t.Errorf("%s node %s: %v", n.Source, n.NodeID, err)
		}
	}
}

// What the public nodes say is what Parse reads.
func TestParsePublicNodeFields(t *testing.T) {
	t.Parallel()
	byID := map[string]Config{}
	for _, n := range loadPublic(t) {
		c, err := Parse(n.Data)
		if err != nil {
			t.Fatal(err)
		}
		byID[n.Source+"#"+n.Data["title"].(string)] = c
	}
	get := func(key string) Config {
		t.Helper()
		c, ok := byID[key]
		if !ok {
			t.Fatalf("no node %q", key)
		}
		return c
	}

	c := get("advanced-chat/sawantdarshan-devops-chatbot.yml#HTTP Request")
	if c.Method != "GET" || c.URL != "https://www.mymcp.com/mcp/tools" || c.Auth.Type != AuthNone || c.Body.Type != BodyNone {
		t.Errorf("devops: %+v", c)
	}
	if !c.Retry.Enabled || c.Retry.MaxRetries != 3 || c.Retry.Interval != 100*time.Millisecond || !c.FailsOnStatus() {
		t.Errorf("devops retry: %+v", c.Retry)
	}
	if c.SSLVerify == nil || !*c.SSLVerify || c.Timeout != (Timeout{}) {
		t.Errorf("devops ssl/timeout: %v %+v", c.SSLVerify, c.Timeout)
	}

	// An old export: body.data is a string, no retry_config, no ssl_verify.
	c = get("advanced-chat/svcvit-search-master.yml#HTTP Request")
	if c.URL != "{{#1719878483248.item#}}" || c.Body.Type != BodyNone || len(c.Body.Items) != 0 || c.SSLVerify != nil || c.Retry.Enabled || c.FailsOnStatus() {
		t.Errorf("search-master: %+v", c)
	}

	c = get("workflow/a1sh4-knowledge-base-ingestion.yml#HTTP Request 2")
	if c.Method != "POST" || c.Body.Type != BodyJSON || len(c.Body.Items) != 1 || c.Body.Items[0].Value != "{{#1776920595602.api_payload#}}" {
		t.Errorf("ingestion body: %+v", c.Body)
	}
	if c.Timeout != (Timeout{Connect: 10 * time.Second, Read: 60 * time.Second, Write: 15 * time.Second}) {
		t.Errorf("ingestion timeout: %+v", c.Timeout)
	}
	if c.Retry.MaxRetries != 4 || c.Retry.Interval != 5*time.Second {
		t.Errorf("ingestion retry: %+v", c.Retry)
	}
	if c.Headers != "Authorization:Bearer {{#env.KB_API#}}\nContent-Type:application/json" {
		t.Errorf("ingestion headers: %q", c.Headers)
	}

	c = get("workflow/din4e-snake.yml#创建目录.1")
	if c.Auth != (Auth{Type: AuthAPIKey, KeyType: KeyBearer, APIKey: "{{#1738827901638.tenant_access_token#}}"}) {
		t.Errorf("snake auth: %+v", c.Auth)
	}
	if c.Retry.Enabled || c.Retry.MaxRetries != 3 {
		t.Errorf("snake retry: %+v", c.Retry)
	}

	c = get("workflow/amypg-invoice-recorder-http.yml#HTTPリクエスト")
	if c.Body.Type != BodyRawText || c.Body.Items[0].Value != "{{#1746786554629.text#}}" {
		t.Errorf("invoice body: %+v", c.Body)
	}
}

// Bad configurations are refused with the field named.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	base := func() map[string]any {
		return map[string]any{"method": "get", "url": "https://example.com"}
	}
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		field string
	}{
		{"no method", func(m map[string]any) { delete(m, "method") }, "method"},
		{"bad method", func(m map[string]any) { m["method"] = "fetch" }, "method"},
		{"method not a string", func(m map[string]any) { m["method"] = 3 }, "method"},
		{"no url", func(m map[string]any) { delete(m, "url") }, "url"},
		{"auth type", func(m map[string]any) { m["authorization"] = map[string]any{"type": "oauth"} }, "authorization.type"},
		{"api-key without config", func(m map[string]any) { m["authorization"] = map[string]any{"type": "api-key"} }, "authorization.config"},
		{"key type", func(m map[string]any) {
			m["authorization"] = map[string]any{"type": "api-key", "config": map[string]any{"type": "digest", "api_key": "k"}}
		}, "authorization.config.type"},
		{"headers not text", func(m map[string]any) { m["headers"] = 5 }, "headers"},
		{"params item", func(m map[string]any) { m["params"] = []any{"a:b"} }, "params[0]"},
		{"body type", func(m map[string]any) { m["body"] = map[string]any{"type": "xml"} }, "body.type"},
		{"body without type", func(m map[string]any) { m["body"] = map[string]any{"data": []any{}} }, "body.type"},
		{"body data", func(m map[string]any) { m["body"] = map[string]any{"type": "json", "data": 7} }, "body.data"},
		{"item type", func(m map[string]any) {
			m["body"] = map[string]any{"type": "form-data", "data": []any{map[string]any{"key": "a", "type": "blob"}}}
		}, "body.data[0].type"},
		{"file selector", func(m map[string]any) {
			m["body"] = map[string]any{"type": "binary", "data": []any{map[string]any{"type": "file", "file": "sys.files"}}}
		}, "body.data[0].file"},
		{"timeout", func(m map[string]any) { m["timeout"] = map[string]any{"read": -1} }, "timeout.read"},
		{"timeout text", func(m map[string]any) { m["timeout"] = map[string]any{"connect": "soon"} }, "timeout.connect"},
		{"ssl_verify", func(m map[string]any) { m["ssl_verify"] = "yes" }, "ssl_verify"},
		{"retry enabled", func(m map[string]any) { m["retry_config"] = map[string]any{"retry_enabled": "true"} }, "retry_config.retry_enabled"},
		{"retry count", func(m map[string]any) { m["retry_config"] = map[string]any{"max_retries": 1.5} }, "retry_config.max_retries"},
		{"error strategy", func(m map[string]any) { m["error_strategy"] = "ignore" }, "error_strategy"},
	}
	for _, tc := range cases {
		m := base()
		tc.edit(m)
		_, err := Parse(m)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: want a ConfigError, got %v", tc.name, err)
			continue
		}
		if ce.Field != tc.field {
			t.Errorf("%s: field %q, want %q (%v)", tc.name, ce.Field, tc.field, err)
		}
	}
}

// Lenient forms Dify's exports use are read.
func TestParseLenientForms(t *testing.T) {
	t.Parallel()
	c, err := Parse(map[string]any{
		"method":  "POST",
		"url":     "https://example.com",
		"headers": []any{map[string]any{"key": "A", "value": "1"}, map[string]any{"key": "B", "value": "x:y"}},
		"body":    map[string]any{"type": "raw-text", "data": "hello"},
		"timeout": map[string]any{"connect": 2.5, "read": nil, "max_read_timeout": 600},
		"retry_config": map[string]any{
			"retry_enabled": true, "max_retries": 3, "retry_interval": 2.0,
		},
		"error_strategy": "fail-branch",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Method != "POST" || c.Headers != "A:1\nB:x:y\n" {
		t.Errorf("got %+v", c)
	}
	if len(c.Body.Items) != 1 || c.Body.Items[0].Type != ItemText || c.Body.Items[0].Value != "hello" {
		t.Errorf("body %+v", c.Body)
	}
	if c.Timeout != (Timeout{Connect: 2500 * time.Millisecond}) || c.Retry.Interval != 2*time.Millisecond {
		t.Errorf("timeout %+v retry %+v", c.Timeout, c.Retry)
	}
	if !c.FailsOnStatus() || c.ErrorStrategy != "fail-branch" {
		t.Errorf("strategy %q", c.ErrorStrategy)
	}
}

// Every public node runs against a loopback server standing in for its host: the request it
// sends is well formed (method, rendered path, a JSON body that parses, the credentials).
func TestRunPublicNodes(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	hostRE := regexp.MustCompile(`^https?://[^/]+`)
	for _, n := range loadPublic(t) {
		c, err := Parse(n.Data)
		if err != nil {
			t.Fatal(err)
		}
		if hostRE.MatchString(c.URL) {
			c.URL = hostRE.ReplaceAllString(c.URL, srv.URL)
		} else {
			c.URL = srv.URL + "/" + c.URL // a URL that is all reference
		}
		// Every reference renders to a placeholder naming it.
		render := func(s string) (string, error) {
			return refRE.ReplaceAllStringFunc(s, func(m string) string {
				return "v_" + strings.ReplaceAll(refRE.FindStringSubmatch(m)[1], ".", "_")
			}), nil
		}
		if _, err := Do(context.Background(), c, Env{Render: render, Client: loopbackClient(t)}); err != nil {
			t.Errorf("%s %s: %v", n.Source, n.NodeID, err)
			continue
		}
		got := last()
		t.Logf("%s: %s %s %s", n.Source, got.Method, got.URI, got.Body)
		if got.Method != c.Method || strings.Contains(got.URI, "{{") {
			t.Errorf("%s %s: sent %s %s", n.Source, n.NodeID, got.Method, got.URI)
		}
		if c.Body.Type == BodyJSON && !json.Valid(got.Body) {
			t.Errorf("%s %s: body %s", n.Source, n.NodeID, got.Body)
		}
		if c.Auth.Type == AuthAPIKey && !strings.HasPrefix(got.Header.Get("Authorization"), "Bearer v_") {
			t.Errorf("%s %s: authorization %q", n.Source, n.NodeID, got.Header.Get("Authorization"))
		}
	}
}
