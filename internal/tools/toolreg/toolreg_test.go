package toolreg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// loopback is the guarded client with 127.0.0.1 let through, as PARLEY_TOOLS_ALLOWED_NETWORKS
// would configure it.
func loopback(t *testing.T) *http.Client {
	t.Helper()
	c, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newRegistry(t *testing.T, st *store.Store, client *http.Client) *toolreg.Registry {
	t.Helper()
	r, err := toolreg.New(toolreg.Options{Store: st, Builtin: builtin.Find, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func invoke(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	res, err := tl.Invoke(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("Invoke(%s): %v", args, err)
	}
	return res
}

// TestAPIProvider registers the loopback API: a document that does not parse is refused, the
// registration lists its tools and never its key, and a second registry on the same store (a
// server, while the CLI registers) finds the tools by provider id or name, and stops finding
// them once deleted.
func TestAPIProvider(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		st := testdb.Open(t, e)
		api := toolregtest.NewAPI(t)
		cli, srv := newRegistry(t, st, loopback(t)), newRegistry(t, st, loopback(t))

		if _, err := cli.AddAPI(ctx, "inventory", toolreg.API{Schema: "openapi: 3.0.3\npaths: ["}, false); !errors.Is(err, toolreg.ErrInvalid) {
			t.Fatalf("a broken document: %v", err)
		}
		if _, err := cli.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document, Auth: toolreg.AuthBearer}, false); !errors.Is(err, toolreg.ErrInvalid) {
			t.Fatalf("bearer without a key: %v", err)
		}
		if _, err := cli.AddAPI(ctx, " x", toolreg.API{Schema: api.Document}, false); !errors.Is(err, toolreg.ErrInvalid) {
			t.Fatalf("a name with a leading space: %v", err)
		}
		// The server has looked (no providers yet) before the CLI registers.
		if _, err := srv.Find(ctx, tools.Ref{Type: tools.TypeAPI, ProviderName: "inventory", Name: "getItem"}); !errors.Is(err, tools.ErrUnknownTool) {
			t.Fatalf("before registration: %v", err)
		}
		sum, err := cli.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document, Auth: toolreg.AuthBearer, Key: toolregtest.APIToken,
			Headers: map[string]string{"x-tenant": "acme"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sum.Tools) != "[broken getChart getItem slow]" || sum.Auth != "bearer" || fmt.Sprint(sum.Headers) != "[X-Tenant]" {
			t.Fatalf("summary %+v", sum)
		}
		if _, err := cli.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document}, false); !errors.Is(err, toolreg.ErrExists) {
			t.Fatalf("registered twice: %v", err)
		}
		list, err := cli.List(ctx)
		if err != nil || len(list) != 1 || fmt.Sprint(list[0].Tools) != "[broken getChart getItem slow]" {
			t.Fatalf("list %+v, %v", list, err)
		}
		if s := fmt.Sprintf("%+v", list); strings.Contains(s, toolregtest.APIToken) || strings.Contains(s, "acme") {
			t.Fatalf("the list shows a secret: %s", s)
		}

		for _, ref := range []tools.Ref{
			{Type: tools.TypeAPI, ProviderID: sum.ID, ProviderName: "renamed in Dify", Name: "getItem"},
			{Type: tools.TypeAPI, ProviderID: "a Dify uuid", ProviderName: "inventory", Name: "getItem"},
		} {
			tl, err := srv.Find(ctx, ref)
			if err != nil {
				t.Fatalf("Find(%+v): %v", ref, err)
			}
			if res := invoke(t, tl, `{"id":"7"}`); res.IsError || res.Text != `{"id":"7","name":"widget","tenant":"acme"}`+"\n" {
				t.Fatalf("getItem = %+v", res)
			}
		}
		// The app's configured values are sent unless the model gives its own.
		tl, err := srv.Find(ctx, tools.Ref{Type: tools.TypeAPI, ProviderName: "inventory", Name: "getItem", Configured: map[string]any{"id": "9"}})
		if err != nil {
			t.Fatal(err)
		}
		if res := invoke(t, tl, `{}`); !strings.Contains(res.Text, `"id":"9"`) {
			t.Fatalf("configured id: %+v", res)
		}
		if res := invoke(t, tl, `{"id":"3"}`); !strings.Contains(res.Text, `"id":"3"`) {
			t.Fatalf("the model's id: %+v", res)
		}
		if res := invoke(t, mustFind(t, srv, "broken"), `{}`); !res.IsError || !strings.Contains(res.Text, "500") || !strings.Contains(res.Text, "database down") {
			t.Fatalf("broken = %+v", res)
		}
		for _, ref := range []tools.Ref{
			{Type: tools.TypeAPI, ProviderName: "inventory", Name: "nope"},
			{Type: tools.TypeMCP, ProviderName: "inventory", Name: "getItem"},
			{Type: "workflow", ProviderName: "inventory", Name: "getItem"},
		} {
			if _, err := srv.Find(ctx, ref); !errors.Is(err, tools.ErrUnknownTool) {
				t.Fatalf("Find(%+v) = %v, want ErrUnknownTool", ref, err)
			}
		}
		if _, err := srv.Find(ctx, tools.Ref{Type: tools.TypeBuiltin, ProviderID: "time", Name: "current_time"}); err != nil {
			t.Fatalf("built-in tool: %v", err)
		}

		// Replacing keeps the id apps may name, and the server uses the new settings at once.
		re, err := cli.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document, Auth: toolreg.AuthBearer, Key: toolregtest.APIToken,
			Headers: map[string]string{"X-Tenant": "globex"}}, true)
		if err != nil || re.ID != sum.ID {
			t.Fatalf("replace = %+v, %v (id was %s)", re, err, sum.ID)
		}
		tl, err = srv.Find(ctx, tools.Ref{Type: tools.TypeAPI, ProviderID: sum.ID, Name: "getItem"})
		if err != nil {
			t.Fatal(err)
		}
		if res := invoke(t, tl, `{"id":"1"}`); !strings.Contains(res.Text, `"tenant":"globex"`) {
			t.Fatalf("after replace: %+v", res)
		}
		if _, err := cli.AddMCP(ctx, "inventory", toolreg.MCP{ServerIdentifier: "inv", URL: toolregtest.NewMCP(t).URL}, true); !errors.Is(err, toolreg.ErrExists) {
			t.Fatalf("an MCP server replacing an API provider: %v", err)
		}
		if err := cli.Delete(ctx, "inventory"); err != nil {
			t.Fatal(err)
		}
		if err := cli.Delete(ctx, "inventory"); !errors.Is(err, toolreg.ErrNotFound) {
			t.Fatalf("deleted twice: %v", err)
		}
		if _, err := srv.Find(ctx, tools.Ref{Type: tools.TypeAPI, ProviderName: "inventory", Name: "getItem"}); !errors.Is(err, tools.ErrUnknownTool) {
			t.Fatalf("after delete: %v", err)
		}
	})
}

func mustFind(t *testing.T, r *toolreg.Registry, name string) tools.Tool {
	t.Helper()
	tl, err := r.Find(context.Background(), tools.Ref{Type: tools.TypeAPI, ProviderName: "inventory", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestNetworkGuard: without an allowance, a registered API on loopback is refused at call time
// (an observation) and an MCP server on loopback cannot be registered.
func TestNetworkGuard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := testdb.Open(t, storetest.NewEngine(t, "sqlite"))
	guarded, err := netguard.Client(nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRegistry(t, st, guarded)
	api := toolregtest.NewAPI(t)
	if _, err := r.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document, Auth: toolreg.AuthBearer, Key: toolregtest.APIToken}, false); err != nil {
		t.Fatal(err)
	}
	if res := invoke(t, mustFind(t, r, "getItem"), `{"id":"1"}`); !res.IsError || !strings.Contains(res.Text, "forbidden") {
		t.Fatalf("a loopback call = %+v", res)
	}
	if api.Calls.Load() != 0 {
		t.Fatalf("the API saw %d requests", api.Calls.Load())
	}
	m := toolregtest.NewMCP(t)
	if _, err := r.AddMCP(ctx, "notes", toolreg.MCP{URL: m.URL}, false); !errors.Is(err, toolreg.ErrInvalid) || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a loopback MCP server: %v", err)
	}
}

// TestMCPProvider registers the loopback MCP server: its tools are listed and kept, found by
// server identifier or name, called with the registered headers; a server that is down cannot be
// registered, and once registered, being down is the observation of the call.
func TestMCPProvider(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		st := testdb.Open(t, e)
		m := toolregtest.NewMCP(t)
		cli, srv := newRegistry(t, st, loopback(t)), newRegistry(t, st, loopback(t))
		if _, err := cli.AddMCP(ctx, "Team Notes", toolreg.MCP{URL: m.URL}, false); !errors.Is(err, toolreg.ErrInvalid) || !strings.Contains(err.Error(), "--id") {
			t.Fatalf("a name that is no identifier, and no --id: %v", err)
		}
		if _, err := cli.AddMCP(ctx, "gone", toolreg.MCP{URL: "http://127.0.0.1:1/mcp"}, false); !errors.Is(err, toolreg.ErrInvalid) {
			t.Fatalf("a server that is down: %v", err)
		}
		sum, err := cli.AddMCP(ctx, "Team Notes", toolreg.MCP{ServerIdentifier: "notes", URL: m.URL,
			Headers: map[string]string{"Authorization": "Bearer mcp-secret"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sum.Tools) != "[chart hang notes.search stats]" || sum.ServerIdentifier != "notes" || fmt.Sprint(sum.Headers) != "[Authorization]" {
			t.Fatalf("summary %+v", sum)
		}
		if _, err := cli.AddMCP(ctx, "other", toolreg.MCP{ServerIdentifier: "notes", URL: m.URL}, false); !errors.Is(err, toolreg.ErrExists) {
			t.Fatalf("identifier taken: %v", err)
		}
		if list, _ := cli.List(ctx); strings.Contains(fmt.Sprintf("%+v", list), "mcp-secret") {
			t.Fatalf("the list shows a secret: %+v", list)
		}
		for _, ref := range []tools.Ref{
			{Type: tools.TypeMCP, ProviderID: "notes", Name: toolregtest.MCPToolSearch},
			{Type: tools.TypeMCP, ProviderName: "Team Notes", Name: toolregtest.MCPToolSearch},
		} {
			tl, err := srv.Find(ctx, ref)
			if err != nil {
				t.Fatalf("Find(%+v): %v", ref, err)
			}
			if tl.Identity().Name != toolregtest.MCPToolSearch || !strings.Contains(string(tl.Parameters()), "query") {
				t.Fatalf("tool %+v %s", tl.Identity(), tl.Parameters())
			}
			if res := invoke(t, tl, `{"query":"milk"}`); res.IsError || res.Text != "found: MILK" {
				t.Fatalf("search = %+v", res)
			}
		}
		if got := m.Auth.Load(); got != "Bearer mcp-secret" {
			t.Fatalf("Authorization %v", got)
		}
		if _, err := srv.Find(ctx, tools.Ref{Type: tools.TypeMCP, ProviderID: "notes", Name: "nope"}); !errors.Is(err, tools.ErrUnknownTool) {
			t.Fatalf("unknown MCP tool: %v", err)
		}
		if _, err := cli.Refresh(ctx, "Team Notes"); err != nil {
			t.Fatal(err)
		}
		tl, err := srv.Find(ctx, tools.Ref{Type: tools.TypeMCP, ProviderID: "notes", Name: toolregtest.MCPToolSearch})
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
		if res := invoke(t, tl, `{"query":"milk"}`); !res.IsError {
			t.Fatalf("a call to a server that is down = %+v", res)
		}
		if _, err := cli.Refresh(ctx, "Team Notes"); !errors.Is(err, toolreg.ErrInvalid) {
			t.Fatalf("refresh of a server that is down: %v", err)
		}
	})
}

// TestListRedactsURLs: an endpoint's password and query values are not listed.
func TestListRedactsURLs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	r := newRegistry(t, st, loopback(t))
	m := toolregtest.NewMCP(t)
	withSecrets := strings.Replace(m.URL, "http://", "http://bob:hunter2@", 1) + "/?token=abc123"
	if _, err := r.AddMCP(ctx, "notes", toolreg.MCP{URL: withSecrets}, false); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatal(list, err)
	}
	if e := list[0].Endpoint; strings.Contains(e, "hunter2") || strings.Contains(e, "abc123") || !strings.Contains(e, "bob:xxxxx@") || !strings.Contains(e, "token=xxxxx") {
		t.Fatalf("endpoint %q", e)
	}
}
