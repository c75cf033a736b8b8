// Package testdb opens a migrated store on a test engine for the tests of packages that build on
// the store. It sits apart from storetest, which the store's own tests import and which therefore
// cannot import the store.
package testdb

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// Open opens the store of engine e, migrates it, and closes it when tb ends.
func Open(tb testing.TB, e storetest.Engine) *store.Store {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, e.DatabaseURL, e.DataDir)
	if err != nil {
		tb.Fatalf("store.Open(%s): %v", e.Name, err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close the %s store: %v", e.Name, err)
		}
	})
	if err := st.Migrate(ctx); err != nil {
		tb.Fatalf("migrate the %s store: %v", e.Name, err)
	}
	return st
}
