package jinja

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/value"
)

func BenchmarkRenderLoop(b *testing.B) {
	vars := map[string]any{"arg1": []any{value.ObjectOf("url", "u1", "text", "t1"), value.ObjectOf("url", "u2", "text", "t2")}}
	tpl := "|URL|Summary|\n|---|---|\n{% for data in arg1 -%}\n|{{data.url}}|{{data.text}}|\n{% endfor -%}"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(context.Background(), tpl, vars, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
