package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// TestFileArgRoundTrip: a file marshalled as the tool node puts it in the arguments decodes to
// the same bytes and metadata, alone or as the one file of a list; the size is the data's.
func TestFileArgRoundTrip(t *testing.T) {
	t.Parallel()
	data := []byte{0, 1, 2, 0xff, 'a'}
	in := FileArg{Filename: "a.bin", Extension: ".bin", MIMEType: "application/octet-stream", Size: 99, Type: "custom", Data: data}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"data_base64":"AAEC/2E="`)) {
		t.Fatalf("wire form %s", raw)
	}
	for _, form := range []json.RawMessage{raw, json.RawMessage("[" + string(raw) + "]")} {
		got, err := DecodeFileArg(form)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, data) || got.Filename != "a.bin" || got.MIMEType != in.MIMEType || got.Size != 5 || got.Type != "custom" {
			t.Fatalf("%s: %+v", form, got)
		}
	}
	// An empty file is a file.
	got, err := DecodeFileArg(json.RawMessage(`{"filename": "e.txt", "data_base64": ""}`))
	if err != nil || got.Size != 0 || got.Filename != "e.txt" {
		t.Fatalf("empty file: %+v %v", got, err)
	}
}

// TestDecodeFileArgRefuses: what holds no file content is ErrNoFile (Dify's dict with a URL
// only, text, null); two files where one is expected and bad base64 are bad arguments.
func TestDecodeFileArgRefuses(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]error{
		``:     ErrNoFile,
		`null`: ErrNoFile,
		`"x"`:  ErrNoFile,
		`{"dify_model_identity": "__dify__file__", "filename": "a.png", "url": "http://files/a.png"}`: ErrNoFile,
		`[]`: ErrBadArguments,
		`[{"data_base64": ""}, {"data_base64": ""}]`: ErrBadArguments,
		`{"data_base64": "!!"}`:                      ErrBadArguments,
		`[1,`:                                        ErrBadArguments,
	} {
		if _, err := DecodeFileArg(json.RawMessage(raw)); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", raw, err, want)
		}
	}
}
