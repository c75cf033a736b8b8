package listop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/workflow/value"
)

// Every list-operator node in the public Dify exports kept as DSL test data decodes and runs
// over a file list (all of them read sys.files).
func TestPublicExportListOperators(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../apps/dsl/testdata/public/*/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no public exports found: %v", err)
	}
	img := &value.File{Type: "image", TransferMethod: "local_file", Filename: "a.png", Extension: ".png", Size: 0}
	doc := &value.File{Type: "document", TransferMethod: "local_file", Filename: "b.pdf", Extension: ".pdf", Size: 10}
	ran := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Workflow struct {
				Graph struct {
					Nodes []struct {
						ID   string         `yaml:"id"`
						Data map[string]any `yaml:"data"`
					} `yaml:"nodes"`
				} `yaml:"graph"`
			} `yaml:"workflow"`
		}
		if err := yaml.Unmarshal(b, &d); err != nil {
			continue
		}
		for _, n := range d.Workflow.Graph.Nodes {
			if n.Data["type"] != "list-operator" {
				continue
			}
			raw, _ := json.Marshal(n.Data)
			var cfg Config
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatalf("%s %s: %v", filepath.Base(f), n.ID, err)
			}
			r, err := Apply(cfg, []any{img, doc}, func([]string) (any, bool) { return nil, false })
			if err != nil {
				t.Errorf("%s %s: %v", filepath.Base(f), n.ID, err)
				continue
			}
			for _, it := range r.Result {
				if it != img && it != doc {
					t.Errorf("%s %s: unexpected item %v", filepath.Base(f), n.ID, it)
				}
			}
			ran++
		}
	}
	if ran == 0 {
		t.Error("no list-operator nodes found")
	}
}
