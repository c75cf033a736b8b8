package filetools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/filetools"
)

// invoke finds provider/name configured with configured and calls it with args.
func invoke(t testing.TB, s *filetools.Set, provider, name string, configured map[string]any, args string) tools.Result {
	t.Helper()
	tl, err := s.Find(context.Background(), tools.Ref{Type: tools.TypeBuiltin, ProviderID: provider, Name: name, Configured: configured})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Invoke(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fileArgs is the arguments JSON of one file parameter (and the other members given).
func fileArgs(t testing.TB, param string, f tools.FileArg, more map[string]any) string {
	t.Helper()
	m := map[string]any{param: f}
	for k, v := range more {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonOf is v as JSON text.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantError fails unless res is an error answer containing want.
func wantError(t *testing.T, res tools.Result, want string) {
	t.Helper()
	if !res.IsError || !strings.Contains(res.Text, want) {
		t.Fatalf("got %+v, want an error with %q", res, want)
	}
}

// TestFind: every tool is found by its plugin's provider id and by the bare provider name,
// with the label and file parameters of the plugin; other providers, names and provider types
// are unknown.
func TestFind(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	for _, tc := range []struct {
		plugin, provider, name string
		files                  []string
		params                 []string
	}{
		{"bowenliang123/base64_codec/base64_codec", "base64_codec", "base64_file_encoder", []string{"input_file"}, nil},
		{"bowenliang123/base64_codec/base64_codec", "base64_codec", "base64_file_decoder", nil, []string{"encoded_text", "output_filename", "splitter_str"}},
		{"bowenliang123/base64_codec/base64_codec", "base64_codec", "base64_encoder", nil, []string{"plain_text"}},
		{"qiangxinglin/excel_tools/excel_tools", "excel_tools", "excel2json", []string{"file"}, nil},
		{"langgenius/echarts/echarts", "echarts", "pie_chart", nil, []string{"categories", "data", "title"}},
		{"kalochin/pdf_process/pdf_process", "pdf_process", "pdf_to_png", []string{"pdf_content"}, []string{"zoom"}},
		{"kalochin/pdf_process/pdf_process", "pdf_process", "pdf_multi_pages_extractor", []string{"pdf_content"}, []string{"dynamic_pages", "fixed_pages"}},
		{"kalochin/pdf_process/pdf_process", "pdf_process", "pdf_splitter", []string{"pdf_content"}, nil},
	} {
		for _, provider := range []string{tc.plugin, tc.provider} {
			for _, typ := range []string{"", tools.TypeBuiltin, tools.TypePlugin} {
				tl, err := s.Find(context.Background(), tools.Ref{Type: typ, ProviderID: provider, Name: tc.name})
				if err != nil {
					t.Fatalf("%s/%s (%q): %v", provider, tc.name, typ, err)
				}
				if id := tl.Identity(); id.Provider != tc.provider || id.Name != tc.name || id.Label["en_US"] == "" {
					t.Fatalf("identity %+v", id)
				}
				if got := tl.(tools.FileTaker).FileParameters(); !slices.Equal(got, tc.files) {
					t.Fatalf("%s file parameters %v, want %v", tc.name, got, tc.files)
				}
				// The model is offered the text parameters only: never a file.
				var schema struct {
					Type       string                     `json:"type"`
					Properties map[string]json.RawMessage `json:"properties"`
				}
				if err := json.Unmarshal(tl.Parameters(), &schema); err != nil || schema.Type != "object" {
					t.Fatalf("schema %s", tl.Parameters())
				}
				var names []string
				for n := range schema.Properties {
					names = append(names, n)
				}
				slices.Sort(names)
				if !slices.Equal(names, tc.params) {
					t.Fatalf("%s offers %v, want %v", tc.name, names, tc.params)
				}
			}
		}
	}
	for _, ref := range []tools.Ref{
		{ProviderID: "echarts", Name: "radar_chart"},
		{ProviderID: "langgenius/charts/charts", Name: "bar_chart"},
		{Type: tools.TypeAPI, ProviderID: "echarts", Name: "bar_chart"},
		{Type: tools.TypeMCP, ProviderID: "excel_tools", Name: "excel2json"},
	} {
		if _, err := s.Find(context.Background(), ref); !errors.Is(err, tools.ErrUnknownTool) {
			t.Errorf("%+v: %v", ref, err)
		}
	}
	if got := len(s.All()); got != 17 {
		t.Fatalf("%d tools", got)
	}
}

// TestConfiguredValues: the values an app sets are used where the arguments leave them out,
// the arguments win where they give their own, and "" or null leave the app's value.
func TestConfiguredValues(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	configured := map[string]any{"urlsafe_enabled": "true", "plain_text": "configured?>"}
	if res := invoke(t, s, "base64_codec", "base64_encoder", configured, `{}`); res.Text != "Y29uZmlndXJlZD8-" {
		t.Fatalf("configured text, URL-safe: %+v", res)
	}
	if res := invoke(t, s, "base64_codec", "base64_encoder", configured, `{"plain_text": "?>?", "urlsafe_enabled": null}`); res.Text != "Pz4_" {
		t.Fatalf("given text, configured URL-safe: %+v", res)
	}
	if res := invoke(t, s, "base64_codec", "base64_encoder", configured, `{"plain_text": "", "urlsafe_enabled": "false"}`); res.Text != "Y29uZmlndXJlZD8+" {
		t.Fatalf("given standard alphabet: %+v", res)
	}
	res := invoke(t, s, "echarts", "bar_chart", map[string]any{"title": "Sales", "x_axis": "Q1;Q2"}, `{"data": "3;4"}`)
	if res.IsError || !strings.Contains(res.Text, `"text": "Sales"`) || !strings.Contains(res.Text, `"Q2"`) {
		t.Fatalf("chart over the app's title and axis: %+v", res)
	}
	wantError(t, invoke(t, s, "echarts", "bar_chart", nil, `["not", "an object"]`), "not a JSON object")
}

// TestInvokeCancelled: a call whose context has ended is an error, not an answer.
func TestInvokeCancelled(t *testing.T) {
	t.Parallel()
	tl, err := filetools.Find(context.Background(), tools.Ref{ProviderID: "base64_codec", Name: "base64_encoder"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tl.Invoke(ctx, json.RawMessage(`{"plain_text": "a"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}
