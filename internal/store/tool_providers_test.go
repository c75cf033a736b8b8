package store

import (
	"errors"
	"testing"
)

func TestToolProviders(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		rev0, err := s.ToolProvidersRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		api, err := s.CreateToolProvider(ctx, ToolProvider{Kind: ToolProviderAPI, Name: "weather", Definition: `{"a":1}`})
		if err != nil || api.ID == "" {
			t.Fatalf("create api = %+v, %v", api, err)
		}
		mcp, err := s.CreateToolProvider(ctx, ToolProvider{Kind: ToolProviderMCP, Name: "files", ServerIdentifier: "files-srv", Definition: `{"b":2}`})
		if err != nil {
			t.Fatal(err)
		}
		rev1, _ := s.ToolProvidersRevision(ctx)
		if rev1 != rev0+2 {
			t.Fatalf("revision %d after two creates, was %d", rev1, rev0)
		}
		for _, dup := range []ToolProvider{
			{Kind: ToolProviderAPI, Name: "weather", Definition: "{}"},
			{Kind: ToolProviderMCP, Name: "other", ServerIdentifier: "files-srv", Definition: "{}"},
		} {
			if _, err := s.CreateToolProvider(ctx, dup); !errors.Is(err, ErrConflict) {
				t.Fatalf("duplicate %+v: %v, want ErrConflict", dup, err)
			}
		}
		for _, bad := range []ToolProvider{
			{Kind: ToolProviderAPI, Name: "x", ServerIdentifier: "y", Definition: "{}"},
			{Kind: ToolProviderMCP, Name: "x", Definition: "{}"},
			{Kind: "plugin", Name: "x", Definition: "{}"},
		} {
			if _, err := s.CreateToolProvider(ctx, bad); err == nil {
				t.Fatalf("created %+v", bad)
			}
		}
		if rev, _ := s.ToolProvidersRevision(ctx); rev != rev1 {
			t.Fatalf("a refused create changed the revision: %d, was %d", rev, rev1)
		}
		list, err := s.ToolProviders(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "files" || list[0].ServerIdentifier != "files-srv" ||
			list[1].Name != "weather" || list[1].Definition != `{"a":1}` || list[1].ID != api.ID || list[1].ServerIdentifier != "" {
			t.Fatalf("list = %+v, %v", list, err)
		}
		if err := s.UpdateToolProviderDefinition(ctx, "files", `{"b":3}`); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateToolProviderDefinition(ctx, "nope", `{}`); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update unknown: %v", err)
		}
		rev2, _ := s.ToolProvidersRevision(ctx)
		re, err := s.ReplaceToolProvider(ctx, ToolProvider{Kind: ToolProviderAPI, Name: "weather", Definition: `{"a":2}`})
		if err != nil || re.ID != api.ID || re.Definition != `{"a":2}` || re.Name != "weather" {
			t.Fatalf("replace = %+v, %v", re, err)
		}
		if _, err := s.ReplaceToolProvider(ctx, ToolProvider{Kind: ToolProviderMCP, Name: "weather", ServerIdentifier: "w", Definition: "{}"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("replace with another kind: %v", err)
		}
		if _, err := s.ReplaceToolProvider(ctx, ToolProvider{Kind: ToolProviderAPI, Name: "nope", Definition: "{}"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("replace unknown: %v", err)
		}
		if _, err := s.CreateToolProvider(ctx, ToolProvider{Kind: ToolProviderMCP, Name: "other", ServerIdentifier: "other-srv", Definition: "{}"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReplaceToolProvider(ctx, ToolProvider{Kind: ToolProviderMCP, Name: "other", ServerIdentifier: "files-srv", Definition: "{}"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("replace with a taken identifier: %v", err)
		}
		if err := s.DeleteToolProvider(ctx, "other"); err != nil {
			t.Fatal(err)
		}
		if rev, _ := s.ToolProvidersRevision(ctx); rev != rev2+3 {
			t.Fatalf("revision %d after a replace, a create and a delete, want %d", rev, rev2+3)
		}
		if err := s.DeleteToolProvider(ctx, "weather"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteToolProvider(ctx, "weather"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
		list, _ = s.ToolProviders(ctx)
		if len(list) != 1 || list[0].ID != mcp.ID || list[0].Definition != `{"b":3}` {
			t.Fatalf("after update and delete: %+v", list)
		}
		if rev, _ := s.ToolProvidersRevision(ctx); rev != rev2+4 {
			t.Fatalf("revision %d after the last delete, want %d", rev, rev2+4)
		}
	})
}
