package sandbox_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/workflow/sandbox"
)

// TestOutputSpecsFromDSL reads the outputs of a code node as exports write them, in document
// order, telling children: null from a declared (even empty) mapping.
func TestOutputSpecsFromDSL(t *testing.T) {
	doc := `
outputs:
  zeta:
    children: null
    type: string
  alpha:
    type: object
    children:
      id:
        type: number
        children: null
      tags:
        type: array[string]
  empty:
    type: object
    children: {}
`
	want := sandbox.OutputSpecs{
		{Name: "zeta", Type: "string"},
		{Name: "alpha", Type: "object", Children: []sandbox.OutputSpec{{Name: "id", Type: "number"}, {Name: "tags", Type: "array[string]"}}},
		{Name: "empty", Type: "object", Children: []sandbox.OutputSpec{}},
	}
	var fromYAML struct {
		Outputs sandbox.OutputSpecs `yaml:"outputs"`
	}
	if err := yaml.Unmarshal([]byte(doc), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML.Outputs, want) {
		t.Fatalf("yaml: %#v\nwant %#v", fromYAML.Outputs, want)
	}
	var fromJSON struct {
		Outputs sandbox.OutputSpecs `json:"outputs"`
	}
	js := `{"outputs": {"zeta": {"children": null, "type": "string"}, "alpha": {"type": "object", "children":
		{"id": {"type": "number", "children": null}, "tags": {"type": "array[string]"}}}, "empty": {"type": "object", "children": {}}}}`
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON.Outputs, want) {
		t.Fatalf("json: %#v\nwant %#v", fromJSON.Outputs, want)
	}
	// The declared order is the order of the outputs.
	out, err := sandbox.CheckOutputs([]byte(`{"empty": {}, "alpha": {"tags": null, "id": 1}, "zeta": "z"}`), want, sandbox.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if string(out.JSON) != `{"zeta":"z","alpha":{"id":1,"tags":null},"empty":{}}` {
		t.Fatalf("order: %s", out.JSON)
	}
	// children: {} declares an object with no fields.
	if _, err := sandbox.CheckOutputs([]byte(`{"empty": {"x": 1}, "alpha": null, "zeta": null}`), want, sandbox.DefaultLimits()); err == nil ||
		err.Error() != "Not all output parameters are validated." {
		t.Fatalf("empty children: %v", err)
	}
}
