package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// mcpTimeout bounds each MCP exchange of the tests.
const mcpTimeout = 30 * time.Second

// mcpApps publishes the `chatbot` app (with a description and a parameter description) and a
// Workflow app (the example Topic Writer, imported as name) as MCP servers through the CLI, and
// returns their URLs as the CLI printed them.
func mcpApps(t *testing.T, p *Parley, name string) (chatURL, workflowURL string) {
	t.Helper()
	base := strings.TrimSuffix(p.URL, "/v1")
	chatURL = p.CLI(t, "apps", "mcp", "chatbot", "--enable", "--url", base, "--description", "Answers questions about Parley.",
		"--param", "name=Who is asking")
	raw, err := os.ReadFile(workflowExample)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flow.yml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "name: Topic Writer", "name: "+name, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p.CLI(t, "apps", "import", "--publish", path)
	workflowURL = p.CLI(t, "apps", "mcp", name, "--enable", "--url", base, "--param", "topic=What to write about")
	for _, u := range []string{chatURL, workflowURL} {
		if !strings.HasPrefix(u, base+"/mcp/server/") || !strings.HasSuffix(u, "/mcp") || strings.Contains(u, "\n") {
			t.Fatalf("the CLI printed %q", u)
		}
	}
	return chatURL, workflowURL
}

// mcpCode is the server code in an MCP server's URL.
func mcpCode(url string) string {
	_, rest, _ := strings.Cut(url, "/mcp/server/")
	return strings.TrimSuffix(rest, "/mcp")
}

// mcpConnect connects the Go MCP SDK's client to url, with the protocol version given ("": the
// SDK's latest) and a handler that collects progress notifications.
func mcpConnect(t *testing.T, url, version string) (*mcp.ClientSession, *progressLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
	defer cancel()
	pl := &progressLog{got: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-conformance", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { pl.add(req.Params) },
	})
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, opts)
	if err != nil {
		t.Fatalf("connect to the MCP server (protocol %q): %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, pl
}

// progressLog collects the progress notifications a client receives. The client hands them
// to its handler on a goroutine of its own, which may run after the call has returned.
type progressLog struct {
	mu   sync.Mutex
	list []*mcp.ProgressNotificationParams
	got  chan struct{}
}

func (l *progressLog) add(p *mcp.ProgressNotificationParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, p)
	select {
	case l.got <- struct{}{}:
	default:
	}
}

// wait returns the notifications received once there is one, or none after a while.
func (l *progressLog) wait() []*mcp.ProgressNotificationParams {
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for {
		l.mu.Lock()
		list := append([]*mcp.ProgressNotificationParams(nil), l.list...)
		l.mu.Unlock()
		if len(list) > 0 {
			return list
		}
		select {
		case <-l.got:
		case <-timer.C:
			return nil
		}
	}
}

// sameJSON reports whether got, once encoded, is the JSON value want.
func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

// TestMCPServer publishes a Chatbot and a Workflow app as MCP servers with the CLI and drives
// them with the official Go MCP SDK's client, unchanged, on both protocol generations it speaks
// (the initialize handshake of 2025-06-18 and the SDK's latest, which starts with
// server/discover): the server's name and instructions, the one tool with the exact schema
// built from the app's form, a call of each app answered through the fake model with a progress
// notification on the way, the Workflow app's outputs as structured content, bad arguments as
// invalid params, a run the model fails as the tool's error; then a disabled server, a rotated
// code and an unknown code.
func TestMCPServer(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		tag := fmt.Sprintf("%s-%d", p.engine.Name, time.Now().UnixNano())
		workflow := "MCP Topic Writer " + p.engine.Name
		chatURL, workflowURL := mcpApps(t, p, workflow)
		for _, version := range []string{"2025-06-18", ""} {
			t.Run("protocol "+version, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
				defer cancel()
				cs, progress := mcpConnect(t, chatURL, version)
				init := cs.InitializeResult()
				if init.ServerInfo == nil || init.ServerInfo.Name != "Parley" || init.ServerInfo.Version == "" ||
					init.Instructions != "Answers questions about Parley." || init.Capabilities.Tools == nil || init.Capabilities.Tools.ListChanged {
					t.Fatalf("initialize: %+v %+v", init, init.ServerInfo)
				}
				tools, err := cs.ListTools(ctx, nil)
				if err != nil || len(tools.Tools) != 1 {
					t.Fatalf("tools/list: %+v %v", tools, err)
				}
				tool := tools.Tools[0]
				if tool.Name != "chatbot" || tool.Description != "Answers questions about Parley." || !sameJSON(t, tool.InputSchema,
					`{"type":"object","properties":{"query":{"type":"string","description":"User Input/Question content"},`+
						`"name":{"description":"Who is asking","type":"string","maxLength":20},`+
						`"tone":{"description":"","type":"string","enum":["warm","dry"]}},"required":["query","tone"]}`) {
					raw, _ := json.Marshal(tool)
					t.Fatalf("the tool: %s", raw)
				}

				marker := "[mcp-chat-" + tag + version + "]"
				upstream.On(marker, openaitest.Reply{Chunks: []string{"Parley ", "answers ", "over MCP."}})
				call := &mcp.CallToolParams{Name: "chatbot", Arguments: map[string]any{"query": "What is Parley? " + marker, "tone": "warm"}}
				call.SetProgressToken("chat-" + version)
				res, err := cs.CallTool(ctx, call)
				if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Parley answers over MCP." {
					t.Fatalf("tools/call: %+v %v", res, err)
				}
				got := progress.wait()
				if len(got) == 0 || got[0].ProgressToken != "chat-"+version || got[0].Progress < 1 {
					t.Fatalf("progress notifications: %+v", got)
				}

				// A required input missing is invalid params, as in Dify.
				_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatbot", Arguments: map[string]any{"query": "Hi"}})
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "tone is required in input form") {
					t.Fatalf("a missing input: %v", err)
				}
				_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatbot", Arguments: map[string]any{"tone": "dry"}})
				if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "query is required") {
					t.Fatalf("no query: %v", err)
				}
				// A run the model fails is the tool's error, with the message the API gives.
				failing := "[mcp-fail-" + tag + version + "]"
				upstream.On(failing, openaitest.Reply{Status: http.StatusInternalServerError})
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatbot", Arguments: map[string]any{"query": failing, "tone": "dry"}})
				if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text == "" {
					t.Fatalf("a failed run: %+v %v", res, err)
				}

				// The Workflow app: its inputs are the arguments, its outputs the structured content.
				ws, wprogress := mcpConnect(t, workflowURL, version)
				tools, err = ws.ListTools(ctx, nil)
				if err != nil || len(tools.Tools) != 1 {
					t.Fatalf("tools/list: %+v %v", tools, err)
				}
				tool = tools.Tools[0]
				wantName := strings.ReplaceAll(workflow, " ", "_")
				if tool.Name != wantName || tool.Title != workflow || tool.Description != "Writes a short text about a topic." || !sameJSON(t, tool.InputSchema,
					`{"type":"object","properties":{"topic":{"description":"What to write about","type":"string","maxLength":256}},"required":["topic"]}`) {
					raw, _ := json.Marshal(tool)
					t.Fatalf("the workflow tool: %s", raw)
				}
				topic := "tides " + tag + version
				upstream.On(topic, openaitest.Reply{Chunks: []string{"Tides rise ", "and fall."}})
				call = &mcp.CallToolParams{Name: wantName, Arguments: map[string]any{"topic": topic}}
				call.SetProgressToken(7)
				res, err = ws.CallTool(ctx, call)
				heading := "# " + strings.ToUpper(topic)
				if err != nil || res.IsError || !sameJSON(t, res.StructuredContent, fmt.Sprintf(`{"text":"Tides rise and fall.","heading":%q}`, heading)) {
					t.Fatalf("workflow call: %+v %v", res, err)
				}
				if text := res.Content[0].(*mcp.TextContent).Text; !sameJSON(t, json.RawMessage(text), fmt.Sprintf(`{"text":"Tides rise and fall.","heading":%q}`, heading)) {
					t.Fatalf("workflow text %q", text)
				}
				got = wprogress.wait()
				if len(got) == 0 || got[0].ProgressToken != float64(7) || !strings.HasSuffix(got[0].Message, "finished.") {
					t.Fatalf("workflow progress: %+v", got)
				}
			})
		}

		// A disabled server refuses every request; enabled again, its URL works again.
		p.CLI(t, "apps", "mcp", "chatbot", "--disable")
		assertMCPRefused(t, chatURL, http.StatusForbidden, "Server is not active")
		if out := p.CLI(t, "apps", "mcp", "chatbot", "--enable"); out != "" {
			t.Fatalf("enabling again printed %q: the code is not kept", out)
		}
		mcpConnect(t, chatURL, "2025-06-18")
		// The settings show the code's prefix only, and the client that last initialized.
		status := p.CLI(t, "apps", "mcp", "chatbot")
		code := mcpCode(chatURL)
		if !strings.Contains(status, "active") || !strings.Contains(status, "parley-conformance@1.0.0") ||
			!strings.Contains(status, "name: Who is asking") || !strings.Contains(status, code[:8]+"…") || strings.Contains(status, code) {
			t.Fatalf("status:\n%s", status)
		}
		// A rotated code: the old URL is unknown, the new one works.
		newURL := p.CLI(t, "apps", "mcp", "chatbot", "--rotate", "--url", strings.TrimSuffix(p.URL, "/v1"))
		if newURL == chatURL {
			t.Fatal("rotation kept the URL")
		}
		assertMCPRefused(t, chatURL, http.StatusNotFound, "Server Not Found")
		mcpConnect(t, newURL, "")
		base := strings.TrimSuffix(p.URL, "/v1")
		assertMCPRefused(t, base+"/mcp/server/0123456789abcdefghijABCDEFGHIJ0123456789abc/mcp", http.StatusNotFound, "Server Not Found")
		assertMCPRefused(t, base+"/mcp/server/nope/mcp", http.StatusNotFound, "Server Not Found")
	})
}

// assertMCPRefused checks that an initialize sent to url gets a JSON-RPC error (-32600) with
// the request's id, the message and the HTTP status, and that the Go SDK's client reports it.
func assertMCPRefused(t *testing.T, url string, status int, message string) {
	t.Helper()
	resp, body := mcpPost(t, url, `{"jsonrpc":"2.0","id":41,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, nil)
	if resp.StatusCode != status || !sameJSON(t, json.RawMessage(body), fmt.Sprintf(`{"jsonrpc":"2.0","id":41,"error":{"code":-32600,"message":%q}}`, message)) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-conformance", Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
	defer cancel()
	if cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil); err == nil || !strings.Contains(err.Error(), message) {
		if cs != nil {
			_ = cs.Close()
		}
		t.Fatalf("the SDK's client connected or said %v", err)
	}
}

// mcpPost sends body to an MCP endpoint as MCP clients do (JSON, accepting JSON and event
// streams) unless headers say otherwise, and returns the response and its body.
func mcpPost(t *testing.T, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(raw)
}

// TestMCPServerWire pins what the MCP endpoint answers on the wire, before and around the SDK:
// initialize as Dify answers it (tools only, Parley's name, the description as instructions), a
// JSON body for a client that accepts only JSON, 202 for a notification, and a JSON-RPC error
// for every hostile or careless request: another method, another media type, a body over the
// cap, a body that is not JSON, a batch, a message that is not a request, an unknown method,
// a protocol version the server does not speak.
func TestMCPServerWire(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	p.Restart(t, "PARLEY_MAX_BODY_BYTES=4096")
	url := p.CLI(t, "apps", "mcp", "chatbot", "--enable", "--url", strings.TrimSuffix(p.URL, "/v1"), "--description", "Wire test.")
	initialize := `{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wire","version":"2"}}}`

	resp, body := mcpPost(t, url, initialize, map[string]string{"Accept": "application/json"})
	var init struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		json.Unmarshal([]byte(body), &init) != nil || init.ID != "init-1" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	var result struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      struct{ Name, Version string }
		Instructions    string `json:"instructions"`
	}
	if err := json.Unmarshal(init.Result, &result); err != nil || result.ProtocolVersion != "2025-06-18" ||
		!sameJSON(t, result.Capabilities, `{"tools":{}}`) || result.ServerInfo.Name != "Parley" || result.Instructions != "Wire test." {
		t.Fatalf("initialize result %s", init.Result)
	}
	// No Accept at all (curl): one JSON body too.
	if resp, body := mcpPost(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Accept": ""}); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, `"name":"chatbot"`) {
		t.Fatalf("tools/list without Accept: %d %s", resp.StatusCode, body)
	}
	// An event stream for a client that accepts one.
	if resp, body := mcpPost(t, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil); resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(body, `"id":3`) {
		t.Fatalf("ping: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := mcpPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); resp.StatusCode != http.StatusAccepted || body != "" {
		t.Fatalf("notification: %d %q", resp.StatusCode, body)
	}

	rpcErr := func(id string, code int, message string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, message)
	}
	for _, tc := range []struct {
		name    string
		method  string
		body    string
		headers map[string]string
		status  int
		want    string // the whole JSON-RPC error, or a part of its message
	}{
		{name: "GET", method: http.MethodGet, status: http.StatusMethodNotAllowed,
			want: rpcErr("null", -32600, "Method not allowed: send JSON-RPC messages with POST (this server keeps no sessions and has no stream to GET).")},
		{name: "DELETE", method: http.MethodDelete, status: http.StatusMethodNotAllowed, want: "Method not allowed"},
		{name: "form", body: initialize, headers: map[string]string{"Content-Type": "text/plain"}, status: http.StatusUnsupportedMediaType,
			want: rpcErr("null", -32600, "Content-Type must be application/json.")},
		{name: "accept html", body: initialize, headers: map[string]string{"Accept": "text/html"}, status: http.StatusNotAcceptable, want: "Accept must include"},
		{name: "not JSON", body: `{"jsonrpc":`, status: http.StatusBadRequest, want: rpcErr("null", -32700, "Parse error: the body is not valid JSON.")},
		{name: "batch", body: `[` + initialize + `]`, status: http.StatusBadRequest, want: "Batch requests are not supported"},
		{name: "no method", body: `{"jsonrpc":"2.0","id":5,"result":{}}`, status: http.StatusBadRequest,
			want: rpcErr("5", -32600, "Invalid Request: the message has no method.")},
		{name: "old jsonrpc", body: `{"jsonrpc":"1.0","id":6,"method":"ping"}`, status: http.StatusBadRequest, want: `jsonrpc must be \"2.0\"`},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, status: http.StatusBadRequest, want: "the id must be a string or a number"},
		{name: "a string", body: `"hello"`, status: http.StatusBadRequest, want: "Invalid Request"},
		{name: "too large", body: `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`,
			status: http.StatusRequestEntityTooLarge, want: "-32600"},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":8,"method":"tools/erase"}`, status: http.StatusBadRequest, want: "-32601"},
		{name: "NUL in an argument", body: `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"chatbot","arguments":{"query":"a\u0000b","tone":"warm"}}}`,
			status: http.StatusOK, want: "-32602 query: NUL characters and invalid UTF-8 are not allowed."},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"other","arguments":{}}}`,
			status: http.StatusOK, want: `unknown tool`},
		{name: "bad protocol version", body: `{"jsonrpc":"2.0","id":10,"method":"tools/list"}`,
			headers: map[string]string{"MCP-Protocol-Version": "1999-01-01"}, status: http.StatusBadRequest, want: "Unsupported protocol version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			var resp *http.Response
			var body string
			if method == http.MethodPost {
				resp, body = mcpPost(t, url, tc.body, tc.headers)
			} else {
				req, _ := http.NewRequest(method, url, nil)
				req.Header.Set("Accept", "application/json, text/event-stream")
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(r.Body)
				r.Body.Close()
				resp, body = r, string(raw)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if strings.HasPrefix(tc.want, "{") {
				if !sameJSON(t, json.RawMessage(body), tc.want) {
					t.Fatalf("body %s\nwant %s", body, tc.want)
				}
				return
			}
			// An event stream carries the message in a data line.
			if i := strings.Index(body, "data: "); i >= 0 {
				body = strings.TrimSpace(body[i+len("data: "):])
			}
			var msg struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.JSONRPC != "2.0" || msg.Error == nil ||
				!strings.Contains(fmt.Sprintf("%d %s", msg.Error.Code, msg.Error.Message), strings.ReplaceAll(tc.want, `\"`, `"`)) {
				t.Fatalf("body %s, want an error with %q", body, tc.want)
			}
		})
	}

	// An app that cannot run (a Workflow app not yet published) is unavailable, until published.
	raw, err := os.ReadFile(workflowExample)
	if err != nil {
		t.Fatal(err)
	}
	draft := filepath.Join(t.TempDir(), "draft.yml")
	if err := os.WriteFile(draft, []byte(strings.Replace(string(raw), "name: Topic Writer", "name: Draft Writer", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p.CLI(t, "apps", "import", draft)
	draftURL := p.CLI(t, "apps", "mcp", "Draft Writer", "--enable", "--url", strings.TrimSuffix(p.URL, "/v1"))
	assertMCPRefused(t, draftURL, http.StatusBadRequest, "App is unavailable")
	p.CLI(t, "apps", "publish", "Draft Writer")
	mcpConnect(t, draftURL, "")

	// The access log names the route, never the code, and the JSON-RPC method.
	code := mcpCode(url)
	logs := p.logs.String()
	if strings.Contains(logs, code) || !strings.Contains(logs, `"route":"/mcp/server/:server_code/mcp"`) ||
		!strings.Contains(logs, `"mcp_method":"tools/list"`) {
		t.Fatalf("the log has the code or lacks the route:\n%s", logs)
	}
	var lines bytes.Buffer
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			lines.WriteString(l + "\n")
		}
	}
	if lines.Len() > 0 {
		t.Fatalf("errors logged:\n%s", lines.String())
	}
}

// TestMCPNodeSDK runs the official MCP TypeScript SDK's client (npm @modelcontextprotocol/sdk,
// pinned in conformance/node/package.json and installed as the Dify Node SDK is) against a
// Chatbot and a Workflow app published as MCP servers: conformance/node/mcp.test.mjs under
// node's test runner. Without node it skips, except in CI, where it fails.
func TestMCPNodeSDK(t *testing.T) {
	node := nodeOrSkip(t)
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	installNodeDeps(t, dir)
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		tag := fmt.Sprintf("%s-%d", p.engine.Name, time.Now().UnixNano())
		chatURL, workflowURL := mcpApps(t, p, "Node MCP Topic Writer "+p.engine.Name)
		script := map[string]sdkReply{
			"chat":     {Marker: "[node-mcp-chat-" + tag + "]", Chunks: []string{"Parley ", "speaks ", "MCP."}},
			"workflow": {Marker: "node-mcp-tides-" + tag, Chunks: []string{"Tides ", "turn."}},
		}
		for _, r := range script {
			upstream.On(r.Marker, openaitest.Reply{Chunks: r.Chunks})
		}
		raw, err := json.Marshal(script)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", filepath.Join(dir, "mcp.test.mjs"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PARLEY_MCP_CHAT_URL="+chatURL, "PARLEY_MCP_WORKFLOW_URL="+workflowURL,
			"PARLEY_MCP_SCRIPT="+string(raw), "NO_COLOR=1")
		cmd.WaitDelay = 5 * time.Second
		out := &lineLogger{t: t}
		cmd.Stdout, cmd.Stderr = out, out
		err = cmd.Run()
		out.close()
		switch {
		case ctx.Err() != nil:
			t.Fatalf("node --test did not finish in %v", sdkTimeout)
		case err != nil:
			t.Fatalf("node --test: %v (its output is above)", err)
		}
	})
}

// TestMCPServerFiles: the files a Workflow app's run produces come back as resource links whose
// absolute, signed URL serves the file.
func TestMCPServerFiles(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	p.CLI(t, "apps", "import", "--publish", "testdata/mcp-workflow-files.yml")
	url := p.CLI(t, "apps", "mcp", "Docx Maker", "--enable", "--url", strings.TrimSuffix(p.URL, "/v1"))
	cs, _ := mcpConnect(t, url, "")
	ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Docx_Maker", Arguments: map[string]any{"notes": "# Minutes\n\nAll agreed."}})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if !ok || link.Name != "notes.docx" || link.MIMEType != "application/vnd.openxmlformats-officedocument.wordprocessingml.document" ||
		!strings.HasPrefix(link.URI, strings.TrimSuffix(p.URL, "/v1")+"/v1/files/tools/") {
		t.Fatalf("link %+v", res.Content[1])
	}
	resp, err := http.Get(link.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := make([]byte, 2)
	if _, err := io.ReadFull(resp.Body, head); resp.StatusCode != http.StatusOK || err != nil || string(head) != "PK" {
		t.Fatalf("the linked file: %d %q %v", resp.StatusCode, head, err)
	}
}

// TestMCPServerConcurrencyCap: the app's concurrency cap holds for MCP calls as for API
// requests: while a call holds the `limited` app's one slot, another is the tool's error with
// the API's message.
func TestMCPServerConcurrencyCap(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	url := p.CLI(t, "apps", "mcp", "limited", "--enable", "--url", strings.TrimSuffix(p.URL, "/v1"))
	hang := fmt.Sprintf("[mcp-hang-%d]", time.Now().UnixNano())
	upstream.On(hang, openaitest.Reply{Chunks: []string{"Partial ", "never sent"}, HangAfterChunks: 1})
	first, progress := mcpConnect(t, url, "")
	ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
	defer cancel()
	held, release := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		call := &mcp.CallToolParams{Name: "limited", Arguments: map[string]any{"query": hang}}
		call.SetProgressToken("hold")
		_, err := first.CallTool(held, call)
		done <- err
	}()
	// The first piece of the answer has streamed: the run holds the slot.
	if got := progress.wait(); len(got) == 0 {
		t.Fatal("the first call sent no progress")
	}
	second, _ := mcpConnect(t, url, "")
	res, err := second.CallTool(ctx, &mcp.CallToolParams{Name: "limited", Arguments: map[string]any{"query": "Hello"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Too many requests") {
		t.Fatalf("a call over the cap: %+v %v", res, err)
	}
	release()
	if err := <-done; err == nil {
		t.Fatal("the held call answered")
	}
}

// TestMCPServerKinds: a Completion app (its inputs alone), a Legacy Agent and an Agent app (a
// query, run streaming inside) answer through their MCP servers.
func TestMCPServerKinds(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	path := filepath.Join(t.TempDir(), "agent-app.yml")
	if err := os.WriteFile(path, []byte(agentAppDSL("You help.", "Hello.")), 0o600); err != nil {
		t.Fatal(err)
	}
	agentApp := p.CLI(t, "apps", "import", "--name", "MCP Desk Agent", "--publish", path)
	base := strings.TrimSuffix(p.URL, "/v1")
	tag := time.Now().UnixNano()
	for _, tc := range []struct {
		app, marker string
		args        func(marker string) map[string]any
	}{
		{"writer", fmt.Sprintf("[mcp-writer-%d]", tag), func(m string) map[string]any { return map[string]any{"name": m, "tone": "dry"} }},
		{"agent", fmt.Sprintf("[mcp-agent-%d]", tag), func(m string) map[string]any { return map[string]any{"query": m} }},
		{agentApp, fmt.Sprintf("[mcp-agentapp-%d]", tag), func(m string) map[string]any { return map[string]any{"query": m} }},
	} {
		t.Run(tc.app, func(t *testing.T) {
			url := p.CLI(t, "apps", "mcp", tc.app, "--enable", "--url", base)
			upstream.On(tc.marker, openaitest.Reply{Chunks: []string{"Answer ", "of " + tc.app + "."}})
			cs, _ := mcpConnect(t, url, "")
			ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
			defer cancel()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 {
				t.Fatalf("tools/list: %+v %v", tools, err)
			}
			args := tc.args(tc.marker)
			var schema struct {
				Required   []string                  `json:"required"`
				Properties map[string]map[string]any `json:"properties"`
			}
			raw, _ := json.Marshal(tools.Tools[0].InputSchema)
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Fatal(err)
			}
			// Whatever else the app requires, with a value it accepts.
			for _, name := range schema.Required {
				if _, ok := args[name]; !ok {
					if enum, ok := schema.Properties[name]["enum"].([]any); ok && len(enum) > 0 {
						args[name] = enum[0]
					} else {
						args[name] = "x"
					}
				}
			}
			_, takesQuery := schema.Properties["query"]
			if takesQuery == (tc.app == "writer") {
				t.Fatalf("schema %s", raw)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: args})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "Answer of "+tc.app+"." {
				raw, _ := json.Marshal(res)
				t.Fatalf("tools/call: %s %v", raw, err)
			}
		})
	}
}
