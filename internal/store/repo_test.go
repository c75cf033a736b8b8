package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/store/storetest"
)

func TestWorkspaceIsStable(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openEngine(t, e, true)

		// Several pools racing to create it: one row, one id.
		const n = 8
		ids := make(chan string, n)
		errs := make(chan error, n)
		for range n {
			other := openEngine(t, e, false)
			go func() {
				w, err := other.Workspace(ctx)
				ids <- w.ID
				errs <- err
			}()
		}
		var first string
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("Workspace: %v", err)
			}
			id := <-ids
			if first == "" {
				first = id
			}
			if id != first {
				t.Fatalf("concurrent Workspace calls returned %s and %s", first, id)
			}
		}
		if _, err := uuid.Parse(first); err != nil {
			t.Errorf("workspace id %q is not a uuid: %v", first, err)
		}

		w, err := s.Workspace(ctx)
		if err != nil || w.ID != first || w.Name != DefaultWorkspaceName || w.CreatedAt.IsZero() {
			t.Fatalf("Workspace() = %+v, %v; want id %s", w, err, first)
		}
		// A fresh pool (a restart) reads the same row.
		again, err := openEngine(t, e, true).Workspace(ctx)
		if err != nil || again != w {
			t.Fatalf("after reopen Workspace() = %+v, %v; want %+v", again, err, w)
		}
		var rows int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM workspace").Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("workspace rows = %d, %v; want 1", rows, err)
		}
	})
}

func TestSyncApps(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openEngine(t, e, true)

		first, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}, {"writer", "completion"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 2 || first["support"].Mode != "chat" || first["writer"].Mode != "completion" {
			t.Fatalf("first sync = %+v", first)
		}
		for name, a := range first {
			if a.Name != name || a.CreatedAt.IsZero() {
				t.Errorf("app %s = %+v", name, a)
			}
			if _, err := uuid.Parse(a.ID); err != nil {
				t.Errorf("app %s id %q is not a uuid", name, a.ID)
			}
		}

		// Restart with a changed config: a fresh pool, support changes
		// mode, writer disappears from config, a new app appears.
		s2 := openEngine(t, e, true)
		second, err := s2.SyncApps(ctx, []AppSpec{{"support", "advanced-chat"}, {"flow", "workflow"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(second) != 2 {
			t.Fatalf("second sync returned %d apps, want 2: %+v", len(second), second)
		}
		if got := second["support"]; got.ID != first["support"].ID || got.Mode != "advanced-chat" || !got.CreatedAt.Equal(first["support"].CreatedAt) {
			t.Errorf("support after mode change = %+v, want id %s kept and mode advanced-chat", got, first["support"].ID)
		}
		if second["flow"].ID == "" || second["flow"].ID == first["support"].ID || second["flow"].ID == first["writer"].ID {
			t.Errorf("new app id = %q, want a fresh one", second["flow"].ID)
		}

		// Unconfigured apps are kept, with their id.
		w, err := s2.AppByName(ctx, "writer")
		if err != nil || w.ID != first["writer"].ID {
			t.Fatalf("AppByName(writer) = %+v, %v; want it kept", w, err)
		}
		byID, err := s2.AppByID(ctx, first["support"].ID)
		if err != nil || byID.Name != "support" || byID.Mode != "advanced-chat" {
			t.Fatalf("AppByID = %+v, %v", byID, err)
		}

		// Syncing the same config again changes nothing.
		third, err := s2.SyncApps(ctx, []AppSpec{{"support", "advanced-chat"}, {"flow", "workflow"}})
		if err != nil {
			t.Fatal(err)
		}
		for name, a := range second {
			if third[name] != a {
				t.Errorf("resync changed %s: %+v -> %+v", name, a, third[name])
			}
		}

		if _, err := s.AppByName(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("AppByName(nope) err = %v, want ErrNotFound", err)
		}
		if _, err := s.AppByID(ctx, uuid.NewString()); !errors.Is(err, ErrNotFound) {
			t.Errorf("AppByID(random) err = %v, want ErrNotFound", err)
		}
		if _, err := s.AppByID(ctx, "not-a-uuid"); !errors.Is(err, ErrNotFound) {
			t.Errorf("AppByID(not-a-uuid) err = %v, want ErrNotFound", err)
		}

		for _, bad := range [][]AppSpec{
			{{"", "chat"}},
			{{"x", ""}},
			{{"dup", "chat"}, {"dup", "workflow"}},
		} {
			if _, err := s.SyncApps(ctx, bad); err == nil {
				t.Errorf("SyncApps(%+v): want error", bad)
			}
		}
	})
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		apps, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		appID := apps["support"].ID
		created := time.Unix(1_700_000_000, 0).UTC()

		appKey := APIKey{ID: uuid.NewString(), Type: APIKeyTypeApp, AppID: appID, TokenHash: hashOf("app-one"), Prefix: "app-one", CreatedAt: created}
		dsKey := APIKey{ID: uuid.NewString(), Type: APIKeyTypeDataset, TokenHash: hashOf("dataset-two"), Prefix: "dataset-two", CreatedAt: created.Add(time.Second)}
		for _, k := range []APIKey{appKey, dsKey} {
			if err := s.CreateAPIKey(ctx, k); err != nil {
				t.Fatalf("CreateAPIKey(%s): %v", k.Prefix, err)
			}
		}

		got, err := s.APIKeyByHash(ctx, hashOf("app-one"))
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != appKey.ID || got.Type != APIKeyTypeApp || got.AppID != appID || !bytes.Equal(got.TokenHash, appKey.TokenHash) ||
			got.Prefix != "app-one" || !got.CreatedAt.Equal(created) || got.LastUsedAt != nil || got.RevokedAt != nil {
			t.Fatalf("APIKeyByHash = %+v", got)
		}
		if got, err := s.APIKeyByHash(ctx, hashOf("dataset-two")); err != nil || got.AppID != "" || got.Type != APIKeyTypeDataset {
			t.Fatalf("dataset key = %+v, %v", got, err)
		}
		if _, err := s.APIKeyByHash(ctx, hashOf("unknown")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown hash: err = %v, want ErrNotFound", err)
		}

		// Uniqueness, detected on both engines.
		dupHash := APIKey{ID: uuid.NewString(), Type: APIKeyTypeDataset, TokenHash: hashOf("app-one"), Prefix: "x"}
		if err := s.CreateAPIKey(ctx, dupHash); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate hash: err = %v, want ErrConflict", err)
		}
		dupID := APIKey{ID: appKey.ID, Type: APIKeyTypeDataset, TokenHash: hashOf("fresh"), Prefix: "x"}
		if err := s.CreateAPIKey(ctx, dupID); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate id: err = %v, want ErrConflict", err)
		}
		noApp := APIKey{ID: uuid.NewString(), Type: APIKeyTypeApp, AppID: uuid.NewString(), TokenHash: hashOf("orphan"), Prefix: "x"}
		if err := s.CreateAPIKey(ctx, noApp); !errors.Is(err, ErrNotFound) {
			t.Errorf("key for unknown app: err = %v, want ErrNotFound", err)
		}
		for _, bad := range []APIKey{
			{Type: APIKeyTypeDataset, TokenHash: hashOf("a"), Prefix: "x"},                        // no id
			{ID: "i", Type: "admin", TokenHash: hashOf("b"), Prefix: "x"},                         // bad type
			{ID: "i", Type: APIKeyTypeApp, TokenHash: hashOf("c"), Prefix: "x"},                   // app key, no app
			{ID: "i", Type: APIKeyTypeDataset, AppID: appID, TokenHash: hashOf("d"), Prefix: "x"}, // dataset key with app
			{ID: "i", Type: APIKeyTypeDataset, Prefix: "x"},                                       // no hash
			{ID: "i", Type: APIKeyTypeDataset, TokenHash: hashOf("e")},                            // no prefix
		} {
			if err := s.CreateAPIKey(ctx, bad); err == nil {
				t.Errorf("CreateAPIKey(%+v): want error", bad)
			}
		}

		keys, err := s.ListAPIKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || keys[0].ID != appKey.ID || keys[1].ID != dsKey.ID {
			t.Fatalf("ListAPIKeys = %+v, want [app, dataset] in creation order", keys)
		}

		// Touch only moves forward.
		used := created.Add(time.Hour)
		if err := s.TouchAPIKey(ctx, appKey.ID, used); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchAPIKey(ctx, appKey.ID, used.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchAPIKey(ctx, uuid.NewString(), used); err != nil {
			t.Fatalf("touch unknown id: %v", err)
		}
		got, _ = s.APIKeyByHash(ctx, hashOf("app-one"))
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(used) {
			t.Fatalf("LastUsedAt = %v, want %v", got.LastUsedAt, used)
		}

		// Revocation: visible through lookup, not repeatable.
		if err := s.RevokeAPIKey(ctx, appKey.ID); err != nil {
			t.Fatal(err)
		}
		got, err = s.APIKeyByHash(ctx, hashOf("app-one"))
		if err != nil || got.RevokedAt == nil {
			t.Fatalf("revoked key lookup = %+v, %v; want RevokedAt set", got, err)
		}
		if err := s.RevokeAPIKey(ctx, appKey.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("second revoke: err = %v, want ErrNotFound", err)
		}
		if err := s.RevokeAPIKey(ctx, uuid.NewString()); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoke unknown: err = %v, want ErrNotFound", err)
		}
		keys, _ = s.ListAPIKeys(ctx)
		if len(keys) != 2 || keys[0].RevokedAt == nil || keys[1].RevokedAt != nil {
			t.Errorf("ListAPIKeys after revoke = %+v", keys)
		}
	})
}

// TestConcurrentWriters hammers the store from many goroutines at once: on
// SQLite every write contends for the single write lock, and none may fail
// with "database is locked".
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		apps, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		appID := apps["support"].ID

		const goroutines, perGoroutine = 8, 50
		var wg sync.WaitGroup
		errs := make(chan error, goroutines*perGoroutine)
		for g := range goroutines {
			wg.Go(func() {
				for i := range perGoroutine {
					secret := fmt.Sprintf("key-%d-%d", g, i)
					k := APIKey{ID: uuid.NewString(), Type: APIKeyTypeApp, AppID: appID, TokenHash: hashOf(secret), Prefix: secret}
					var err error
					switch i % 3 {
					case 0: // plain insert
						err = s.CreateAPIKey(ctx, k)
					case 1: // a transaction that writes twice
						_, err = s.SyncApps(ctx, []AppSpec{{fmt.Sprintf("app-%d-%d", g, i), "chat"}, {"support", "chat"}})
						if err == nil {
							err = s.CreateAPIKey(ctx, k)
						}
					case 2: // write, then read it back, then touch
						if err = s.CreateAPIKey(ctx, k); err == nil {
							if _, err = s.APIKeyByHash(ctx, k.TokenHash); err == nil {
								err = s.TouchAPIKey(ctx, k.ID, time.Now())
							}
						}
					}
					if err != nil {
						errs <- fmt.Errorf("goroutine %d insert %d: %w", g, i, err)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		keys, err := s.ListAPIKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != goroutines*perGoroutine {
			t.Errorf("stored %d keys, want %d", len(keys), goroutines*perGoroutine)
		}
	})
}
