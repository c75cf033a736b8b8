package store

import (
	"strings"
	"testing"
)

// TestStrategyStorage: a value is kept per app and key, replaced, deleted, and bounded.
func TestStrategyStorage(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		if _, ok, err := s.StrategyValue(ctx, "app-1", "conv-1"); ok || err != nil {
			t.Fatalf("before: %v %v", ok, err)
		}
		for _, v := range []string{`{"current_field_index":0}`, `{"current_field_index":1}`} {
			if err := s.SetStrategyValue(ctx, "app-1", "conv-1", []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetStrategyValue(ctx, "app-2", "conv-1", []byte("other")); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := s.StrategyValue(ctx, "app-1", "conv-1"); !ok || err != nil || string(v) != `{"current_field_index":1}` {
			t.Fatalf("after: %q %v %v", v, ok, err)
		}
		if err := s.DeleteStrategyValue(ctx, "app-1", "conv-1"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.StrategyValue(ctx, "app-1", "conv-1"); ok {
			t.Fatal("deleted value still there")
		}
		if v, ok, _ := s.StrategyValue(ctx, "app-2", "conv-1"); !ok || string(v) != "other" {
			t.Fatalf("another app's value: %q %v", v, ok)
		}
		if err := s.SetStrategyValue(ctx, "app-1", strings.Repeat("k", MaxStrategyKey+1), nil); err == nil {
			t.Fatal("an over-long key was kept")
		}
		if err := s.SetStrategyValue(ctx, "app-1", "k", make([]byte, MaxStrategyValue+1)); err == nil {
			t.Fatal("an over-long value was kept")
		}
	})
}
