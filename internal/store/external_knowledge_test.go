package store

import (
	"errors"
	"testing"
)

// TestExternalKnowledgeAPIs: an external knowledge API is found by id and by name, listed by
// name, updated and deleted; names are unique; a knowledge base binds to one (an unknown one is
// refused), reads its binding back, and keeps the API from being deleted until it is gone.
func TestExternalKnowledgeAPIs(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		wiki, err := s.CreateExternalKnowledgeAPI(ctx, ExternalKnowledgeAPI{Name: "wiki", Endpoint: "https://rag.example.test/api", APIKeyEnv: "WIKI_KEY"})
		if err != nil || wiki.ID == "" || wiki.CreatedAt.IsZero() || wiki.UpdatedAt != wiki.CreatedAt {
			t.Fatalf("create: %+v %v", wiki, err)
		}
		if _, err := s.CreateExternalKnowledgeAPI(ctx, ExternalKnowledgeAPI{Name: "wiki", Endpoint: "https://x.test", APIKeyEnv: "K"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a name taken: %v", err)
		}
		if _, err := s.CreateExternalKnowledgeAPI(ctx, ExternalKnowledgeAPI{Name: "nokey", Endpoint: "https://x.test"}); err == nil {
			t.Fatal("an API without a key variable was stored")
		}
		arch, err := s.CreateExternalKnowledgeAPI(ctx, ExternalKnowledgeAPI{Name: "archive", Description: "old papers", Endpoint: "https://arch.test", APIKeyEnv: "ARCH_KEY"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.ExternalKnowledgeAPIByName(ctx, "archive"); err != nil || got != arch {
			t.Fatalf("by name: %+v %v", got, err)
		}
		if _, err := s.ExternalKnowledgeAPI(ctx, NewID()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
		list, err := s.ListExternalKnowledgeAPIs(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "archive" || list[1].Name != "wiki" {
			t.Fatalf("list: %+v %v", list, err)
		}
		arch.Name, arch.Endpoint, arch.APIKeyEnv = "papers", "https://papers.test/v1", "PAPERS_KEY"
		if err := s.UpdateExternalKnowledgeAPI(ctx, arch); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ExternalKnowledgeAPI(ctx, arch.ID); err != nil || got.Name != "papers" || got.Endpoint != "https://papers.test/v1" || got.APIKeyEnv != "PAPERS_KEY" {
			t.Fatalf("after update: %+v %v", got, err)
		}
		arch.Name = "wiki"
		if err := s.UpdateExternalKnowledgeAPI(ctx, arch); !errors.Is(err, ErrConflict) {
			t.Fatalf("renamed to a name taken: %v", err)
		}
		if err := s.UpdateExternalKnowledgeAPI(ctx, ExternalKnowledgeAPI{ID: NewID(), Name: "x", Endpoint: "https://x.test", APIKeyEnv: "K"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update of an unknown id: %v", err)
		}

		// A knowledge base bound to it.
		d, err := s.CreateDataset(ctx, Dataset{Name: "wiki-kb", CreatedBy: "acct-1", Provider: DatasetProviderExternal,
			ExternalKnowledgeAPIID: wiki.ID, ExternalKnowledgeID: "space-42", RetrievalModel: []byte(`{"top_k":3}`)})
		if err != nil {
			t.Fatal(err)
		}
		back, err := s.Dataset(ctx, d.ID)
		if err != nil || back.Provider != DatasetProviderExternal || back.ExternalKnowledgeAPIID != wiki.ID || back.ExternalKnowledgeID != "space-42" {
			t.Fatalf("binding read back: %+v %v", back, err)
		}
		if _, err := s.CreateDataset(ctx, Dataset{Name: "ghost", CreatedBy: "acct-1", Provider: DatasetProviderExternal,
			ExternalKnowledgeAPIID: NewID(), ExternalKnowledgeID: "x"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("bound to an unknown API: %v", err)
		}
		if _, err := s.CreateDataset(ctx, Dataset{Name: "half", CreatedBy: "acct-1", Provider: DatasetProviderExternal}); err == nil {
			t.Fatal("an external knowledge base without an API was stored")
		}
		if _, err := s.CreateDataset(ctx, Dataset{Name: "vendor-bound", CreatedBy: "acct-1", ExternalKnowledgeAPIID: wiki.ID}); err == nil {
			t.Fatal("a vendor dataset bound to an API was stored")
		}
		if n, err := s.ExternalKnowledgeAPIUsage(ctx, wiki.ID); err != nil || n != 1 {
			t.Fatalf("usage: %d %v", n, err)
		}
		back.ExternalKnowledgeID = "space-43"
		if err := s.UpdateDataset(ctx, back); err != nil {
			t.Fatal(err)
		}
		if again, _ := s.Dataset(ctx, d.ID); again.ExternalKnowledgeID != "space-43" {
			t.Fatalf("binding after update: %+v", again)
		}
		if err := s.DeleteExternalKnowledgeAPI(ctx, wiki.ID); !errors.Is(err, ErrConflict) {
			t.Fatalf("delete of an API in use: %v", err)
		}
		if err := s.DeleteDataset(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteExternalKnowledgeAPI(ctx, wiki.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteExternalKnowledgeAPI(ctx, wiki.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
	})
}
