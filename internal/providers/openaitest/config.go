package openaitest

import (
	"testing"

	"github.com/parleyhq/parley/internal/config"
)

// Getenv is the environment of a config file that points at the server: ${UPSTREAM} is its URL
// and ${UPSTREAM_KEY} its API key; every other name is unset.
func (s *Server) Getenv(k string) string {
	switch k {
	case "UPSTREAM":
		return s.URL()
	case "UPSTREAM_KEY":
		return s.APIKey()
	}
	return ""
}

// NewConfigured starts a server with opts, closed when t ends, and parses the config file yaml
// against it (see Getenv); a file that does not parse fails t.
func NewConfigured(t testing.TB, yaml string, opts ...Option) (*Server, *config.File) {
	t.Helper()
	s := NewServer(opts...)
	t.Cleanup(s.Close)
	file, err := config.ParseFile([]byte(yaml), s.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return s, file
}
