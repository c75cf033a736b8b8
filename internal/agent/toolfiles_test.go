package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/openapi"
)

// chartAPI is an API with one operation that answers with a PNG.
const chartAPI = `{
  "openapi": "3.0.0",
  "info": {"title": "Charts", "version": "1"},
  "paths": {"/chart": {"get": {
    "operationId": "draw_chart",
    "summary": "Draws a chart of a series",
    "parameters": [{"name": "series", "in": "query", "required": true, "schema": {"type": "string"}}],
    "responses": {"200": {"description": "the chart", "content": {"image/png": {}}}}
  }}}
}`

// chartPNG is a real PNG image.
func chartPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withChartTool gives the agent the chart API's operation (as a tool of provider "charts"), and
// a file service over the test's store; limits are the upload limits it applies.
func withChartTool(t *testing.T, api string, limits config.UploadLimits, fs **files.Service) func(*apps.App, *Options) {
	return func(app *apps.App, o *Options) {
		list, err := openapi.New([]byte(chartAPI), openapi.Options{Provider: "charts", HTTPClient: &http.Client{}, ServerURL: api})
		if err != nil {
			t.Fatal(err)
		}
		builtinLookup := o.Tools
		o.Tools = func(ctx context.Context, ref tools.Ref) (tools.Tool, error) {
			if ref.Provider() == "charts" && ref.Name == list[0].Identity().Name {
				return list[0], nil
			}
			return builtinLookup(ctx, ref)
		}
		blobs, err := blob.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		*fs = files.New(files.Options{Store: o.Store.(*store.Store), Blobs: blobs, Limits: limits})
		o.Files = *fs
	}
}

var chartAgent = apps.Agent{Enabled: true, Strategy: "function_call", Tools: []apps.Tool{
	{ProviderType: "builtin", ProviderID: "charts", Name: "draw_chart", Enabled: true},
}}

var defaultLimits = config.UploadLimits{FileSizeLimitMB: 15, ImageFileSizeLimitMB: 10, AudioFileSizeLimitMB: 50, VideoFileSizeLimitMB: 100}

// TestToolFileBecomesMessageFile: an API tool answers with an image. The image is stored as a
// file of the answer belonging to the assistant, announced by a message_file event between the
// step's tool call and its observation, listed in the step's message_files (streamed and
// stored) and in message_end's files, and its signed link opens it.
func TestToolFileBecomesMessageFile(t *testing.T) {
	pic := chartPNG(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("series") != "sales" {
			http.Error(w, "bad series", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic)
	}))
	t.Cleanup(api.Close)
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		var fs *files.Service
		env := newEnv(t, e, chartAgent, withChartTool(t, api.URL, defaultLimits, &fs))
		env.upstream.OnEach("chart the sales", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "draw_chart", Arguments: `{"series": "sales"}`}},
		}, openaitest.Reply{Chunks: []string{"Here is the chart."}})
		rn := env.send(t, "Please chart the sales", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 T1t message_file T1to T2 A T2 E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		var ev messageFileEvent
		for _, e := range evs {
			if e.Kind == run.EventMessageFile {
				ev = e.Data.(messageFileEvent)
			}
		}
		if ev.ID == "" || ev.Type != "image" || ev.BelongsTo != "assistant" || !strings.HasPrefix(ev.URL, files.ToolFilePath+"/") {
			t.Fatalf("message_file %+v", ev)
		}
		ths := thoughtsOf(evs)
		if len(ths[1].MessageFiles) != 0 || len(ths[2].MessageFiles) != 1 || ths[2].MessageFiles[0] != ev.ID || len(ths[4].MessageFiles) != 0 {
			t.Fatalf("step message_files %+v", ths)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 2 || len(stored[0].Files) != 1 || stored[0].Files[0] != ev.ID {
			t.Fatalf("stored thoughts %+v", stored)
		}

		// The rows: a message file of the assistant, over an upload with no end user.
		mfs, err := env.store.MessageFiles(context.Background(), []string{rn.MessageID})
		if err != nil {
			t.Fatal(err)
		}
		got := mfs[rn.MessageID]
		if len(got) != 1 || got[0].ID != ev.ID || got[0].BelongsTo != store.BelongsToAssistant ||
			got[0].TransferMethod != store.TransferToolFile || got[0].Type != "image" || got[0].UploadFileID == "" {
			t.Fatalf("message files %+v", got)
		}
		up, err := env.store.UploadFile(context.Background(), got[0].UploadFileID)
		if err != nil {
			t.Fatal(err)
		}
		if up.EndUserID != "" || up.AppID != env.app.ID || up.MimeType != "image/png" || up.Extension != "png" || up.Size != int64(len(pic)) {
			t.Fatalf("upload row %+v", up)
		}

		// message_end lists the file with the same link.
		end := evs[len(evs)-1].End
		list, ok := end.Files.([]map[string]any)
		if !ok || len(list) != 1 || list[0]["related_id"] != ev.ID || list[0]["url"] != ev.URL ||
			list[0]["transfer_method"] != "tool_file" || list[0]["mime_type"] != "image/png" || list[0]["extension"] != ".png" {
			t.Fatalf("message_end files %#v", end.Files)
		}

		// The link opens the file; the same link with another file id, or tampered, does not.
		u, err := url.Parse(ev.URL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if path.Base(u.Path) != up.ID+".png" {
			t.Fatalf("link %s does not name upload %s", ev.URL, up.ID)
		}
		f, rc, err := fs.OpenToolFile(context.Background(), path.Base(u.Path), q.Get("timestamp"), q.Get("nonce"), q.Get("sign"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		if f.ID != up.ID || !bytes.Equal(body, pic) {
			t.Fatalf("opened %+v, %d bytes", f, len(body))
		}
		if _, _, err := fs.OpenToolFile(context.Background(), path.Base(u.Path), q.Get("timestamp"), q.Get("nonce")+"0", q.Get("sign")); !errors.Is(err, files.ErrBadSignature) {
			t.Fatalf("tampered nonce: %v", err)
		}

		// The model read the tool's text, not the bytes.
		reqs := env.upstream.Requests()
		msgs := reqs[1].Messages
		if last := msgs[len(msgs)-1]; last.Role != providers.RoleTool || strings.Contains(last.Content, "PNG") {
			t.Fatalf("tool result in the prompt %+v", last)
		}
	})
}

// TestToolFileOverLimit: a file over its category's limit is not kept; the model is told, and
// the step lists no file.
func TestToolFileOverLimit(t *testing.T) {
	big := bytes.Repeat([]byte{0x89}, 2<<20)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(big)
	}))
	t.Cleanup(api.Close)
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		var fs *files.Service
		limits := defaultLimits
		limits.ImageFileSizeLimitMB = 1
		env := newEnv(t, e, chartAgent, withChartTool(t, api.URL, limits, &fs), func(_ *apps.App, o *Options) {
			// The API tool's own response cap is above the image limit.
			list, err := openapi.New([]byte(chartAPI), openapi.Options{Provider: "charts", HTTPClient: &http.Client{}, ServerURL: api.URL, MaxResponseBytes: 4 << 20})
			if err != nil {
				t.Fatal(err)
			}
			o.Tools = func(context.Context, tools.Ref) (tools.Tool, error) { return list[0], nil }
		})
		env.upstream.OnEach("big chart", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "draw_chart", Arguments: `{"series": "all"}`}},
		}, openaitest.Reply{Chunks: []string{"Too big."}})
		rn := env.send(t, "a big chart", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 T1t T1to T2 A T2 E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		stored := env.thoughts(t, rn)
		var obs map[string]string
		if err := json.Unmarshal([]byte(stored[0].Observation), &obs); err != nil {
			t.Fatal(err)
		}
		if len(stored[0].Files) != 0 || !strings.Contains(obs["draw_chart"], "was not kept: larger than 1048576 bytes") {
			t.Fatalf("step %+v", stored[0])
		}
		if end := evs[len(evs)-1].End; end.Files != nil {
			t.Fatalf("message_end files %#v, want none", end.Files)
		}
	})
}

// manyFiles is a tool that returns n small text files at each call.
type manyFiles struct{ n int }

func (m manyFiles) Identity() tools.Identity {
	return tools.Identity{Provider: "gen", Name: "many_files", Label: map[string]string{"en_US": "Many files"}}
}
func (manyFiles) Description() string { return "Returns files." }
func (manyFiles) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}
func (m manyFiles) Invoke(context.Context, json.RawMessage) (tools.Result, error) {
	res := tools.Result{Text: "made them"}
	for i := range m.n {
		res.Files = append(res.Files, tools.File{Name: "f.txt", MIMEType: "text/plain", Data: []byte{byte('a' + i%26)}})
	}
	return res, nil
}

// TestToolFilesCapped: an answer keeps at most llm.MaxToolFiles files, over all its steps; the
// model is told of the others, and no event or row is made for them.
func TestToolFilesCapped(t *testing.T) {
	var fs *files.Service
	env := newEnv(t, storetest.NewEngine(t, storetest.SQLite), apps.Agent{Enabled: true, Strategy: "function_call", Tools: []apps.Tool{
		{ProviderType: "builtin", ProviderID: "gen", Name: "many_files", Enabled: true},
	}}, withChartTool(t, "http://127.0.0.1:1", defaultLimits, &fs), func(_ *apps.App, o *Options) {
		o.Tools = func(context.Context, tools.Ref) (tools.Tool, error) { return manyFiles{n: llm.MaxToolFiles - 2}, nil }
	})
	call := openaitest.Reply{ToolCalls: []providers.ToolCall{{Name: "many_files", Arguments: `{}`}}}
	env.upstream.OnEach("lots of files", call, call, openaitest.Reply{Chunks: []string{"Done."}})
	rn := env.send(t, "lots of files", "")
	evs := collect(t, rn)
	n := 0
	for _, e := range evs {
		if e.Kind == run.EventMessageFile {
			n++
		}
	}
	stored := env.thoughts(t, rn)
	mfs, err := env.store.MessageFiles(context.Background(), []string{rn.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if n != llm.MaxToolFiles || len(mfs[rn.MessageID]) != llm.MaxToolFiles || len(stored) != 3 ||
		len(stored[0].Files) != llm.MaxToolFiles-2 || len(stored[1].Files) != 2 {
		t.Fatalf("%d events, %d rows, steps %+v", n, len(mfs[rn.MessageID]), stored)
	}
	if !strings.Contains(stored[1].Observation, "46 files the tool returned were not kept: an answer keeps at most 50") {
		t.Fatalf("observation %s", stored[1].Observation)
	}
	if end := evs[len(evs)-1].End; len(end.Files.([]map[string]any)) != llm.MaxToolFiles {
		t.Fatalf("message_end lists %d files", len(end.Files.([]map[string]any)))
	}
}

// TestReActToolFile: under ReAct too, a tool's image becomes a message file announced between
// the step's action and its observation.
func TestReActToolFile(t *testing.T) {
	pic := chartPNG(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic)
	}))
	t.Cleanup(api.Close)
	var fs *files.Service
	agent := chartAgent
	agent.Strategy = "react"
	env := newEnv(t, storetest.NewEngine(t, storetest.SQLite), agent, withChartTool(t, api.URL, defaultLimits, &fs))
	env.upstream.OnEach("", openaitest.Reply{Chunks: []string{
		"Thought: I draw it.\nAction:\n```json\n{\"action\": \"draw_chart\", \"action_input\": {\"series\": \"sales\"}}\n```",
	}}, openaitest.Reply{Chunks: []string{"Thought: Done.\nAction:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"Here it is.\"}\n```"}})
	rn := env.send(t, "chart the sales", "")
	evs := collect(t, rn)
	if got, want := trace(evs), "T1 A T1t message_file T1to T2 A A E"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	stored := env.thoughts(t, rn)
	mfs, err := env.store.MessageFiles(context.Background(), []string{rn.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || len(stored[0].Files) != 1 || len(mfs[rn.MessageID]) != 1 || stored[0].Files[0] != mfs[rn.MessageID][0].ID {
		t.Fatalf("steps %+v, files %+v", stored, mfs)
	}
}
