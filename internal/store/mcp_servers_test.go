package store

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

// TestMCPServers: an app has at most one MCP server, found by app and by code hash; updates
// change its description, code, status and parameters; the last client's name is kept; bad
// values are refused; deleting the app deletes its server.
func TestMCPServers(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		app := mustApp(t, s, "mcp-app")
		other := mustApp(t, s, "mcp-other")
		hash := sha256.Sum256([]byte("code-1"))
		m := MCPServer{ID: NewID(), AppID: app, Description: "Answers questions.", CodeHash: hash[:], CodePrefix: "code",
			Status: MCPServerActive, Parameters: map[string]string{"topic": "What to write about"}}
		if err := s.CreateMCPServer(ctx, m); err != nil {
			t.Fatal(err)
		}
		dup := m
		dup.ID = NewID()
		if err := s.CreateMCPServer(ctx, dup); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second server of the app: %v", err)
		}
		dup.AppID = other
		if err := s.CreateMCPServer(ctx, dup); !errors.Is(err, ErrConflict) {
			t.Fatalf("a code hash in use: %v", err)
		}
		dup.AppID, dup.CodeHash = "no-such-app", []byte("x")
		if err := s.CreateMCPServer(ctx, dup); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an unknown app: %v", err)
		}
		got, err := s.MCPServerByCodeHash(ctx, hash[:])
		if err != nil || got.ID != m.ID || got.AppID != app || got.Parameters["topic"] != "What to write about" ||
			got.Status != MCPServerActive || got.CodePrefix != "code" || got.CreatedAt.IsZero() {
			t.Fatalf("by hash: %+v %v", got, err)
		}
		if _, err := s.MCPServerByCodeHash(ctx, []byte("nope")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}
		if _, err := s.MCPServerByApp(ctx, other); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an app without a server: %v", err)
		}

		rotated := sha256.Sum256([]byte("code-2"))
		got.CodeHash, got.CodePrefix, got.Status = rotated[:], "rot", MCPServerInactive
		got.Description, got.Parameters = "", nil
		if err := s.UpdateMCPServer(ctx, got); err != nil {
			t.Fatal(err)
		}
		if _, err := s.MCPServerByCodeHash(ctx, hash[:]); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the old code still finds the server: %v", err)
		}
		back, err := s.MCPServerByApp(ctx, app)
		if err != nil || back.Status != MCPServerInactive || back.CodePrefix != "rot" || len(back.Parameters) != 0 || back.Description != "" {
			t.Fatalf("after update: %+v %v", back, err)
		}
		if err := s.SetMCPServerClient(ctx, m.ID, "claude-ai@0.1.0"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMCPServerClient(ctx, m.ID, strings.Repeat("c", MaxMCPClientName+10)); err != nil {
			t.Fatal(err)
		}
		if back, _ := s.MCPServerByApp(ctx, app); len(back.ClientName) != MaxMCPClientName {
			t.Fatalf("client name %q", back.ClientName)
		}

		bad := back
		bad.Description = strings.Repeat("d", MaxMCPDescription+1)
		if err := s.UpdateMCPServer(ctx, bad); err == nil {
			t.Fatal("an over-long description was kept")
		}
		bad = back
		bad.Parameters = map[string]string{"topic": strings.Repeat("p", MaxMCPParamDescription+1)}
		if err := s.UpdateMCPServer(ctx, bad); err == nil {
			t.Fatal("an over-long parameter description was kept")
		}
		bad = back
		bad.Status = "paused"
		if err := s.UpdateMCPServer(ctx, bad); err == nil {
			t.Fatal("an unknown status was kept")
		}
		bad = back
		bad.ID = "no-such-server"
		if err := s.UpdateMCPServer(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an unknown server: %v", err)
		}

		if err := s.DeleteApp(ctx, app); err != nil {
			t.Fatal(err)
		}
		if _, err := s.MCPServerByCodeHash(ctx, rotated[:]); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the server of a deleted app: %v", err)
		}
	})
}

// mustApp imports an app named name and returns its id.
func mustApp(t *testing.T, s *Store, name string) string {
	t.Helper()
	a, err := s.CreateApp(t.Context(), name, "chat", `{"name":"`+name+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}
