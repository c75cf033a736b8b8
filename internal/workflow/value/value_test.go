package value

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

func TestDecodeKeepsOrderAndNumberKinds(t *testing.T) {
	t.Parallel()
	v := mustDecode(t, `{"z": 1, "a": [1.5, 2, 1e3, 99999999999999999999], "m": {"y": null, "b": true}}`)
	o := v.(*Object)
	if got := o.Keys(); len(got) != 3 || got[0] != "z" || got[1] != "a" || got[2] != "m" {
		t.Fatalf("keys = %v", got)
	}
	if z, _ := o.Get("z"); z != int64(1) {
		t.Errorf("z = %#v, want int64(1)", z)
	}
	a, _ := o.Get("a")
	arr := a.([]any)
	if arr[0] != 1.5 || arr[1] != int64(2) || arr[2] != 1000.0 || arr[3] != 1e20 {
		t.Errorf("a = %#v", arr)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z":1,"a":[1.5,2,1000,100000000000000000000],"m":{"y":null,"b":true}}`; string(b) != want {
		t.Errorf("MarshalJSON = %s, want %s", b, want)
	}
	if _, err := Decode([]byte(`{"a":1} x`)); err == nil {
		t.Error("trailing data accepted")
	}
	if _, err := Decode([]byte(`{"a":`)); err == nil {
		t.Error("truncated JSON accepted")
	}
}

func TestObjectOrderOperations(t *testing.T) {
	t.Parallel()
	o := ObjectOf("b", 1, "a", 2, "c", 3)
	o.Set("a", 20) // existing key keeps its place
	if !o.Delete("b") || o.Delete("missing") {
		t.Fatal("Delete results wrong")
	}
	o.Set("b", 10) // re-added key goes last
	if got := JSONDumps(o, 0); got != `{"a": 20, "c": 3, "b": 10}` {
		t.Errorf("order after edits = %s", got)
	}
	var seen []string
	o.Range(func(k string, _ any) bool { seen = append(seen, k); return len(seen) < 2 })
	if len(seen) != 2 || seen[0] != "a" || seen[1] != "c" {
		t.Errorf("Range stopped wrong: %v", seen)
	}
	var back Object
	if err := json.Unmarshal([]byte(`{"q": 1, "p": 2}`), &back); err != nil {
		t.Fatal(err)
	}
	if k := back.Keys(); k[0] != "q" || back.Len() != 2 {
		t.Errorf("UnmarshalJSON keys = %v", k)
	}
}

func TestFromGo(t *testing.T) {
	t.Parallel()
	in := map[string]any{"b": []string{"x"}, "a": 3, "c": float32(0.5), "d": json.Number("7"), "e": map[string]int{"z": 1, "y": 2}, "f": []int{1}}
	got := JSONDumps(FromGo(in), 0)
	if want := `{"a": 3, "b": ["x"], "c": 0.5, "d": 7, "e": {"y": 2, "z": 1}, "f": [1]}`; got != want {
		t.Errorf("FromGo = %s, want %s", got, want)
	}
	if FromGo(uint8(3)) != int64(3) || FromGo(int32(-1)) != int64(-1) {
		t.Error("integer kinds not int64")
	}
}

func image() *File {
	return &File{ID: "f1", TenantID: "t", Type: FileTypeImage, TransferMethod: TransferLocalFile, RelatedID: "u1",
		Filename: "cat.png", Extension: ".png", MimeType: "image/png", Size: 42, URL: "https://x/files/u1/file-preview?sign=s"}
}

func doc() *File {
	return &File{Type: FileTypeDocument, TransferMethod: TransferRemoteURL, RemoteURL: "https://e.com/a.pdf", Size: -1}
}

func TestText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, ""},
		{"string", "héllo", "héllo"},
		{"int", int64(42), "42"},
		{"float integral", 1.0, "1.0"},
		{"float", 0.1, "0.1"},
		{"float big", 1e16, "1e+16"},
		{"float below big", 123456789012345.0, "123456789012345.0"},
		{"float small", 0.00001, "1e-05"},
		{"float 1e-4", 0.0001, "0.0001"},
		{"negative", -2.5, "-2.5"},
		{"inf", math.Inf(1), "inf"},
		{"bool", true, "True"},
		{"object", ObjectOf("名", "值", "n", 1.0, "l", []any{int64(1), "a"}, "o", NewObject()), `{"名": "值", "n": 1.0, "l": [1, "a"], "o": {}}`},
		{"object escapes", ObjectOf("s", "q\"\\\n\t\x01<>&\u2028"), `{"s": "q\"\\\n\t\u0001<>&` + "\u2028" + `"}`},
		{"empty array", []any{}, ""},
		{"array of strings", []any{"a", "中"}, `["a", "中"]`},
		{"array of numbers", []any{int64(1), 2.5, 3.0}, "[1, 2.5, 3.0]"},
		{"array of objects", []any{ObjectOf("a", int64(1), "b", "it's")}, `[{'a': 1, 'b': "it's"}]`},
		{"array of bools", []any{true, false}, "[True, False]"},
		{"array mixed", []any{"a", int64(1), nil}, "['a', 1, None]"},
		{"file", image(), ""},
		{"array of files", []any{image(), doc()}, ""},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.want {
			t.Errorf("%s: Text = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"image", image(), "![cat.png](https://x/files/u1/file-preview?sign=s)"},
		{"document without name", doc(), "[https://e.com/a.pdf](https://e.com/a.pdf)"},
		{"files", []any{image(), doc()}, "![cat.png](https://x/files/u1/file-preview?sign=s)\n[https://e.com/a.pdf](https://e.com/a.pdf)"},
		{"object", ObjectOf("a", int64(1), "b", []any{"x", ObjectOf()}), "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    {}\n  ]\n}"},
		{"strings", []any{"a", "b"}, "- a\n- b"},
		{"objects", []any{ObjectOf("k", "v")}, "- {'k': 'v'}"},
		{"number", 2.0, "2.0"},
		{"nil", nil, ""},
		{"numbers", []any{int64(1), 2.5}, "- 1\n- 2.5"},
		{"booleans", []any{true, false}, "- True\n- False"},
		{"empty array", []any{}, ""},
		{"bool", false, "False"},
	}
	for _, c := range cases {
		if got := Markdown(c.in); got != c.want {
			t.Errorf("%s: Markdown = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTypeOf(t *testing.T) {
	t.Parallel()
	cases := map[string]any{
		"none": nil, "string": "", "number": int64(1), "boolean": false, "object": NewObject(), "file": doc(),
		"array[string]": []any{"a"}, "array[number]": []any{int64(1), 2.5}, "array[object]": []any{NewObject()},
		"array[file]": []any{doc()}, "array[boolean]": []any{true}, "array[any]": []any{},
	}
	for want, in := range cases {
		if got := TypeOf(in); got != want {
			t.Errorf("TypeOf(%#v) = %s, want %s", in, got, want)
		}
	}
	for _, mixed := range [][]any{{"a", int64(1)}, {[]any{"a"}}, {nil}, {true, int64(1)}} {
		if got := TypeOf(mixed); got != "array[any]" {
			t.Errorf("TypeOf(%#v) = %s, want array[any]", mixed, got)
		}
	}
	if SegmentType(int64(1)) != "integer" || SegmentType(1.5) != "float" {
		t.Error("SegmentType numbers")
	}
}

func TestPyQuote(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"abc":        `'abc'`,
		"it's":       `"it's"`,
		`it's "x"`:   `'it\'s "x"'`,
		"a\\b\n\t\r": `'a\\b\n\t\r'`,
		"\x00\x7f":   `'\x00\x7f'`,
		"\u00a0中🙂":   `'\xa0中🙂'`,
		"\u200b":     `'\u200b'`,
	}
	for in, want := range cases {
		if got := PyQuote(in); got != want {
			t.Errorf("PyQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFileDictAndAttrs(t *testing.T) {
	t.Parallel()
	f := image()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dify_model_identity":"__dify__file__","id":"f1","tenant_id":"t","type":"image","transfer_method":"local_file","remote_url":null,"related_id":"u1","filename":"cat.png","extension":".png","mime_type":"image/png","size":42,"url":"https://x/files/u1/file-preview?sign=s"}`
	if string(b) != want {
		t.Errorf("file JSON = %s\nwant %s", b, want)
	}
	var back File
	if err := json.Unmarshal(b, &back); err != nil || back != *f {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	for attr, want := range map[string]any{"type": "image", "size": int64(42), "name": "cat.png", "extension": ".png", "mime_type": "image/png", "transfer_method": "local_file", "related_id": "u1", "url": f.URL} {
		if got, ok := f.Attr(attr); !ok || got != want {
			t.Errorf("Attr(%s) = %#v, %v", attr, got, ok)
		}
	}
	if _, ok := f.Attr("nope"); ok {
		t.Error("unknown attribute accepted")
	}
	if got, _ := doc().Attr("url"); got != "https://e.com/a.pdf" {
		t.Errorf("remote url attr = %v", got)
	}
}

func TestPath(t *testing.T) {
	t.Parallel()
	v := ObjectOf("user", ObjectOf("name", "Ann", "tags", []any{"a"}, "nothing", nil), "file", image())
	if got, ok := Path(v, []string{"user", "name"}); !ok || got != "Ann" {
		t.Errorf("user.name = %v %v", got, ok)
	}
	if got, ok := Path(v, []string{"user", "nothing"}); !ok || got != nil {
		t.Errorf("present nil = %v %v", got, ok)
	}
	if got, ok := Path(v, []string{"file", "extension"}); !ok || got != ".png" {
		t.Errorf("file.extension = %v %v", got, ok)
	}
	for _, p := range [][]string{{"user", "missing"}, {"user", "tags", "x"}, {"file", "type", "x"}, {"file", "bogus"}} {
		if got, ok := Path(v, p); ok {
			t.Errorf("Path %v = %v, want missing", p, got)
		}
	}
}

func TestParsePython(t *testing.T) {
	t.Parallel()
	ints := map[string]int64{"5": 5, " -7 ": -7, "+3": 3, "1_000": 1000}
	for in, want := range ints {
		if got, ok := ParseInt(in); !ok || got != want {
			t.Errorf("ParseInt(%q) = %d %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "5.0", "1__0", "_1", "0x10", "five", "99999999999999999999"} {
		if _, ok := ParseInt(bad); ok {
			t.Errorf("ParseInt(%q) accepted", bad)
		}
	}
	floats := map[string]float64{"1.5": 1.5, " 2 ": 2, "1e3": 1000, "-.5": -0.5, "1_0.5": 10.5, "1e999": math.Inf(1)}
	for in, want := range floats {
		if got, ok := ParseFloat(in); !ok || got != want {
			t.Errorf("ParseFloat(%q) = %v %v", in, got, ok)
		}
	}
	if f, ok := ParseFloat("-Infinity"); !ok || !math.IsInf(f, -1) {
		t.Error("-Infinity")
	}
	if f, ok := ParseFloat("nan"); !ok || !math.IsNaN(f) {
		t.Error("nan")
	}
	for _, bad := range []string{"", " ", "0x1p-2", "1.5.2", "abc", "1_"} {
		if _, ok := ParseFloat(bad); ok {
			t.Errorf("ParseFloat(%q) accepted", bad)
		}
	}
}

func TestLog(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want string
	}{
		{ObjectOf("a", int64(1)), "{\n  \"a\": 1\n}"},
		{[]any{"a", "b"}, "['a', 'b']"},
		{[]any{}, "[]"},
		{[]any{image()}, ""},
		{image(), ""},
		{1.5, "1.5"},
	}
	for _, c := range cases {
		if got := Log(c.in); got != c.want {
			t.Errorf("Log(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecodeDepthLimit(t *testing.T) {
	t.Parallel()
	nest := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	if _, err := Decode(nest(MaxDepth)); err != nil {
		t.Errorf("depth %d refused: %v", MaxDepth, err)
	}
	if _, err := Decode(nest(MaxDepth + 1)); err == nil {
		t.Errorf("depth %d accepted", MaxDepth+1)
	}
	if _, err := Decode([]byte(strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1))); err == nil {
		t.Error("deep object accepted")
	}
}

func TestConforms(t *testing.T) {
	t.Parallel()
	yes := []struct {
		v   any
		typ string
	}{
		{"s", "string"}, {"s", "secret"}, {int64(1), "number"}, {1.5, "number"}, {int64(1), "integer"}, {1.5, "float"},
		{true, "boolean"}, {NewObject(), "object"}, {doc(), "file"}, {nil, "none"}, {nil, "any"},
		{[]any{}, "array[string]"}, {[]any{"a"}, "array[string]"}, {[]any{int64(1), 2.5}, "array[number]"},
		{[]any{NewObject()}, "array[object]"}, {[]any{doc()}, "array[file]"}, {[]any{true}, "array[boolean]"},
		{[]any{"a", int64(1), nil}, "array[any]"},
	}
	for _, c := range yes {
		if !Conforms(c.v, c.typ) {
			t.Errorf("Conforms(%#v, %s) = false", c.v, c.typ)
		}
	}
	no := []struct {
		v   any
		typ string
	}{
		{int64(1), "string"}, {true, "number"}, {"1", "number"}, {1.5, "integer"}, {int64(1), "float"}, {"true", "boolean"},
		{[]any{}, "object"}, {nil, "string"}, {"s", "none"}, {[]any{"a", int64(1)}, "array[string]"}, {[]any{true}, "array[number]"},
		{"a", "array[string]"}, {[]any{"a"}, "array[bogus]"}, {"a", "bogus"}, {[]any{}, "array[string"},
	}
	for _, c := range no {
		if Conforms(c.v, c.typ) {
			t.Errorf("Conforms(%#v, %s) = true", c.v, c.typ)
		}
	}
}
