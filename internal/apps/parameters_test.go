package apps

import (
	"reflect"
	"testing"
)

// TestParametersForm: every input shows its default ("" when it has none) and whether the DSL
// hides it; the label falls back to the variable.
func TestParametersForm(t *testing.T) {
	a := &App{UserInputForm: []InputField{
		{Type: InputText, Variable: "name", Label: "Name", Default: "Ada", MaxLength: 20},
		{Type: InputSelect, Variable: "tone", Options: []string{"warm", "dry"}, Extra: map[string]any{"hide": true}},
		{Type: InputParagraph, Variable: "notes", Extra: map[string]any{"hide": "yes"}},
	}}
	got := a.Parameters(Limits{}).UserInputForm
	want := []FormItem{
		{Type: InputText, Label: "Name", Variable: "name", Default: "Ada", MaxLength: 20},
		{Type: InputSelect, Label: "tone", Variable: "tone", Options: []string{"warm", "dry"}, Hide: true},
		{Type: InputParagraph, Label: "notes", Variable: "notes"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("form = %+v\nwant %+v", got, want)
	}
}
