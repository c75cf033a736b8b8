package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store/storetest"
)

func TestZZExp(t *testing.T) {
	if os.Getenv("ZZEXP") == "" {
		t.Skip()
	}
	mode := os.Getenv("ZZEXP")
	ctx := t.Context()
	s := openEngine(t, storetest.NewEngine(t, storetest.SQLite), true)
	if cs := os.Getenv("ZZCACHE"); cs != "" {
		s.db.SetMaxOpenConns(1)
		if _, err := s.db.Exec("PRAGMA cache_size=" + cs); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	ds := NewID()
	total := 0
	var spent time.Duration
	for batch := range 110 {
		texts := make([]string, 1000)
		kws := make([][]string, 1000)
		nodes := make([]string, 1000)
		for i := range texts {
			texts[i] = benchText(r, 500)
			k := strings.Fields(benchText(r, 60))
			if len(k) > 10 {
				k = k[:10]
			}
			kws[i] = k
			nodes[i] = NewID()
		}
		start := time.Now()
		err := s.WithTx(ctx, func(tx *sql.Tx) error {
			base := batch*1000 + 1
			switch mode {
			case "fts-values":
				var args []any
				for i, tx := range texts {
					args = append(args, base+i, tx)
				}
				return s.insertMany(ctx, tx, "INSERT INTO index_fts (rowid, terms)", "(?, ?)", 2, args)
			case "fts-json":
				b, _ := json.Marshal(texts)
				_, err := tx.Exec("INSERT INTO index_fts (rowid, terms) SELECT ? + key, value FROM json_each(?)", base, string(b))
				return err
			case "kw-values":
				var args []any
				for i := range kws {
					for _, k := range kws[i] {
						args = append(args, ds, k, nodes[i])
					}
				}
				return s.insertMany(ctx, tx, "INSERT OR IGNORE INTO index_keywords (dataset_id, keyword, node_id)", "(?, ?, ?)", 3, args)
			case "kw-json":
				var rows [][]string
				for i := range kws {
					for _, k := range kws[i] {
						rows = append(rows, []string{k, nodes[i]})
					}
				}
				b, _ := json.Marshal(rows)
				_, err := tx.Exec("INSERT OR IGNORE INTO index_keywords (dataset_id, keyword, node_id) SELECT ?, value->>0, value->>1 FROM json_each(?)", ds, string(b))
				return err
			}
			return fmt.Errorf("mode")
		})
		if err != nil {
			t.Fatal(err)
		}
		if batch >= 100 {
			spent += time.Since(start)
			total += 1000
		}
	}
	t.Logf("%s: %.0f nodes/s", mode, float64(total)/spent.Seconds())
}
