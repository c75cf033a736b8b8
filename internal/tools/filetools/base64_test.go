package filetools_test

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/filetools"
)

const b64 = "bowenliang123/base64_codec/base64_codec"

// pngHead is the start of a PNG file.
var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// TestBase64FileRoundTrip: a file encoded by base64_file_encoder and decoded by
// base64_file_decoder is the same bytes; the decoder names the file by output_filename, adding
// the extension of the type it recognises.
func TestBase64FileRoundTrip(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	r := rand.NewChaCha8([32]byte{1})
	for _, data := range [][]byte{
		{0},
		[]byte("plain text, no magic"),
		append(append([]byte{}, pngHead...), make([]byte, 300)...),
		func() []byte { b := make([]byte, 70_001); _, _ = r.Read(b); return b }(),
	} {
		enc := invoke(t, s, b64, "base64_file_encoder", nil, fileArgs(t, "input_file", tools.FileArg{Filename: "in.bin", Data: data}, nil))
		if enc.IsError || enc.Text != base64.StdEncoding.EncodeToString(data) {
			t.Fatalf("encode: %.80s", enc.Text)
		}
		dec := invoke(t, s, b64, "base64_file_decoder", nil, jsonOf(t, map[string]any{"encoded_text": enc.Text, "output_filename": "out"}))
		if dec.IsError || len(dec.Files) != 1 || !bytes.Equal(dec.Files[0].Data, data) {
			t.Fatalf("decode: %+v", dec.Text)
		}
		if bytes.HasPrefix(data, pngHead) {
			if f := dec.Files[0]; f.Name != "out.png" || f.MIMEType != "image/png" {
				t.Fatalf("png named %q, %q", f.Name, f.MIMEType)
			}
		} else if f := dec.Files[0]; f.Name != "out" || f.MIMEType != "application/octet-stream" {
			t.Fatalf("unknown type named %q, %q", f.Name, f.MIMEType)
		}
	}
}

// TestBase64FileDecoderPieces: the texts split at splitter_str ("\n\n" by default; a written
// "\n" is a line break) each make a file, named by the line of output_filename of the same
// rank; a name that has the recognised extension keeps it; a type not recognised is guessed
// from the name; a data URI's prefix is skipped; empty pieces and empty files are left out.
func TestBase64FileDecoderPieces(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	enc := base64.StdEncoding.EncodeToString
	text := enc([]byte("one")) + "\n\n\n\n" + "data:image/png;base64," + enc(pngHead) + "\n\n" + enc([]byte("%PDF-1.7")) + "\n\n" + "===="
	res := invoke(t, s, b64, "base64_file_decoder", nil, jsonOf(t, map[string]any{"encoded_text": text, "output_filename": "a.txt\n\nb.png\n"}))
	if res.IsError || len(res.Files) != 3 {
		t.Fatalf("%+v", res)
	}
	want := []tools.File{{Name: "a.txt", MIMEType: "text/plain", Data: []byte("one")}, {Name: "b.png", MIMEType: "image/png", Data: pngHead},
		{Name: "", MIMEType: "application/pdf", Data: []byte("%PDF-1.7")}}
	for i, w := range want {
		if g := res.Files[i]; g.Name != w.Name || g.MIMEType != w.MIMEType || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("file %d: %q %q %q, want %q %q %q", i, g.Name, g.MIMEType, g.Data, w.Name, w.MIMEType, w.Data)
		}
	}
	for splitter, joined := range map[string]string{"---": enc([]byte("x")) + "---" + enc([]byte("y")), `\n`: enc([]byte("x")) + "\n" + enc([]byte("y"))} {
		res := invoke(t, s, b64, "base64_file_decoder", nil, jsonOf(t, map[string]any{"encoded_text": joined, "splitter_str": splitter}))
		if res.IsError || len(res.Files) != 2 || string(res.Files[1].Data) != "y" {
			t.Fatalf("splitter %q: %+v", splitter, res)
		}
	}
	wantError(t, invoke(t, s, b64, "base64_file_decoder", nil, `{"encoded_text": "YQ"}`), "Failed to decode base64 text, error: Incorrect padding")
	wantError(t, invoke(t, s, b64, "base64_file_decoder", nil, `{}`), "Empty input encoded_text")
}

// TestBase64ImageTools: an image is encoded to a data URI of its type, and decoded back to an
// image of the type its prefix names (PNG without one).
func TestBase64ImageTools(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	res := invoke(t, s, b64, "base64_image_encoder", nil, fileArgs(t, "input_image", tools.FileArg{Filename: "a.jpg", MIMEType: "image/jpeg", Data: []byte{1, 2, 3}}, nil))
	if res.Text != "data:image/jpeg;base64,AQID" {
		t.Fatalf("%+v", res)
	}
	res = invoke(t, s, b64, "base64_image_encoder", nil, fileArgs(t, "input_image", tools.FileArg{Filename: "a.png", Data: []byte{1}}, nil))
	if res.Text != "data:image/png;base64,AQ==" {
		t.Fatalf("type from the name: %+v", res)
	}
	for text, wantType := range map[string]string{
		"data:image/jpeg;base64,AQID":   "image/jpeg",
		"AQID":                          "image/png",
		"data:image/x-nope;base64,AQID": "",
	} {
		res := invoke(t, s, b64, "base64_image_decoder", nil, jsonOf(t, map[string]any{"encoded_text": text, "output_filename": "pic"}))
		if res.IsError || len(res.Files) != 1 || res.Files[0].MIMEType != wantType || res.Files[0].Name != "pic" || !bytes.Equal(res.Files[0].Data, []byte{1, 2, 3}) {
			t.Fatalf("%s: %+v", text, res)
		}
	}
	wantError(t, invoke(t, s, b64, "base64_image_decoder", nil, `{"encoded_text": ""}`), "Invalid input encoded_text")
	wantError(t, invoke(t, s, b64, "base64_image_encoder", nil, `{}`), "Not a valid file for input input_image")
	wantError(t, invoke(t, s, b64, "base64_file_encoder", nil, `{"input_file": {"filename": "a", "url": "http://x/a"}}`), "Not a valid file for input input_file")
}

// TestBase64Text: text and hex conversions read Base64 as Python's base64 module does.
func TestBase64Text(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	urlsafe := map[string]any{"urlsafe_enabled": "true"}
	for _, tc := range []struct {
		name       string
		configured map[string]any
		args       string
		want       string
	}{
		{"base64_encoder", nil, `{"plain_text": "héllo wörld"}`, "aMOpbGxvIHfDtnJsZA=="},
		{"base64_encoder", nil, `{"plain_text": ""}`, ""},
		{"base64_decoder", nil, `{"encoded_text": "aMOpbGxvIHfDtnJsZA=="}`, "héllo wörld"},
		// Characters outside the alphabet are skipped; what follows the padding is ignored.
		{"base64_decoder", nil, `{"encoded_text": "aG\nVs*bG8=trailing"}`, "hello"},
		{"base64_decoder", urlsafe, `{"encoded_text": "Pz4_"}`, "?>?"},
		{"base64_decoder", urlsafe, `{"encoded_text": "Pz4/"}`, "?>?"},
		{"base64_to_hex", nil, `{"encoded_text": "3q2+7w=="}`, "deadbeef"},
		{"base64_to_hex", urlsafe, `{"encoded_text": "3q2-7w=="}`, "deadbeef"},
		{"hex_to_base64", nil, `{"hex_text": " 0xdeadbeef "}`, "3q2+7w=="},
		{"hex_to_base64", urlsafe, `{"hex_text": "DE AD be  ef"}`, "3q2-7w=="},
		{"hex_to_base64", nil, `{}`, ""},
	} {
		if res := invoke(t, s, b64, tc.name, tc.configured, tc.args); res.IsError || res.Text != tc.want {
			t.Errorf("%s %s: %+v, want %q", tc.name, tc.args, res, tc.want)
		}
	}
	for _, tc := range []struct{ name, args, want string }{
		{"base64_decoder", `{"encoded_text": "YQ"}`, "Failed to decode Base64 text input, Exception: Incorrect padding"},
		// Without urlsafe_enabled "_" is not Base64: three characters are left.
		{"base64_decoder", `{"encoded_text": "Pz4_"}`, "Incorrect padding"},
		{"base64_decoder", `{"encoded_text": "YWJjZ"}`, "number of data characters (5) cannot be 1 more than a multiple of 4"},
		{"base64_decoder", `{"encoded_text": "/w=="}`, "'utf-8' codec can't decode byte 0xff in position 0"},
		{"base64_decoder", `{"encoded_text": "YWJj é"}`, "string argument should contain only ASCII characters"},
		{"hex_to_base64", `{"hex_text": "abc"}`, "the length of hex text must be an even number"},
		{"hex_to_base64", `{"hex_text": "ab c"}`, "non-hexadecimal number found in fromhex() arg at position 4"},
		{"hex_to_base64", `{"hex_text": "zz"}`, "non-hexadecimal number found in fromhex() arg at position 0"},
	} {
		wantError(t, invoke(t, s, b64, tc.name, nil, tc.args), tc.want)
	}
}

// TestBase64Limits: inputs and outputs over the bounds are refused with an answer saying so.
func TestBase64Limits(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{MaxFileBytes: 10, MaxTextBytes: 64, MaxDecodedBytes: 12, MaxFiles: 2})
	wantError(t, invoke(t, s, b64, "base64_file_encoder", nil, fileArgs(t, "input_file", tools.FileArg{Filename: "big", Data: make([]byte, 11)}, nil)),
		"the file is 11 bytes; this server takes at most 10")
	if res := invoke(t, s, b64, "base64_file_encoder", nil, fileArgs(t, "input_file", tools.FileArg{Data: make([]byte, 10)}, nil)); res.IsError {
		t.Fatalf("at the bound: %+v", res)
	}
	wantError(t, invoke(t, s, b64, "base64_encoder", nil, jsonOf(t, map[string]any{"plain_text": strings.Repeat("a", 65)})),
		"plain_text is 65 bytes; this server takes at most 64")
	wantError(t, invoke(t, s, b64, "base64_file_decoder", nil, `{"encoded_text": "YQ==\n\nYQ==\n\nYQ=="}`), "at most 2 files")
	wantError(t, invoke(t, s, b64, "base64_file_decoder", nil, `{"encoded_text": "YWJjZGVmZ2g=\n\nYWJjZGVm"}`), "over 12 bytes")
}
