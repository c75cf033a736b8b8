package jsonenc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "plain words", `q"uote \back\slash`, "tab\tnl\nr\rnul\x00bell\x07", "中文 café 🙂", "bad \xff utf8 \xe4\xb8", "\u2028"} {
		b := AppendString(nil, in)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("AppendString(%q) = %s: %v", in, b, err)
			continue
		}
		want, _ := json.Marshal(in) // encoding/json replaces invalid UTF-8 the same way
		var wantStr string
		_ = json.Unmarshal(want, &wantStr)
		if got != wantStr {
			t.Errorf("AppendString(%q) decodes to %q, want %q", in, got, wantStr)
		}
	}
}

// TestAppendStringMatchesEncodingJSON: byte for byte what encoding/json writes with HTML
// escaping off, for texts that put every kind of byte at every offset of an 8-byte word.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	specials := []string{`"`, `\`, "\n", "\x00", "\x1f", "\x7f", "é", "中", "\u2028", "\xff", "<&>"}
	for _, sp := range specials {
		for pad := 0; pad < 17; pad++ {
			for _, tail := range []string{"", "abc", "0123456789abcdef"} {
				in := "xxxxxxxxxxxxxxxx"[:pad] + sp + tail
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetEscapeHTML(false)
				_ = enc.Encode(in)
				if got := string(AppendString(nil, in)); got != strings.TrimSuffix(want.String(), "\n") {
					t.Fatalf("AppendString(%q) = %s, want %s", in, got, want.String())
				}
			}
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"ascii", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100)},
		{"escapes", strings.Repeat("line \"quoted\"\n", 300)},
		{"cjk", strings.Repeat("中文内容的测试。", 300)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 0, 3*len(tc.text))
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				buf = AppendString(buf[:0], tc.text)
			}
		})
	}
}
