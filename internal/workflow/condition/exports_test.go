package condition

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/workflow/value"
)

// exportNodes returns the data of every node of the given types in the public Dify exports kept
// as DSL test data.
func exportNodes(t *testing.T, types ...string) map[string][]json.RawMessage {
	t.Helper()
	files, err := filepath.Glob("../../apps/dsl/testdata/public/*/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no public exports found: %v", err)
	}
	want := map[string]bool{}
	for _, ty := range types {
		want[ty] = true
	}
	out := map[string][]json.RawMessage{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Workflow struct {
				Graph struct {
					Nodes []struct {
						ID   string         `yaml:"id"`
						Data map[string]any `yaml:"data"`
					} `yaml:"nodes"`
				} `yaml:"graph"`
			} `yaml:"workflow"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			continue // not every public file is a workflow export
		}
		for _, n := range doc.Workflow.Graph.Nodes {
			ty, _ := n.Data["type"].(string)
			if !want[ty] {
				continue
			}
			raw, err := json.Marshal(n.Data)
			if err != nil {
				t.Fatalf("%s %s: %v", f, n.ID, err)
			}
			out[ty] = append(out[ty], raw)
		}
	}
	return out
}

// sampleFor returns a value of a condition's declared variable type. Older exports declare no
// type, and a path into an object declares the object's; the operator then says what the value
// is.
func sampleFor(c Condition) any {
	varType := c.VarType
	if varType == "" || varType == "object" && len(c.VariableSelector) > 2 {
		switch c.ComparisonOperator {
		case OpEqual, OpNotEqual, OpGreater, OpLess, OpGreaterEq, OpLessEq:
			return int64(1)
		case OpIs, OpIsNot:
			if c.Value == "true" || c.Value == "false" {
				return true
			}
		}
		return "sample"
	}
	switch varType {
	case "number":
		return int64(1)
	case "boolean":
		return true
	case "object":
		return value.ObjectOf("k", "v")
	case "array[string]":
		return []any{"sample"}
	case "array[file]":
		return []any{&value.File{Type: "image", TransferMethod: "local_file", Filename: "a.png", Extension: ".png", Size: 1}}
	}
	return "sample"
}

// Every if-else and loop condition in the public exports decodes, uses a known operator, and
// evaluates without error against a value of its declared type.
func TestPublicExportConditions(t *testing.T) {
	t.Parallel()
	nodes := exportNodes(t, "if-else", "loop")
	known := map[string]bool{}
	for _, op := range Operators {
		known[op] = true
	}
	evaluated := 0
	for ty, list := range nodes {
		for _, raw := range list {
			var data struct {
				Cases           []Case      `json:"cases"`
				Conditions      []Condition `json:"conditions"`
				BreakConditions []Condition `json:"break_conditions"`
			}
			if err := json.Unmarshal(raw, &data); err != nil {
				t.Fatalf("%s: %v\n%s", ty, err, raw)
			}
			conds := append(append([]Condition(nil), data.Conditions...), data.BreakConditions...)
			for _, c := range data.Cases {
				conds = append(conds, c.Conditions...)
			}
			for _, c := range conds {
				if !known[c.ComparisonOperator] {
					t.Errorf("unknown operator %q", c.ComparisonOperator)
					continue
				}
				sample := sampleFor(c)
				lookup := func([]string) (any, bool) { return sample, true }
				if _, err := Evaluate([]Condition{c}, "and", lookup); err != nil {
					t.Errorf("%s condition %s %q %v on %s: %v", ty, c.VarType, c.ComparisonOperator, c.Value, value.TypeOf(sample), err)
				}
				evaluated++
			}
		}
	}
	if evaluated < 50 {
		t.Errorf("only %d conditions found in the public exports", evaluated)
	}
}
