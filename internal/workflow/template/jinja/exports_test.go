package jinja

import (
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// Every template-transform template and jinja2 LLM prompt in the public Dify exports kept as DSL
// test data parses.
func TestPublicExportTemplatesParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../../apps/dsl/testdata/public/*/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no public exports found: %v", err)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Workflow struct {
				Graph struct {
					Nodes []struct {
						ID   string `yaml:"id"`
						Data struct {
							Type           string `yaml:"type"`
							Template       string `yaml:"template"`
							PromptTemplate any    `yaml:"prompt_template"`
						} `yaml:"data"`
					} `yaml:"nodes"`
				} `yaml:"graph"`
			} `yaml:"workflow"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			continue
		}
		for _, n := range doc.Workflow.Graph.Nodes {
			var texts []string
			if n.Data.Type == "template-transform" {
				texts = append(texts, n.Data.Template)
			}
			if msgs, ok := n.Data.PromptTemplate.([]any); ok && n.Data.Type == "llm" {
				for _, m := range msgs {
					if mm, ok := m.(map[string]any); ok && mm["edition_type"] == "jinja2" {
						s, _ := mm["jinja2_text"].(string)
						texts = append(texts, s)
					}
				}
			}
			for _, text := range texts {
				if err := Check(text); err != nil {
					t.Errorf("%s node %s: %v", filepath.Base(f), n.ID, err)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d templates found", checked)
	}
}
