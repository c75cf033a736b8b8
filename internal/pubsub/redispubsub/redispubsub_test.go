package redispubsub_test

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/internal/pubsub/pubsubtest"
	"github.com/parleyhq/parley/internal/pubsub/redispubsub"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
)

// TestContract runs the pubsub contract on two clients of one Redis, as two replicas.
func TestContract(t *testing.T) {
	c1, prefix := redistest.Client(t)
	c2, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	pubsubtest.Run(t, redispubsub.New(c1, prefix), redispubsub.New(c2, prefix))
}

// TestPrefixesAreSeparate: two deployments on one Redis do not hear each other.
func TestPrefixesAreSeparate(t *testing.T) {
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	got := make(chan string, 2)
	unsub, err := redispubsub.New(c, prefix).Subscribe(ctx, "x", func(p []byte) { got <- string(p) })
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	if err := redispubsub.New(c, prefix+"other:").Publish(ctx, "x", []byte("foreign")); err != nil {
		t.Fatal(err)
	}
	if err := redispubsub.New(c, prefix).Publish(ctx, "x", []byte("own")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != "own" {
		t.Fatalf("received %q first, want own", m)
	}
}
