package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/parleyhq/parley/api"
)

// contractSchema is a component schema of the embedded contract.
func contractSchema(tb testing.TB, name string) *openapi3.Schema {
	tb.Helper()
	doc, err := api.Load()
	if err != nil {
		tb.Fatal(err)
	}
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		tb.Fatalf("no schema %s", name)
	}
	return ref.Value
}

func TestScanJSON(t *testing.T) {
	chat := contractSchema(t, "ChatRequest")
	retrieve := contractSchema(t, "RetrieveRequest")
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	for _, tc := range []struct {
		name, body string
		schema     *openapi3.Schema
		want       string // "" ok, "syntax", or the member error
	}{
		{"plain", `{"query":"hi","inputs":{"a":1},"user":"u"}`, chat, ""},
		{"scalar", `5`, nil, ""},
		{"whitespace around", " \n{\"a\":[1,{\"b\":2}]}\t\n", nil, ""},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}`, nil, ""},
		{"duplicate at the top", `{"query":5,"query":"x"}`, chat, `duplicate key "query" in the JSON body`},
		{"duplicate through an escape", `{"query":"a","q\u0075ery":"b"}`, chat, `duplicate key "query" in the JSON body`},
		{"duplicate in a nested object", `{"retrieval_model":{"top_k":1,"weights":{"a":1,"a":2}}}`, retrieve, `retrieval_model.weights: duplicate key "a"`},
		{"duplicate in an array item", `{"files":[{"type":"image"},{"url":"x","url":"y"}]}`, chat, `files.1: duplicate key "url"`},
		{"duplicate in a large object", `{` + manyMembers(40) + `,"m7":0}`, nil, `duplicate key "m7" in the JSON body`},
		{"case variant of a declared member", `{"query":"hi","user":"u","USER":""}`, chat, `unknown member "USER"; member names are case-sensitive (did you mean "user"?) in the JSON body`},
		{"case variant alone", `{"Query":"hi"}`, chat, `unknown member "Query"; member names are case-sensitive (did you mean "query"?) in the JSON body`},
		{"case variant nested through allOf", `{"retrieval_model":{"TOP_K":100000}}`, retrieve, `retrieval_model: unknown member "TOP_K"; member names are case-sensitive (did you mean "top_k"?)`},
		{"case variants in a free-form object", `{"query":"hi","inputs":{"Name":1,"name":2}}`, chat, ""},
		{"undeclared member", `{"query":"hi","retriever_from":"dev"}`, chat, ""},
		{"trailing value", `{"a":1} {"b":2}`, nil, "syntax"},
		{"trailing garbage", `{"a":1}x`, nil, "syntax"},
		{"truncated", `{"a":`, nil, "syntax"},
		{"empty", ``, nil, "syntax"},
		{"unclosed array", `[1,2`, nil, "syntax"},
		{"no comma between members", `{"a":1 "b":2}`, nil, "syntax"},
		{"no comma between items", `[1 2]`, nil, "syntax"},
		{"array closed by a brace", `[1}`, nil, "syntax"},
		{"too deep", deep, nil, "syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := scanJSON([]byte(tc.body), tc.schema)
			var me *jsonMemberError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "syntax" && !errors.Is(err, errJSONSyntax):
				t.Fatalf("got %v, want a syntax error", err)
			case tc.want != "" && tc.want != "syntax" && (!errors.As(err, &me) || me.Error() != tc.want):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"m%d":%d`, i, i)
	}
	return strings.Join(parts, ",")
}

func TestUnstorable(t *testing.T) {
	for _, tc := range []struct {
		v     any
		where string
		bad   bool
	}{
		{map[string]any{"a": []any{"x", map[string]any{"b": "ok"}}}, "", false},
		{map[string]any{"a": []any{"x", map[string]any{"b": "o\x00k"}}}, "a.1.b", true},
		{map[string]any{"a\x00": 1}, "", true},
		{map[string]any{"o": map[string]any{"\xff": 1}}, "o", true},
		{[]any{"\xff"}, "0", true},
	} {
		where, bad := unstorable(tc.v, "")
		if bad != tc.bad || where != tc.where {
			t.Errorf("unstorable(%v) = %q, %v; want %q, %v", tc.v, where, bad, tc.where, tc.bad)
		}
	}
}

// BenchmarkJSONBodyScan compares the duplicate-key scan with what the request validator does
// with the same body anyway (kin-openapi's decode, then the schema check), on a chat request,
// a create-by-text request with 16 KiB of text and a chat request with 200 inputs.
func BenchmarkJSONBodyScan(b *testing.B) {
	bodies := []struct{ name, schema, body string }{
		{"chat", "ChatRequest", `{"query":"What can you do?","inputs":{"name":"Ada"},"user":"abc-123","response_mode":"streaming","files":null}`},
		{"create-by-text", "CreateDocumentByTextRequest", `{"name":"Manual","text":"` + strings.Repeat("The quick brown fox jumps. ", 16<<10/27) +
			`","indexing_technique":"high_quality","doc_form":"hierarchical_model","process_rule":{"mode":"hierarchical","rules":{"pre_processing_rules":[{"id":"remove_extra_spaces","enabled":true}],"parent_mode":"paragraph","segmentation":{"separator":"\n\n","max_tokens":500},"subchunk_segmentation":{"separator":"\n","max_tokens":200}}},` +
			`"retrieval_model":{"search_method":"hybrid_search","reranking_enable":false,"top_k":4,"score_threshold_enabled":false,"weights":{"weight_type":"customized","vector_setting":{"vector_weight":0.7,"embedding_provider_name":"openai","embedding_model_name":"text-embedding-3-small"},"keyword_setting":{"keyword_weight":0.3}}}}`},
		{"chat-200-inputs", "ChatRequest", `{"query":"hi","user":"u","inputs":{` + manyMembers(200) + `}}`},
	}
	for _, bc := range bodies {
		schema := contractSchema(b, bc.schema)
		data := []byte(bc.body)
		if err := scanJSON(data, schema); err != nil {
			b.Fatalf("%s: %v", bc.name, err)
		}
		b.Run(bc.name+"/scan", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := scanJSON(data, schema); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/validate", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			ref := &openapi3.SchemaRef{Value: schema}
			for b.Loop() {
				v, err := openapi3filter.JSONBodyDecoder(bytes.NewReader(data), http.Header{}, ref, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := schema.VisitJSON(v, openapi3.VisitAsRequest()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzScanJSON checks that the scan and encoding/json agree on what is one JSON value: the scan
// refuses every text json.Valid refuses, and finds no syntax error in a text it accepts.
func FuzzScanJSON(f *testing.F) {
	for _, seed := range []string{`{"a":1}`, `[1,2.5e-3,-0,true,false,null,"x\u00e9\n"]`, `{"a":{"b":[{"c":"d"}]}}`,
		`{"a":1}x`, `{"a":}`, `01`, `-`, `1.`, `1e`, `"\x"`, "\"\x01\"", `{"a" 1}`, `[1,]`, `{,}`, ` "s" `, `tru`, `nul`, `{"":""}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := scanJSON(data, nil)
		if json.Valid(data) {
			if errors.Is(err, errJSONSyntax) {
				t.Fatalf("valid JSON %q refused: %v", data, err)
			}
		} else if err == nil {
			t.Fatalf("invalid JSON %q accepted", data)
		}
	})
}
