package apps

import (
	"reflect"
	"testing"
)

func TestValidateInputs(t *testing.T) {
	a := &App{Name: "a", Mode: "chat", UserInputForm: []InputField{
		{Type: InputText, Variable: "name", MaxLength: 5},
		{Type: InputParagraph, Variable: "bio", Required: true},
		{Type: InputSelect, Variable: "tone", Options: []string{"warm", "dry"}, Default: "warm"},
		{Type: InputNumber, Variable: "n", Default: "3"},
		{Type: InputCheckbox, Variable: "ok"},
	}}
	for name, tc := range map[string]struct {
		in      map[string]any
		want    map[string]any
		wantErr string
	}{
		"defaults": {
			in:   map[string]any{"bio": "x", "extra": 1},
			want: map[string]any{"name": "", "bio": "x", "tone": "warm", "n": int64(3), "ok": ""},
		},
		"all given": {
			in:   map[string]any{"name": "Ada", "bio": "b", "tone": "dry", "n": "2.5", "ok": true},
			want: map[string]any{"name": "Ada", "bio": "b", "tone": "dry", "n": 2.5, "ok": true},
		},
		"required missing": {in: map[string]any{}, wantErr: "bio is required in input form"},
		"required empty":   {in: map[string]any{"bio": ""}, wantErr: "bio is required in input form"},
		"too long":         {in: map[string]any{"bio": "b", "name": "Adelheid"}, wantErr: "name in input form must be less than 5 characters"},
		"not a string":     {in: map[string]any{"bio": 3.0}, wantErr: "bio in input form must be a string"},
		"bad option":       {in: map[string]any{"bio": "b", "tone": "loud"}, wantErr: "tone in input form must be one of the following: ['warm', 'dry']"},
		"bad number":       {in: map[string]any{"bio": "b", "n": "three"}, wantErr: "n in input form must be a valid number"},
		"bad checkbox":     {in: map[string]any{"bio": "b", "ok": "yes"}, wantErr: "ok in input form must be a boolean"},
		"null bytes":       {in: map[string]any{"bio": "a\x00b"}, want: map[string]any{"name": "", "bio": "ab", "tone": "warm", "n": int64(3), "ok": ""}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := a.ValidateInputs(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}
