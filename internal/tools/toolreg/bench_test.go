package toolreg_test

import (
	"net/http"
	"testing"

	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// BenchmarkFind is what an agent pays per registered tool when it prepares an answer: the
// revision read and the lookup in the providers held, on SQLite.
func BenchmarkFind(b *testing.B) {
	st := testdb.Open(b, storetest.NewEngine(b, storetest.SQLite))
	r, err := toolreg.New(toolreg.Options{Store: st, Builtin: builtin.Find, HTTPClient: &http.Client{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	api := toolregtest.NewAPI(b)
	if _, err := r.AddAPI(b.Context(), "inventory", toolreg.API{Schema: api.Document}, false); err != nil {
		b.Fatal(err)
	}
	ref := tools.Ref{Type: tools.TypeAPI, ProviderName: "inventory", Name: "getItem"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Find(b.Context(), ref); err != nil {
			b.Fatal(err)
		}
	}
}
