package nodes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

type recorder struct {
	mu     sync.Mutex
	events []run.Event
}

func (r *recorder) Emit(ev run.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// TestPublicIterationBodiesRun runs the iteration nodes of public Dify exports (files Parley's
// authors did not write) whose bodies hold only node types Parley runs: the iteration node and
// its children exactly as exported (old and new shapes, models rewritten to the fake provider's),
// behind a start node, over two items. Each item runs the whole body with its own item and its
// LLM calls, and the output has one element per item, in order.
func TestPublicIterationBodiesRun(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"svcvit-book-translation.yml", "svcvit-claude3-code-translation.yml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("..", "..", "apps", "dsl", "testdata", "public", "workflow", file))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Workflow struct {
					Graph struct {
						Nodes []map[string]any `yaml:"nodes"`
						Edges []map[string]any `yaml:"edges"`
					} `yaml:"graph"`
				} `yaml:"workflow"`
			}
			if err := yaml.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			var (
				iterID string
				iter   map[string]any
				kept   = map[string]bool{}
				gnodes []any
				llms   int
			)
			for _, n := range doc.Workflow.Graph.Nodes {
				if data, _ := n["data"].(map[string]any); data["type"] == "iteration" {
					iterID, iter = n["id"].(string), data
				}
			}
			if iterID == "" {
				t.Fatal("no iteration node")
			}
			for _, n := range doc.Workflow.Graph.Nodes {
				data, _ := n["data"].(map[string]any)
				id, _ := n["id"].(string)
				if id != iterID && n["parentId"] != iterID && data["iteration_id"] != iterID {
					continue
				}
				if data["type"] == "llm" {
					llms++
					data["model"] = map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "chat", "completion_params": map[string]any{}}
				}
				kept[id] = true
				gnodes = append(gnodes, n)
			}
			gnodes = append(gnodes, map[string]any{"id": "start", "data": map[string]any{"type": "start", "title": "Start"}})
			gedges := []any{map[string]any{"source": "start", "target": iterID, "sourceHandle": "source"}}
			for _, e := range doc.Workflow.Graph.Edges {
				if kept[e["source"].(string)] && kept[e["target"].(string)] {
					gedges = append(gedges, e)
				}
			}
			g, err := workflow.Parse(map[string]any{"nodes": gnodes, "edges": gedges})
			if err != nil {
				t.Fatal(err)
			}
			d, up := deps(t)
			reg := nodes.Registry(d)
			if ps := g.Validate(reg.Supports); len(ps) > 0 {
				t.Fatalf("problems: %v", ps)
			}
			pool := workflow.NewPool()
			pool.Set(workflow.ScopeSys, workflow.SysQuery, "q")
			sel := workflow.Selector(iter["iterator_selector"])
			pool.Set(sel[0], sel[1], []any{"first part ONE", "second part TWO"})
			rec := &recorder{}
			rep := workflow.NewEngine(workflow.Options{Nodes: reg}).Execute(context.Background(),
				workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: rec, Env: &nodes.Env{}})
			if rep.Status != workflow.StatusSucceeded || rep.Usage.TotalTokens == 0 {
				t.Fatalf("report = %+v", rep)
			}
			out, ok := pool.Get([]string{iterID, "output"})
			items, _ := out.([]any)
			if !ok || len(items) != 2 {
				t.Fatalf("output = %#v", out)
			}
			for _, it := range items {
				if s, _ := it.(string); !strings.HasPrefix(s, "Echo:") {
					t.Fatalf("output = %#v", out)
				}
			}
			saw := map[string]bool{}
			for _, req := range up.Requests() {
				for _, m := range req.Messages {
					for _, w := range []string{"ONE", "TWO"} {
						if strings.Contains(m.Text(), w) {
							saw[w] = true
						}
					}
				}
			}
			if !saw["ONE"] || !saw["TWO"] || len(up.Requests()) != 2*llms {
				t.Fatalf("%d model calls for %d LLM nodes × 2 items; items seen %v", len(up.Requests()), llms, saw)
			}
			nexts := 0
			for _, ev := range rec.events {
				if ev.Kind == run.EventIterationNext {
					nexts++
				}
			}
			if nexts != 2 {
				t.Fatalf("%d iteration_next events", nexts)
			}
		})
	}
}
