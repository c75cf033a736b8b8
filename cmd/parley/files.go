package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// fileStorage is where the server keeps the content of uploaded files, and what it says about it.
type fileStorage struct {
	blobs blob.Store
	// kind is "database", "directory" (PARLEY_FILES_DIR) or "data directory".
	kind string
	// legacy is the data directory's files directory when blobs is elsewhere and it exists:
	// files written there before are read from it until `parley files migrate` copies them.
	legacy *blob.Dir
}

// openFileStorage chooses where files are kept: PARLEY_FILES_DIR when set (a directory every
// replica shares), else the database on PostgreSQL, else the data directory (SQLite: one
// process). Files an earlier version kept in the data directory stay readable through a
// fallback on this replica.
func openFileStorage(cfg *config.Config, st *store.Store) (fileStorage, error) {
	local := blob.DefaultRoot(cfg.DataDir)
	var storage fileStorage
	switch {
	case cfg.FilesDir != "":
		d, err := blob.NewDir(cfg.FilesDir)
		if err != nil {
			return fileStorage{}, err
		}
		storage = fileStorage{blobs: d, kind: "directory"}
		if same, _ := sameDir(cfg.FilesDir, local); same {
			return storage, nil
		}
	case st.Dialect() == store.DialectPostgres:
		db, err := st.Blobs()
		if err != nil {
			return fileStorage{}, err
		}
		storage = fileStorage{blobs: db, kind: "database"}
	default:
		d, err := blob.NewDir(local)
		if err != nil {
			return fileStorage{}, err
		}
		return fileStorage{blobs: d, kind: "data directory"}, nil
	}
	if fi, err := os.Stat(local); err == nil && fi.IsDir() {
		legacy, err := blob.NewDir(local)
		if err != nil {
			return fileStorage{}, err
		}
		storage.legacy = legacy
		storage.blobs = blob.Fallback{Primary: storage.blobs, Legacy: legacy}
	}
	return storage, nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// errFound stops a walk at the first key.
var errFound = errors.New("found")

// warnLegacyFiles logs, once at start-up, that the data directory holds files other replicas
// cannot read.
func (s fileStorage) warnLegacyFiles(ctx context.Context, log *slog.Logger) {
	if s.legacy == nil {
		return
	}
	err := s.legacy.Keys(ctx, func(string) error { return errFound })
	if errors.Is(err, errFound) {
		log.Warn("the data directory holds uploaded files from before files were kept in the "+s.kind+
			"; only this replica reads them until they are copied: run `parley files migrate`",
			"dir", s.legacy.Root())
	}
}

func newFilesCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{Use: "files", Short: "Manage the storage of uploaded files"}
	var from string
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Copy uploaded files from a data directory to where files are kept now",
		Long: "Copy the uploaded files (uploads, document sources, tool files) that an earlier version kept\n" +
			"in the data directory (<data dir>/files, or --from) to where this configuration keeps them:\n" +
			"the database on PostgreSQL, or PARLEY_FILES_DIR. Files already there are skipped, so it can\n" +
			"be run again, and while servers run. The data directory is left as it is.",
		Args: cobra.NoArgs,
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, _ []string, e *env) error {
			ctx := cmd.Context()
			if from == "" {
				from = blob.DefaultRoot(e.cfg.DataDir)
			}
			if fi, err := os.Stat(from); err != nil || !fi.IsDir() {
				return fmt.Errorf("no files directory at %s", from)
			}
			storage, err := openFileStorage(e.cfg, e.store)
			if err != nil {
				return err
			}
			dst := storage.blobs
			if fb, ok := dst.(blob.Fallback); ok {
				dst = fb.Primary // not through the fallback: it would find every file "present"
			}
			if d, ok := dst.(*blob.Dir); ok {
				if same, _ := sameDir(from, d.Root()); same {
					return fmt.Errorf("files are kept in %s already: set PARLEY_FILES_DIR, or use PostgreSQL, to move them", from)
				}
			}
			src, err := blob.NewDir(from)
			if err != nil {
				return err
			}
			res, err := blob.Copy(ctx, dst, src, nil)
			fmt.Fprintf(cmd.OutOrStdout(), "copied %d files (%d bytes) to the %s; %d were there already\n",
				res.Copied, res.Bytes, storage.kind, res.Present)
			return err
		}),
	}
	migrate.Flags().StringVar(&from, "from", "", "directory to copy from (default: <data dir>/files)")
	cmd.AddCommand(migrate)
	return cmd
}
