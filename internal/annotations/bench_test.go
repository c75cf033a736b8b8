package annotations

import (
	"context"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// BenchmarkMatch is what annotation reply adds before a message of an app with 1,000
// annotations: embedding the query (a loopback round trip to the fake upstream) and the search.
func BenchmarkMatch(b *testing.B) {
	e := storetest.NewEngine(b, storetest.SQLite)
	env := newEnv(b, e)
	ctx := context.Background()
	for i := range 1000 {
		if _, err := env.svc.Create(ctx, env.app.ID, fmt.Sprintf("Question number %d about topic %d?", i, i%37), "Answer."); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := env.svc.SetReply(ctx, env.app.ID, "enable", ReplySettings{EmbeddingProvider: "openai", EmbeddingModel: "text-embedding-3-small", ScoreThreshold: 0.9}); err != nil {
		b.Fatal(err)
	}
	if _, ok, err := env.svc.Match(ctx, env.app, "Question number 7 about topic 7?"); !ok || err != nil {
		b.Fatalf("no match: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := env.svc.Match(ctx, env.app, "Question number 7 about topic 7?"); err != nil {
			b.Fatal(err)
		}
	}
}
