package listop

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/value"
)

func lookup(sel []string) (any, bool) {
	p := value.ObjectOf("start", value.ObjectOf("n", "2", "word", "an", "kinds", []any{"image"}))
	return value.Path(p, sel)
}

func size(n int) *int { return &n }

func run(t *testing.T, cfg Config, in any) Result {
	t.Helper()
	r, err := Apply(cfg, in, lookup)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return r
}

func TestStrings(t *testing.T) {
	t.Parallel()
	in := []any{"banana", "apple", "cherry", "", "pineapple"}
	cases := []struct {
		name string
		cfg  Config
		want []any
	}{
		{"contains", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "contains", Value: "apple"}}}}, []any{"apple", "pineapple"}},
		{"contains reference", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "contains", Value: "{{#start.word#}}"}}}}, []any{"banana"}},
		{"not contains", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "not contains", Value: "a"}}}}, []any{"cherry", ""}},
		{"start/end", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "start with", Value: "p"}, {ComparisonOperator: "end with", Value: "e"}}}}, []any{"pineapple"}},
		{"is", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "is", Value: "apple"}}}}, []any{"apple"}},
		{"in is substring of value", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "in", Value: "apple,cherry"}}}}, []any{"apple", "cherry", ""}},
		{"empty", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "empty", Value: ""}}}}, []any{""}},
		{"order asc", Config{OrderBy: OrderBy{Enabled: true, Value: "asc"}}, []any{"", "apple", "banana", "cherry", "pineapple"}},
		{"order desc then limit", Config{OrderBy: OrderBy{Enabled: true, Value: "desc"}, Limit: Limit{true, size(2)}}, []any{"pineapple", "cherry"}},
		{"extract before order", Config{ExtractBy: ExtractBy{true, "{{#start.n#}}"}, OrderBy: OrderBy{Enabled: true, Value: "asc"}}, []any{"apple"}},
		{"limit -1 drops the last (Python slice)", Config{Limit: Limit{true, size(-1)}}, []any{"banana", "apple", "cherry", ""}},
		{"limit larger than list", Config{Limit: Limit{true, size(10)}}, in},
		{"nothing enabled", Config{}, in},
	}
	for _, c := range cases {
		r := run(t, c.cfg, in)
		if !reflect.DeepEqual(r.Result, c.want) {
			t.Errorf("%s: %#v, want %#v", c.name, r.Result, c.want)
		}
	}
	if in[0] != "banana" {
		t.Error("input mutated")
	}
}

func TestNumbersAndBooleans(t *testing.T) {
	t.Parallel()
	nums := []any{int64(3), 1.5, int64(10), int64(3)}
	r := run(t, Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "≥", Value: "{{#start.n#}}"}}}, OrderBy: OrderBy{Enabled: true, Value: "desc"}}, nums)
	if !reflect.DeepEqual(r.Result, []any{int64(10), int64(3), int64(3)}) || r.FirstRecord != int64(10) || r.LastRecord != int64(3) {
		t.Errorf("numbers: %+v", r)
	}
	r = run(t, Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "=", Value: "3.0"}}}}, nums)
	if len(r.Result) != 2 {
		t.Errorf("= 3.0 matches integers 3: %v", r.Result)
	}
	bools := []any{true, false, true}
	r = run(t, Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "is not", Value: true}}}}, bools)
	if !reflect.DeepEqual(r.Result, []any{false}) {
		t.Errorf("booleans: %v", r.Result)
	}
	r = run(t, Config{OrderBy: OrderBy{Enabled: true, Value: "asc"}}, bools)
	if !reflect.DeepEqual(r.Result, []any{false, true, true}) {
		t.Errorf("boolean order: %v", r.Result)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	a := &value.File{Type: "image", TransferMethod: "local_file", Filename: "b.png", Extension: ".png", Size: 300}
	b := &value.File{Type: "document", TransferMethod: "remote_url", RemoteURL: "https://x/a.pdf", Filename: "a.pdf", Extension: ".pdf", Size: 100}
	c := &value.File{Type: "image", TransferMethod: "remote_url", RemoteURL: "https://x/c.jpg", Filename: "c.jpg", Extension: ".jpg", Size: 200}
	in := []any{a, b, c}
	cases := []struct {
		name string
		cfg  Config
		want []any
	}{
		{"type in list", Config{FilterBy: FilterBy{true, []FilterCondition{{Key: "type", ComparisonOperator: "in", Value: []any{"image"}}}}}, []any{a, c}},
		{"type not in", Config{FilterBy: FilterBy{true, []FilterCondition{{Key: "type", ComparisonOperator: "not in", Value: []string{"image"}}}}}, []any{b}},
		{"extension is", Config{FilterBy: FilterBy{true, []FilterCondition{{Key: "extension", ComparisonOperator: "is", Value: ".pdf"}}}}, []any{b}},
		{"size >", Config{FilterBy: FilterBy{true, []FilterCondition{{Key: "size", ComparisonOperator: ">", Value: "150"}}}}, []any{a, c}},
		{"url is the remote url", Config{FilterBy: FilterBy{true, []FilterCondition{{Key: "url", ComparisonOperator: "empty", Value: ""}}}}, []any{a}},
		{"order by name", Config{OrderBy: OrderBy{Enabled: true, Key: "name", Value: "asc"}}, []any{b, a, c}},
		{"order by size desc", Config{OrderBy: OrderBy{Enabled: true, Key: "size", Value: "desc"}}, []any{a, c, b}},
	}
	for _, tc := range cases {
		r := run(t, tc.cfg, in)
		if !reflect.DeepEqual(r.Result, tc.want) {
			t.Errorf("%s: %v", tc.name, r.Result)
		}
	}
}

func TestEmptyAndErrors(t *testing.T) {
	t.Parallel()
	bad := Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "like", Value: "x"}}}}
	for _, in := range []any{nil, []any{}, ""} {
		r, err := Apply(bad, in, lookup)
		if err != nil || len(r.Result) != 0 || r.Result == nil || r.FirstRecord != nil || r.LastRecord != nil {
			t.Errorf("empty input %#v: %+v %v", in, r, err)
		}
	}
	strs := []any{"a", "b"}
	cases := []struct {
		name string
		cfg  Config
		in   any
	}{
		{"unknown operator", bad, strs},
		{"number operator on strings", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: ">", Value: "1"}}}}, strs},
		{"list value on strings", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "in", Value: []any{"a"}}}}}, strs},
		{"not a number", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: ">", Value: "x"}}}}, []any{int64(1)}},
		{"boolean filter needs bool", Config{FilterBy: FilterBy{true, []FilterCondition{{ComparisonOperator: "is", Value: "true"}}}}, []any{true}},
		{"serial 0", Config{ExtractBy: ExtractBy{true, "0"}}, strs},
		{"serial past end", Config{ExtractBy: ExtractBy{true, "3"}}, strs},
		{"serial text", Config{ExtractBy: ExtractBy{true, "first"}}, strs},
		{"objects unsupported", Config{}, []any{value.NewObject()}},
		{"mixed unsupported", Config{}, []any{"a", int64(1)}},
		{"not an array", Config{}, "text"},
		{"file key", Config{FilterBy: FilterBy{true, []FilterCondition{{Key: "colour", ComparisonOperator: "is", Value: "x"}}}}, []any{&value.File{Type: "image"}}},
		{"file order key", Config{OrderBy: OrderBy{Enabled: true, Key: "colour"}}, []any{&value.File{Type: "image"}}},
	}
	for _, c := range cases {
		if _, err := Apply(c.cfg, c.in, lookup); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
}

func TestConfigFromDSLAndOutputs(t *testing.T) {
	t.Parallel()
	var cfg Config
	dsl := `{"variable": ["start", "list"], "filter_by": {"enabled": true, "conditions": [{"key": "", "comparison_operator": "contains", "value": "a"}]},
	  "order_by": {"enabled": false, "key": "", "value": "asc"}, "limit": {"enabled": true, "size": 1}, "extract_by": {"enabled": false, "serial": "1"}}`
	if err := json.Unmarshal([]byte(dsl), &cfg); err != nil {
		t.Fatal(err)
	}
	r := run(t, cfg, []any{"xa", "ya", "b"})
	if got := value.JSONDumps(r.Outputs(), 0); got != `{"result": ["xa"], "first_record": "xa", "last_record": "xa"}` {
		t.Errorf("outputs = %s", got)
	}
}
