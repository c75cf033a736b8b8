package apps

import (
	"maps"
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
		{Type: inputFile, Variable: "doc"},
		{Type: inputFileList, Variable: "docs"},
	}}
	type inputCase struct {
		in      map[string]any
		want    map[string]any
		wantErr string
	}
	cases := map[string]inputCase{}
	for name, tc := range map[string]inputCase{
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
		tc.in = maps.Clone(tc.in)
		if tc.want != nil {
			tc.want = maps.Clone(tc.want)
			tc.want["doc"], tc.want["docs"] = "", ""
		}
		cases[name] = tc
	}
	file := map[string]any{"type": "document", "transfer_method": "local_file", "upload_file_id": "f1"}
	cases["files"] = inputCase{in: map[string]any{"bio": "b", "doc": file, "docs": []any{file}},
		want: map[string]any{"name": "", "bio": "b", "tone": "warm", "n": int64(3), "ok": "", "doc": file, "docs": []any{file}}}
	// As Dify: a file input takes a file object, a file list a list of them.
	cases["file not an object"] = inputCase{in: map[string]any{"bio": "b", "doc": "sample"}, wantErr: "doc in input form must be a file"}
	cases["file list of text"] = inputCase{in: map[string]any{"bio": "b", "docs": []any{"sample"}}, wantErr: "docs in input form must be a list of files"}
	cases["file list not a list"] = inputCase{in: map[string]any{"bio": "b", "docs": file}, wantErr: "docs in input form must be a list of files"}
	for name, tc := range cases {
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
