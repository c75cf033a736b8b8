package main

import (
	"context"
	"errors"
	"testing"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/mcptools"
	"github.com/parleyhq/parley/internal/tools/mdexport"
)

// TestChainFinders: the chain finds Parley's built-in tools and the plugins' tools, each under
// its own provider, and answers ErrUnknownTool for what none of them has.
func TestChainFinders(t *testing.T) {
	t.Parallel()
	find := chainFinders(builtin.Find, mcptools.New(nil).Find, mdexport.Find)
	for _, ref := range []tools.Ref{
		{ProviderID: "time", Name: "current_time"},
		{Type: tools.TypePlugin, ProviderID: "junjiem/mcp_sse/mcp_sse", Name: "mcp_sse_list_tools"},
		{Type: tools.TypePlugin, ProviderID: "bowenliang123/md_exporter/md_exporter", Name: "md_to_docx"},
	} {
		tl, err := find(context.Background(), ref)
		if err != nil || tl.Identity().Name != ref.Name {
			t.Errorf("%+v: %v", ref, err)
		}
	}
	if _, err := find(context.Background(), tools.Ref{ProviderID: "nobody/nothing/nothing", Name: "x"}); !errors.Is(err, tools.ErrUnknownTool) {
		t.Errorf("unknown: %v", err)
	}
}
