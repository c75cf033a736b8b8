// Package mcpserver publishes apps as MCP servers, as Dify does: an app gets a server with a
// secret code, reached at /mcp/server/{code}/mcp over Streamable HTTP, whose one tool is the
// app. This package holds what does not depend on HTTP: the servers and their codes (Service),
// the tool's input schema built from the app's form (InputSchema), the mapping of a tool call's
// arguments to a run (Arguments) and the run of a call to its answer (Call). The HTTP and
// JSON-RPC edge, with the official MCP SDK's server, is in package server (server/mcp.go).
//
// A server code is a secret like an API key: 32 random bytes (43 base62 characters), stored
// only as its SHA-256 hash with a short display prefix, looked up by hash and confirmed with a
// constant-time comparison. It is shown once, when it is issued (docs/mcp-server.md).
package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/store"
)

// Errors of the lookup of a server by its code, with Dify's messages (JSON-RPC -32600 on the
// wire).
var (
	// ErrServerNotFound: no server has this code.
	ErrServerNotFound = errors.New("Server Not Found") //nolint:staticcheck // ST1005: Dify's wire message.
	// ErrServerInactive: the server exists but is disabled.
	ErrServerInactive = errors.New("Server is not active") //nolint:staticcheck // ST1005: Dify's wire message.
	// ErrAppUnavailable: the server's app cannot run (disabled, not published, no published
	// agent).
	ErrAppUnavailable = errors.New("App is unavailable") //nolint:staticcheck // ST1005: Dify's wire message.
	// ErrNoServer: the app has no MCP server (yet).
	ErrNoServer = errors.New("the app has no MCP server")
)

// codeLen is the length of a server code: base62 of 32 bytes, as the body of an API key.
const codeLen = 43

// prefixLen is how much of a code its display prefix shows.
const prefixLen = 8

// Store is the storage the Service needs; *store.Store implements it.
type Store interface {
	CreateMCPServer(ctx context.Context, m store.MCPServer) error
	UpdateMCPServer(ctx context.Context, m store.MCPServer) error
	MCPServerByApp(ctx context.Context, appID string) (store.MCPServer, error)
	MCPServerByCodeHash(ctx context.Context, hash []byte) (store.MCPServer, error)
	SetMCPServerClient(ctx context.Context, id, client string) error
}

var _ Store = (*store.Store)(nil)

// Service manages the MCP servers of apps and finds them by code.
type Service struct{ store Store }

// New returns a Service on st.
func New(st Store) *Service { return &Service{store: st} }

// User is the end user (the Service API's `user`) the runs of an MCP server belong to: one per
// server, as Dify has one end user per MCP server (session id = the server's id). Its
// conversations and logs are found under this value.
func User(serverID string) string { return "mcp-" + serverID }

// Change is what to change in an app's MCP server. The zero value changes nothing.
type Change struct {
	// Enable turns the server on, creating it (with a new code) when the app has none;
	// Disable turns it off. They are exclusive.
	Enable, Disable bool
	// Rotate issues a new code: the old URL stops working at once.
	Rotate bool
	// Description, when set, replaces the tool's description.
	Description *string
	// Params are merged into the parameter descriptions; an empty description removes one.
	Params map[string]string
}

// Apply makes c to the MCP server of the app appID and returns the server as it now is, and the
// new code when one was issued (creation or Rotate; shown once, never stored). Any change but
// Enable to an app without a server gives an error wrapping ErrNoServer.
func (s *Service) Apply(ctx context.Context, appID string, c Change) (store.MCPServer, string, error) {
	if c.Enable && c.Disable {
		return store.MCPServer{}, "", errors.New("mcpserver: enable and disable at once")
	}
	srv, err := s.store.MCPServerByApp(ctx, appID)
	created := false
	switch {
	case errors.Is(err, store.ErrNotFound) && c.Enable:
		created = true
		srv = store.MCPServer{ID: store.NewID(), AppID: appID, Status: store.MCPServerActive, Parameters: map[string]string{}}
	case errors.Is(err, store.ErrNotFound):
		return store.MCPServer{}, "", ErrNoServer
	case err != nil:
		return store.MCPServer{}, "", err
	}
	var code string
	if created || c.Rotate {
		if code, err = auth.RandomSecret(); err != nil {
			return store.MCPServer{}, "", fmt.Errorf("mcpserver: new code: %w", err)
		}
		h := sha256.Sum256([]byte(code))
		srv.CodeHash, srv.CodePrefix = h[:], code[:prefixLen]
	}
	switch {
	case c.Enable:
		srv.Status = store.MCPServerActive
	case c.Disable:
		srv.Status = store.MCPServerInactive
	}
	if c.Description != nil {
		srv.Description = *c.Description
	}
	if len(c.Params) > 0 {
		params := maps.Clone(srv.Parameters)
		if params == nil {
			params = map[string]string{}
		}
		for k, v := range c.Params {
			if v == "" {
				delete(params, k)
			} else {
				params[k] = v
			}
		}
		srv.Parameters = params
	}
	if created {
		err = s.store.CreateMCPServer(ctx, srv)
	} else {
		err = s.store.UpdateMCPServer(ctx, srv)
	}
	if err != nil {
		return store.MCPServer{}, "", err
	}
	return srv, code, nil
}

// ByApp returns the MCP server of the app appID; an error wrapping ErrNoServer when it has none.
func (s *Service) ByApp(ctx context.Context, appID string) (store.MCPServer, error) {
	srv, err := s.store.MCPServerByApp(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		return store.MCPServer{}, ErrNoServer
	}
	return srv, err
}

// Lookup returns the active server whose code is code: ErrServerNotFound for an unknown code
// (or anything that cannot be one), ErrServerInactive for a disabled server; other errors are
// storage failures. The code is hashed before any check of its shape, and the stored hash is
// compared in constant time, as API keys are.
func (s *Service) Lookup(ctx context.Context, code string) (store.MCPServer, error) {
	if len(code) > 4*codeLen {
		return store.MCPServer{}, ErrServerNotFound
	}
	h := sha256.Sum256([]byte(code))
	if !wellFormed(code) {
		return store.MCPServer{}, ErrServerNotFound
	}
	srv, err := s.store.MCPServerByCodeHash(ctx, h[:])
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.MCPServer{}, ErrServerNotFound
	case err != nil:
		return store.MCPServer{}, err
	case subtle.ConstantTimeCompare(srv.CodeHash, h[:]) != 1:
		return store.MCPServer{}, ErrServerNotFound
	case srv.Status != store.MCPServerActive:
		return store.MCPServer{}, ErrServerInactive
	}
	return srv, nil
}

// wellFormed checks the public shape of a code; its timing only tells how a string is not one.
func wellFormed(code string) bool {
	if len(code) != codeLen {
		return false
	}
	for _, c := range []byte(code) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// RecordClient keeps the name of the client that initialized a session with the server,
// "<name>@<version>" as Dify names the MCP end user.
func (s *Service) RecordClient(ctx context.Context, serverID, name, version string) error {
	return s.store.SetMCPServerClient(ctx, serverID, name+"@"+version)
}

// Path is the path of the MCP endpoint of the server with code, from the server's root (not
// under the API's /v1), as Dify mounts it.
func Path(code string) string { return "/mcp/server/" + code + "/mcp" }
