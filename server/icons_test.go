package server

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"
)

func TestRequestOrigin(t *testing.T) {
	tests := []struct {
		name    string
		tls     bool
		headers map[string]string
		want    string
	}{
		{"plain", false, nil, "http://parley.test:5001"},
		{"tls", true, nil, "https://parley.test:5001"},
		{"behind a proxy", false, map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "chat.example.com"}, "https://chat.example.com"},
		{"first of a list", false, map[string]string{"X-Forwarded-Proto": "HTTPS, http", "X-Forwarded-Host": "a.example.com, b"}, "https://a.example.com"},
		{"junk is ignored", false, map[string]string{"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example/x?y"}, "http://parley.test:5001"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "http://parley.test:5001/v1/workspaces/current/models/model-types/llm", nil)
		if tt.tls {
			r.TLS = &tls.ConnectionState{}
		}
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		if got := requestOrigin(r); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
