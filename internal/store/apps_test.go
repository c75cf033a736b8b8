package store

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestImportedApps(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		cfg, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		rev0, err := s.AppsRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}

		a, err := s.CreateApp(ctx, "Support Bot", "chat", `{"name":"Support Bot"}`)
		if err != nil {
			t.Fatal(err)
		}
		if a.Source != AppSourceImport || a.Revision != 1 {
			t.Fatalf("created %+v", a)
		}
		got, err := s.AppByName(ctx, "Support Bot")
		if err != nil || got.ID != a.ID || got.Definition != `{"name":"Support Bot"}` || got.Source != AppSourceImport {
			t.Fatalf("AppByName = %+v, %v", got, err)
		}
		if c, _ := s.AppByName(ctx, "support"); c.Source != AppSourceConfig || c.Definition != "" {
			t.Fatalf("config app = %+v", c)
		}
		if rev1, _ := s.AppsRevision(ctx); rev1 <= rev0 {
			t.Fatalf("apps revision %d after create, was %d", rev1, rev0)
		}
		for _, name := range []string{"support", "Support Bot"} {
			if _, err := s.CreateApp(ctx, name, "chat", "{}"); !errors.Is(err, ErrConflict) {
				t.Errorf("CreateApp(%q) err = %v, want ErrConflict", name, err)
			}
		}

		// A config app of an imported app's name is left to the caller; the rest sync.
		synced, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}, {"Support Bot", "completion"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := synced["Support Bot"]; ok || synced["support"].ID != cfg["support"].ID {
			t.Fatalf("sync with an imported name = %+v", synced)
		}
		if got, _ := s.AppByName(ctx, "Support Bot"); got.Mode != "chat" || got.Source != AppSourceImport || got.Revision != 1 {
			t.Fatalf("sync changed the imported app: %+v", got)
		}

		list, err := s.ListApps(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "Support Bot" || list[1].Name != "support" {
			t.Fatalf("ListApps = %+v, %v", list, err)
		}
		if r, err := s.AppRevision(ctx, a.ID); err != nil || r != 1 {
			t.Fatalf("AppRevision = %d, %v", r, err)
		}

		// Publishing numbers versions and bumps the revision.
		v1, err := s.PublishApp(ctx, a.ID)
		if err != nil || v1.Version != 1 || v1.Definition != `{"name":"Support Bot"}` {
			t.Fatalf("PublishApp = %+v, %v", v1, err)
		}
		v2, err := s.PublishApp(ctx, a.ID)
		if err != nil || v2.Version != 2 || v2.ID == v1.ID {
			t.Fatalf("second PublishApp = %+v, %v", v2, err)
		}
		if got, _ := s.AppByID(ctx, a.ID); got.PublishedVersionID != v2.ID || got.Revision != 3 {
			t.Fatalf("after publish: %+v", got)
		}
		if got, err := s.AppVersion(ctx, v1.ID); err != nil || got.Version != 1 || got.AppID != a.ID {
			t.Fatalf("AppVersion = %+v, %v", got, err)
		}
		if _, err := s.PublishApp(ctx, cfg["support"].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("publish a config app: err = %v, want ErrNotFound", err)
		}

		// Deleting revokes the keys, frees the name and hides the app; the row stays.
		key := APIKey{ID: uuid.NewString(), Type: APIKeyTypeApp, AppID: a.ID, TokenHash: hashOf("app-imported"), Prefix: "app-imp", CreatedAt: time.Now()}
		if err := s.CreateAPIKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		revBefore, _ := s.AppsRevision(ctx)
		if err := s.DeleteApp(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if k, _ := s.APIKeyByHash(ctx, hashOf("app-imported")); k.RevokedAt == nil {
			t.Fatal("key of a deleted app not revoked")
		}
		if _, err := s.AppRevision(ctx, a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("AppRevision of a deleted app: %v", err)
		}
		if _, err := s.AppByName(ctx, "Support Bot"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("AppByName of a deleted app: %v", err)
		}
		if got, err := s.AppByID(ctx, a.ID); err != nil || got.DeletedAt == nil {
			t.Fatalf("AppByID of a deleted app = %+v, %v", got, err)
		}
		if revAfter, _ := s.AppsRevision(ctx); revAfter <= revBefore {
			t.Fatalf("apps revision %d after delete, was %d", revAfter, revBefore)
		}
		if err := s.DeleteApp(ctx, a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		again, err := s.CreateApp(ctx, "Support Bot", "completion", "{}")
		if err != nil || again.ID == a.ID {
			t.Fatalf("re-create after delete = %+v, %v", again, err)
		}
		if list, _ := s.ListApps(ctx); len(list) != 2 {
			t.Fatalf("ListApps after delete = %+v", list)
		}
	})
}

func TestConcurrentPublish(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		a, err := s.CreateApp(ctx, "flow", "workflow", "{}")
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		versions := make(chan int64, n)
		for range n {
			wg.Go(func() {
				v, err := s.PublishApp(ctx, a.ID)
				if err != nil {
					t.Error(err)
					return
				}
				versions <- v.Version
			})
		}
		wg.Wait()
		close(versions)
		seen := map[int64]bool{}
		for v := range versions {
			if seen[v] || v < 1 || v > n {
				t.Errorf("version %d given twice or out of range", v)
			}
			seen[v] = true
		}
	})
}
