package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
)

// TestOpenFileStorage: where files go for each engine and PARLEY_FILES_DIR, and that files an
// earlier version left in the data directory stay readable where they are not the store.
func TestOpenFileStorage(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		st := testdb.Open(t, e)
		dataDir := t.TempDir()
		legacy, err := blob.NewDir(blob.DefaultRoot(dataDir))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := legacy.Put(ctx, "uploads/app/old", strings.NewReader("old"), 10); err != nil {
			t.Fatal(err)
		}
		read := func(s blob.Store, key string) (string, error) {
			rc, err := s.Open(ctx, key)
			if err != nil {
				return "", err
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			return string(b), err
		}
		shared := filepath.Join(t.TempDir(), "shared")
		for _, tc := range []struct {
			name, filesDir, wantKind string
		}{
			{"default", "", map[string]string{storetest.SQLite: "data directory", storetest.Postgres: "database"}[e.Name]},
			{"shared directory", shared, "directory"},
			{"shared directory is the data directory", blob.DefaultRoot(dataDir), "directory"},
		} {
			s, err := openFileStorage(&config.Config{DataDir: dataDir, FilesDir: tc.filesDir}, st)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if s.kind != tc.wantKind {
				t.Fatalf("%s: kind %q, want %q", tc.name, s.kind, tc.wantKind)
			}
			if got, err := read(s.blobs, "uploads/app/old"); err != nil || got != "old" {
				t.Fatalf("%s: the data directory's file = %q, %v", tc.name, got, err)
			}
			key := "uploads/app/" + strings.ReplaceAll(tc.name, " ", "-")
			if _, _, err := s.blobs.Put(ctx, key, strings.NewReader("new"), 10); err != nil {
				t.Fatal(err)
			}
			_, err = legacy.Open(ctx, key)
			inDataDir := err == nil
			if wantInDataDir := tc.wantKind == "data directory" || tc.filesDir == blob.DefaultRoot(dataDir); inDataDir != wantInDataDir {
				t.Fatalf("%s: new file in the data directory: %v, want %v", tc.name, inDataDir, wantInDataDir)
			}
			if tc.filesDir == shared {
				if _, err := os.Stat(filepath.Join(shared, filepath.FromSlash(key))); err != nil {
					t.Fatalf("%s: not in the shared directory: %v", tc.name, err)
				}
			}
		}
		if e.Name == storetest.Postgres {
			db, err := st.Blobs()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Open(ctx, "uploads/app/default"); err != nil {
				t.Fatalf("PostgreSQL's default store is not the database: %v", err)
			}
			if _, err := db.Open(ctx, "uploads/app/old"); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("the fallback copied a file into the database: %v", err)
			}
		}
	})
}
