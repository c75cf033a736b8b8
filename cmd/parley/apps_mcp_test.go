package main

import (
	"testing"

	"github.com/parleyhq/parley/internal/config"
)

// TestMCPBase: the printed URL of an MCP server starts with --url, else PARLEY_FILES_URL, else
// the listen address (a wildcard host as loopback), which is a guess.
func TestMCPBase(t *testing.T) {
	for _, tc := range []struct {
		flag, filesURL, addr string
		want                 mcpBaseURL
	}{
		{flag: "https://a.example/", filesURL: "https://b.example", addr: "127.0.0.1:5001", want: mcpBaseURL{url: "https://a.example"}},
		{filesURL: "https://b.example/parley/", addr: "127.0.0.1:5001", want: mcpBaseURL{url: "https://b.example/parley"}},
		{addr: "127.0.0.1:5001", want: mcpBaseURL{url: "http://127.0.0.1:5001", guessed: true}},
		{addr: ":8080", want: mcpBaseURL{url: "http://127.0.0.1:8080", guessed: true}},
		{addr: "0.0.0.0:80", want: mcpBaseURL{url: "http://127.0.0.1:80", guessed: true}},
		{addr: "[::]:9000", want: mcpBaseURL{url: "http://127.0.0.1:9000", guessed: true}},
		{addr: "[::1]:9000", want: mcpBaseURL{url: "http://[::1]:9000", guessed: true}},
	} {
		e := &env{cfg: &config.Config{Addr: tc.addr, FilesURL: tc.filesURL}}
		if got := mcpBase(e, tc.flag); got != tc.want {
			t.Errorf("%+v: %+v", tc, got)
		}
	}
}
