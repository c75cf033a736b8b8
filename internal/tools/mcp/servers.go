package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// MaxServers bounds the servers one configuration may name.
const MaxServers = 8

// ServerConfig is one MCP server as Dify's MCP plugins configure servers: a JSON object of
// servers by name, each {"url", "headers", "timeout", "sse_read_timeout", "transport"}, timeouts
// in seconds.
type ServerConfig struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// Timeout bounds connecting, listing and each call, in seconds (0: DefaultTimeout).
	Timeout float64 `json:"timeout"`
	// SSEReadTimeout is how long the plugins' clients wait for an event of an HTTP+SSE stream;
	// Parley's calls are bounded by Timeout instead, so it is read and not used.
	SSEReadTimeout float64 `json:"sse_read_timeout"`
	// Transport is sse or streamable_http; the client finds the transport a server speaks by
	// itself, so it is read and not needed.
	Transport string `json:"transport"`
}

// ParseServers reads a JSON object of servers by name: at most MaxServers, each with a url.
func ParseServers(text []byte) (map[string]ServerConfig, error) {
	var servers map[string]ServerConfig
	if err := json.Unmarshal(text, &servers); err != nil {
		return nil, fmt.Errorf("not a JSON object of MCP servers: %w", err)
	}
	if len(servers) > MaxServers {
		return nil, fmt.Errorf("%d MCP servers; at most %d are allowed", len(servers), MaxServers)
	}
	for name, s := range servers {
		if s.URL == "" {
			return nil, fmt.Errorf("MCP server %q has no url", name)
		}
	}
	return servers, nil
}

// Options are the options that reach s as the provider called name, through client.
func (s ServerConfig) Options(name string, client *http.Client) Options {
	h := http.Header{}
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	return Options{URL: s.URL, Provider: name, HTTPClient: client, Headers: h,
		Timeout: time.Duration(s.Timeout * float64(time.Second))}
}
