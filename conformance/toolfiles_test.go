package conformance

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// TestToolFileLinks checks the signed links to tool files on the running server, with the key
// it keeps in its database and the documented recipe (HMAC-SHA256 over
// "file-preview|<file id>|<timestamp>|<nonce>", URL-safe base64): no API key is needed, a
// correctly signed link to a file that does not exist is 404 (the signature was accepted), and
// expired, future-dated, forged and otherwise-keyed links are 403, each with the Error body and
// every response checked against the contract. TestToolFiles follows a real file from the tool
// to the link.
func TestToolFileLinks(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		key := signingKey(t, p)
		other := make([]byte, 32)
		_, _ = rand.Read(other)
		sign := func(k []byte, id string, ts int64, nonce string) string {
			m := hmac.New(sha256.New, k)
			m.Write([]byte("file-preview|" + id + "|" + strconv.FormatInt(ts, 10) + "|" + nonce))
			return base64.URLEncoding.EncodeToString(m.Sum(nil))
		}
		link := func(id string, ts int64, nonce, sig string) string {
			return "/files/tools/" + id + ".png?" + url.Values{"timestamp": {strconv.FormatInt(ts, 10)}, "nonce": {nonce}, "sign": {sig}}.Encode()
		}
		hc := newContractClient(t)
		id, now := uuid.NewString(), time.Now().Unix()
		old := now - 301
		for _, tc := range []struct {
			name   string
			path   string
			status int
			code   string
		}{
			{"signed, unknown file", link(id, now, "n1", sign(key, id, now, "n1")), 404, "not_found"},
			{"expired", link(id, old, "n1", sign(key, id, old, "n1")), 403, "forbidden"},
			{"dated ahead", link(id, now+3600, "n1", sign(key, id, now+3600, "n1")), 403, "forbidden"},
			{"nonce changed", link(id, now, "n2", sign(key, id, now, "n1")), 403, "forbidden"},
			{"another file's signature", link(id, now, "n1", sign(key, uuid.NewString(), now, "n1")), 403, "forbidden"},
			{"another key", link(id, now, "n1", sign(other, id, now, "n1")), 403, "forbidden"},
		} {
			resp, e := p.do(t, hc, call{method: http.MethodGet, path: tc.path})
			if resp.StatusCode != tc.status || e.Code != tc.code {
				t.Errorf("%s: %d %q (%q), want %d %q", tc.name, resp.StatusCode, e.Code, e.Message, tc.status, tc.code)
			}
		}
	})
}

// signingKey reads the key that signs file links from the server's database, where every
// server on that database finds it.
func signingKey(t *testing.T, p *Parley) []byte {
	t.Helper()
	st, err := store.Open(t.Context(), p.engine.DatabaseURL, p.engine.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var key []byte
	err = st.DB().QueryRowContext(t.Context(), st.Rebind("SELECT value FROM shared_secrets WHERE name = ?"), files.SigningKeyName).Scan(&key)
	if err != nil || len(key) < 32 {
		t.Fatalf("signing key in the database: %d bytes, %v", len(key), err)
	}
	return key
}

// chartAgent is a Legacy Agent export with two tools that answer a PNG: a custom API tool's
// operation and an MCP server's tool.
const chartAgent = `app: {name: Chart Agent, mode: agent-chat}
kind: app
model_config:
  agent_mode:
    enabled: true
    strategy: function_call
    tools:
    - {enabled: true, provider_type: api, provider_id: 0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9, provider_name: inventory, tool_name: getChart, tool_label: getChart, tool_parameters: {}}
    - {enabled: true, provider_type: mcp, provider_id: notes, provider_name: Team Notes, tool_name: chart, tool_parameters: {}}
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You draw charts.
  prompt_type: simple
version: 0.6.0
`

// TestToolFiles registers a loopback API and a loopback MCP server through the CLI, each with a
// tool that answers a PNG, and has an imported Legacy Agent call each: the stream announces the
// file with a message_file event between the step's tool call and its observation, the step
// lists it, message_end lists it, and its signed link serves exactly the tool's bytes without an
// API key — as does the link GET /messages hands out.
func TestToolFiles(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, chartAgentKey(t, p))
		for _, call := range []providers.ToolCall{{Name: "getChart", Arguments: `{}`}, {Name: "chart", Arguments: `{}`}} {
			t.Run(call.Name, func(t *testing.T) {
				evs := askAgent(t, c, "draw the chart", call)
				file := toolFileEvent(t, evs, call.Name)
				if file.BelongsTo != client.MessageFileEventBelongsToAssistant || file.Type != "image" {
					t.Errorf("message_file belongs to %q, type %q", file.BelongsTo, file.Type)
				}
				fetchToolFile(t, p, file.Url)

				end, err := evs[len(evs)-1].AsMessageEndEvent()
				if err != nil || eventName(t, evs[len(evs)-1]) != "message_end" {
					t.Fatalf("last event %s: %v", eventName(t, evs[len(evs)-1]), err)
				}
				if end.Files == nil || len(*end.Files) != 1 {
					t.Fatalf("message_end files: %+v", end.Files)
				}
				f := (*end.Files)[0]
				if f.RelatedId != file.Id || f.TransferMethod != client.MessageEndFileTransferMethodToolFile || f.Type != "image" ||
					ptrText(f.MimeType) != "image/png" || ptrText(f.Extension) != ".png" || f.Size == nil || *f.Size != int64(len(toolregtest.ChartPNG())) {
					t.Errorf("message_end file: %+v", f)
				}
				fetchToolFile(t, p, f.Url)

				history := historyOf(t, c, end.ConversationId.String(), "u1")
				last := history[len(history)-1]
				var listed *client.MessageFile
				for i := range last.MessageFiles {
					if last.MessageFiles[i].Id == file.Id {
						listed = &last.MessageFiles[i]
					}
				}
				if listed == nil || listed.BelongsTo != client.MessageFileBelongsToAssistant || listed.Type != "image" ||
					listed.TransferMethod != client.MessageFileTransferMethodToolFile || listed.Url == nil {
					t.Fatalf("GET /messages lists %+v, want the file %s", last.MessageFiles, file.Id)
				}
				fetchToolFile(t, p, *listed.Url)
				var stepFiles []string
				for _, th := range last.AgentThoughts {
					if th.Files != nil {
						stepFiles = append(stepFiles, *th.Files...)
					}
				}
				if len(stepFiles) != 1 || stepFiles[0] != file.Id {
					t.Errorf("stored steps list files %v, want [%s]", stepFiles, file.Id)
				}
			})
		}
	})
}

// chartAgentKey starts the loopback API and MCP server whose tools answer a PNG, restarts the
// server with the loopback allowance (and extraEnv), registers both through the CLI, imports
// chartAgent and returns a key of it.
func chartAgentKey(t *testing.T, p *Parley, extraEnv ...string) string {
	t.Helper()
	api, notes := toolregtest.NewAPI(t), toolregtest.NewMCP(t)
	p.Restart(t, append([]string{allowLoopback}, extraEnv...)...)
	addInventory(t, p, api)
	addNotes(t, p, notes)
	return importFile(t, p, "Chart Agent", chartAgent)
}

// toolFileEvent checks that the stream holds one message_file event, sent after the step that
// calls tool and before that step's observation, which lists the file; it returns the event.
func toolFileEvent(t *testing.T, evs []client.ChatStreamEvent, tool string) client.MessageFileEvent {
	t.Helper()
	var (
		files        []client.MessageFileEvent
		step         string
		called, seen = -1, -1
	)
	for i, ev := range evs {
		switch eventName(t, ev) {
		case "message_file":
			f, err := ev.AsMessageFileEvent()
			if err != nil {
				t.Fatal(err)
			}
			if called < 0 || seen >= 0 {
				t.Fatalf("message_file at %d: the step called %s at %d, observed at %d", i, tool, called, seen)
			}
			files = append(files, f)
		case "agent_thought":
			th, err := ev.AsAgentThoughtEvent()
			if err != nil {
				t.Fatal(err)
			}
			if called < 0 && ptrText(th.Tool) == tool {
				called, step = i, th.Id.String()
			}
			if th.Id.String() == step && ptrText(th.Observation) != "" && seen < 0 {
				seen = i
				if len(files) != 1 || th.MessageFiles == nil || len(*th.MessageFiles) != 1 || (*th.MessageFiles)[0] != files[0].Id {
					t.Fatalf("the step's observation lists files %v; message_file events %+v", th.MessageFiles, files)
				}
			}
		}
	}
	if len(files) != 1 || seen < 0 {
		t.Fatalf("%d message_file events; the step's observation at %d", len(files), seen)
	}
	return files[0]
}

// fetchToolFile fetches a tool file's link (a path from the server's root) with no API key: it
// must serve the chart's bytes as image/png, never sniffed.
func fetchToolFile(t *testing.T, p *Parley, link string) {
	t.Helper()
	base, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(ref.Path, "/v1/files/tools/") {
		t.Fatalf("link %q: %v", link, err)
	}
	resp, err := newContractClient(t).Get(base.ResolveReference(ref).String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || !bytes.Equal(body, toolregtest.ChartPNG()) {
		t.Fatalf("GET %s: %d %q nosniff=%q, %d bytes (want the chart's %d)", link, resp.StatusCode, resp.Header.Get("Content-Type"),
			resp.Header.Get("X-Content-Type-Options"), len(body), len(toolregtest.ChartPNG()))
	}
}
