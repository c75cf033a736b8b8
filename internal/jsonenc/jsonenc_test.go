package jsonenc

import (
	"encoding/json"
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
