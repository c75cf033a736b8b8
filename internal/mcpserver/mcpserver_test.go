package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

var form = []apps.InputField{
	{Type: apps.InputText, Variable: "name", Label: "Name", Required: true, MaxLength: 48},
	{Type: apps.InputParagraph, Variable: "notes"},
	{Type: apps.InputSelect, Variable: "tone", Options: []string{"warm", "dry"}, Required: true},
	{Type: apps.InputNumber, Variable: "words"},
	{Type: apps.InputCheckbox, Variable: "formal"},
	{Type: "file", Variable: "doc", Required: true},
	{Type: "file-list", Variable: "docs"},
	{Type: "external_data_tool", Variable: "weather"},
	{Type: "json_object", Variable: "extra"},
}

// TestInputSchema: the tool's schema is the app's form in its order, files and external data
// left out, each input described by the server's parameters; the chat kinds take `query` first.
func TestInputSchema(t *testing.T) {
	params := map[string]string{"name": "Who to greet", "tone": "How it sounds", "gone": "an input the form no longer has"}
	props := `"name":{"description":"Who to greet","type":"string","maxLength":48},` +
		`"notes":{"description":"","type":"string"},` +
		`"tone":{"description":"How it sounds","type":"string","enum":["warm","dry"]},` +
		`"words":{"description":"","type":"number"},` +
		`"formal":{"description":"","type":"boolean"},` +
		`"extra":{"description":""}`
	for mode, want := range map[string]string{
		apps.ModeWorkflow:   `{"type":"object","properties":{` + props + `},"required":["name","tone"]}`,
		apps.ModeCompletion: `{"type":"object","properties":{` + props + `},"required":["name","tone"]}`,
		apps.ModeChat: `{"type":"object","properties":{"query":{"type":"string","description":"User Input/Question content"},` +
			props + `},"required":["query","name","tone"]}`,
	} {
		got := InputSchema(mode, form, params)
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", mode, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: not JSON", mode)
		}
	}
	for _, mode := range []string{apps.ModeAgentChat, apps.ModeAgent, apps.ModeAdvancedChat} {
		if !strings.HasPrefix(string(InputSchema(mode, nil, nil)), `{"type":"object","properties":{"query":`) {
			t.Errorf("%s takes no query", mode)
		}
	}
	if got := string(InputSchema(apps.ModeWorkflow, nil, nil)); got != `{"type":"object","properties":{},"required":[]}` {
		t.Errorf("no form: %s", got)
	}
	if got := Variables(form); strings.Join(got, ",") != "name,notes,tone,words,formal,extra" {
		t.Errorf("variables %v", got)
	}
}

// TestArguments: a Workflow or Completion app's inputs are the arguments; a chat app's query is
// the `query` argument and its inputs the rest; anything else is an ArgumentError.
func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		mode, args string
		query      string
		inputs     string
		err        string
	}{
		{mode: apps.ModeWorkflow, args: `{"topic":"tides","n":2}`, inputs: `{"n":2,"topic":"tides"}`},
		{mode: apps.ModeWorkflow, args: `{"query":"kept"}`, inputs: `{"query":"kept"}`},
		{mode: apps.ModeWorkflow, args: ``, inputs: `{}`},
		{mode: apps.ModeWorkflow, args: `null`, inputs: `{}`},
		{mode: apps.ModeCompletion, args: `{"topic":"tides"}`, inputs: `{"topic":"tides"}`},
		{mode: apps.ModeChat, args: `{"query":"Hello","name":"Ada"}`, query: "Hello", inputs: `{"name":"Ada"}`},
		{mode: apps.ModeAdvancedChat, args: `{"query":"Hi"}`, query: "Hi", inputs: `{}`},
		{mode: apps.ModeChat, args: `{"name":"Ada"}`, err: "query is required"},
		{mode: apps.ModeChat, args: `{"query":3}`, err: "query must be a string"},
		{mode: apps.ModeAgent, args: `{"query":"  "}`, err: "query must not be empty"},
		{mode: apps.ModeWorkflow, args: `[1,2]`, err: "must be a JSON object"},
		{mode: apps.ModeChat, args: `"text"`, err: "must be a JSON object"},
	} {
		q, in, err := Arguments(tc.mode, json.RawMessage(tc.args))
		if tc.err != "" {
			var ae *ArgumentError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: %v, want %q", tc.mode, tc.args, err, tc.err)
			}
			continue
		}
		got, _ := json.Marshal(in)
		if err != nil || q != tc.query || string(got) != tc.inputs {
			t.Errorf("%s %s: %q %s %v", tc.mode, tc.args, q, got, err)
		}
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"chatbot":                "chatbot",
		"Topic Writer":           "Topic_Writer",
		"a.b-c_d":                "a.b-c_d",
		"Café au lait":           "Caf__au_lait",
		"日本":                     "app",
		strings.Repeat("x", 100): strings.Repeat("x", 64),
	} {
		if got := ToolName(in); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", in, got, want)
		}
	}
}

// memStore keeps MCP servers in memory for the Service's tests.
type memStore struct{ byID map[string]store.MCPServer }

func (m *memStore) CreateMCPServer(_ context.Context, s store.MCPServer) error {
	for _, o := range m.byID {
		if o.AppID == s.AppID {
			return store.ErrConflict
		}
	}
	m.byID[s.ID] = s
	return nil
}

func (m *memStore) UpdateMCPServer(_ context.Context, s store.MCPServer) error {
	if _, ok := m.byID[s.ID]; !ok {
		return store.ErrNotFound
	}
	m.byID[s.ID] = s
	return nil
}

func (m *memStore) MCPServerByApp(_ context.Context, appID string) (store.MCPServer, error) {
	for _, s := range m.byID {
		if s.AppID == appID {
			return s, nil
		}
	}
	return store.MCPServer{}, store.ErrNotFound
}

func (m *memStore) MCPServerByCodeHash(_ context.Context, h []byte) (store.MCPServer, error) {
	for _, s := range m.byID {
		if string(s.CodeHash) == string(h) {
			return s, nil
		}
	}
	return store.MCPServer{}, store.ErrNotFound
}

func (m *memStore) SetMCPServerClient(_ context.Context, id, client string) error {
	s := m.byID[id]
	s.ClientName = client
	m.byID[id] = s
	return nil
}

// TestService: enabling creates a server with a code shown once; the code finds it while it is
// active; rotating replaces the code; disabling keeps the server but refuses its code;
// descriptions merge; changes to an app without a server are refused.
func TestService(t *testing.T) {
	ctx := context.Background()
	st := &memStore{byID: map[string]store.MCPServer{}}
	s := New(st)
	if _, _, err := s.Apply(ctx, "app-1", Change{Disable: true}); !errors.Is(err, ErrNoServer) {
		t.Fatalf("disable without a server: %v", err)
	}
	desc := "Writes greetings."
	srv, code, err := s.Apply(ctx, "app-1", Change{Enable: true, Description: &desc, Params: map[string]string{"name": "Who"}})
	if err != nil || len(code) != codeLen || srv.CodePrefix != code[:prefixLen] || srv.Status != store.MCPServerActive ||
		srv.Description != desc || srv.Parameters["name"] != "Who" {
		t.Fatalf("enable: %+v %q %v", srv, code, err)
	}
	if strings.Contains(string(srv.CodeHash), code) {
		t.Fatal("the code is stored as it is")
	}
	if got, err := s.Lookup(ctx, code); err != nil || got.ID != srv.ID {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	for _, bad := range []string{"", "short", code[:codeLen-1] + "!", strings.Repeat("a", codeLen), strings.Repeat("z", 1000)} {
		if _, err := s.Lookup(ctx, bad); !errors.Is(err, ErrServerNotFound) {
			t.Errorf("lookup %q: %v", bad, err)
		}
	}
	again, code2, err := s.Apply(ctx, "app-1", Change{Enable: true})
	if err != nil || code2 != "" || again.ID != srv.ID {
		t.Fatalf("enable again issues no code: %q %v", code2, err)
	}
	_, code3, err := s.Apply(ctx, "app-1", Change{Rotate: true, Params: map[string]string{"name": "", "tone": "How"}})
	if err != nil || code3 == "" || code3 == code {
		t.Fatalf("rotate: %q %v", code3, err)
	}
	if _, err := s.Lookup(ctx, code); !errors.Is(err, ErrServerNotFound) {
		t.Fatalf("the old code after a rotation: %v", err)
	}
	got, err := s.Lookup(ctx, code3)
	if err != nil || len(got.Parameters) != 1 || got.Parameters["tone"] != "How" || got.Description != desc {
		t.Fatalf("after rotation: %+v %v", got, err)
	}
	if _, _, err := s.Apply(ctx, "app-1", Change{Disable: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, code3); !errors.Is(err, ErrServerInactive) {
		t.Fatalf("a disabled server: %v", err)
	}
	if _, _, err := s.Apply(ctx, "app-1", Change{Enable: true, Disable: true}); err == nil {
		t.Fatal("enable and disable at once")
	}
	if err := s.RecordClient(ctx, srv.ID, "claude-ai", "0.1.0"); err != nil || st.byID[srv.ID].ClientName != "claude-ai@0.1.0" {
		t.Fatalf("client: %v %q", err, st.byID[srv.ID].ClientName)
	}
	if User(srv.ID) != "mcp-"+srv.ID || Path(code3) != "/mcp/server/"+code3+"/mcp" {
		t.Fatal("user or path")
	}
}

// TestFinished: a Workflow app's finished run answers with its outputs as unescaped JSON text
// and as structured content, and with the files among them; a failed run is the tool's error.
func TestFinished(t *testing.T) {
	file := map[string]any{"dify_model_identity": fileIdentity, "filename": "report.pdf", "mime_type": "application/pdf",
		"url": "/v1/files/tools/abc.pdf?sign=x"}
	c := &collector{}
	res, err := c.finished(run.Event{Kind: run.EventWorkflowFinished, Data: map[string]any{
		"status": "succeeded", "outputs": map[string]any{"html": "<b>Tides & moons</b>", "doc": file, "more": []any{file}},
	}})
	if err != nil || res.Failed || !strings.Contains(res.Text, `"html":"<b>Tides & moons</b>"`) ||
		res.Structured["html"] != "<b>Tides & moons</b>" || len(res.Files) != 1 ||
		res.Files[0] != (File{URL: "/v1/files/tools/abc.pdf?sign=x", Name: "report.pdf", MIMEType: "application/pdf"}) {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = (&collector{}).finished(run.Event{Kind: run.EventWorkflowFinished, Data: map[string]any{
		"status": "failed", "error": "node llm: the model call failed", "outputs": nil}})
	if err != nil || !res.Failed || res.Text != "The workflow failed: node llm: the model call failed" {
		t.Fatalf("failed: %+v %v", res, err)
	}
	res, _ = (&collector{}).finished(run.Event{Kind: run.EventWorkflowFinished, Data: map[string]any{"status": "stopped"}})
	if !res.Failed || !strings.Contains(res.Text, "the run ended stopped") {
		t.Fatalf("stopped: %+v", res)
	}
	// A message_file event names its file by its link only.
	c = &collector{}
	c.addFiles(struct {
		ID        string `json:"id"`
		BelongsTo string `json:"belongs_to"`
		URL       string `json:"url"`
	}{"f1", "assistant", "/v1/files/tools/chart.png?nonce=1"})
	if len(c.files) != 1 || c.files[0].Name != "chart.png" {
		t.Fatalf("message file: %+v", c.files)
	}
}

// TestProgressThrottle: steps closer than ProgressInterval are counted but reported once.
func TestProgressThrottle(t *testing.T) {
	var got []Progress
	c := &collector{report: func(p Progress) { got = append(got, p) }}
	for range 5 {
		c.step(func() string { return "step" })
	}
	if len(got) != 1 || got[0].Progress != 1 {
		t.Fatalf("%+v", got)
	}
	c.last = time.Now().Add(-ProgressInterval)
	c.step(func() string { return "later" })
	if len(got) != 2 || got[1].Progress != 6 || got[1].Message != "later" {
		t.Fatalf("%+v", got)
	}
}
