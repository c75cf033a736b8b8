package main

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/parleyhq/parley/internal/tools"
)

// TestBuiltinTools: the tools Parley ships with are found in every set (the built-in tools, the
// file and data plugins', the MCP plugins'); another tool is unknown.
func TestBuiltinTools(t *testing.T) {
	t.Parallel()
	find := builtinTools(http.DefaultClient, nil)
	for _, ref := range []tools.Ref{
		{Type: tools.TypeBuiltin, ProviderID: "time", Name: "current_time"},
		{Type: tools.TypeBuiltin, ProviderID: "langgenius/echarts/echarts", Name: "bar_chart"},
		{Type: tools.TypePlugin, ProviderID: "qiangxinglin/excel_tools/excel_tools", Name: "excel2json"},
		{ProviderID: "bowenliang123/base64_codec/base64_codec", Name: "base64_file_decoder"},
		{Type: tools.TypeBuiltin, ProviderID: "junjiem/mcp_sse/mcp_sse", Name: "mcp_sse_list_tools"},
		{Type: tools.TypePlugin, ProviderID: "bowenliang123/md_exporter/md_exporter", Name: "md_to_docx"},
		{Type: tools.TypeBuiltin, ProviderID: "audio", Name: "tts"},
	} {
		tl, err := find(context.Background(), ref)
		if err != nil || tl.Identity().Name != ref.Name {
			t.Errorf("%+v: %v", ref, err)
		}
	}
	if _, err := find(context.Background(), tools.Ref{ProviderID: "echarts", Name: "radar_chart"}); !errors.Is(err, tools.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
}

// TestFirstFound: a finder's failure other than an unknown tool ends the search.
func TestFirstFound(t *testing.T) {
	t.Parallel()
	broken := errors.New("store down")
	calls := 0
	find := firstFound(
		func(context.Context, tools.Ref) (tools.Tool, error) { calls++; return nil, tools.ErrUnknownTool },
		func(context.Context, tools.Ref) (tools.Tool, error) { calls++; return nil, broken },
		func(context.Context, tools.Ref) (tools.Tool, error) { calls++; return nil, nil },
	)
	if _, err := find(context.Background(), tools.Ref{Name: "x"}); !errors.Is(err, broken) || calls != 2 {
		t.Fatalf("%v after %d calls", err, calls)
	}
	if _, err := firstFound()(context.Background(), tools.Ref{Name: "x"}); !errors.Is(err, tools.ErrUnknownTool) {
		t.Fatalf("no finders: %v", err)
	}
}
