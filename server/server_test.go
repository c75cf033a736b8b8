package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/configs"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/store"
)

// fixture is a whole server over a fresh SQLite store, with one key of each kind.
type fixture struct {
	e             *echo.Echo
	srv           *Server
	st            *store.Store
	appID         string
	appKey, kbKey string
}

func newFixture(tb testing.TB, mode ValidationMode) *fixture {
	tb.Helper()
	return newFixtureLogging(tb, mode, io.Discard)
}

// newFixtureLogging is newFixture with the server's JSON log written to logs.
func newFixtureLogging(tb testing.TB, mode ValidationMode, logs io.Writer) *fixture {
	tb.Helper()
	ctx := context.Background()
	getenv := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-test"
		}
		return ""
	}
	file, err := config.ParseFile(configs.Sample, getenv)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(ctx, "", tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	specs := make([]store.AppSpec, len(file.Apps))
	for i, a := range file.Apps {
		specs[i] = store.AppSpec{Name: a.Name, Mode: a.Mode}
	}
	synced, err := st.SyncApps(ctx, specs)
	if err != nil {
		tb.Fatal(err)
	}
	ws, err := st.Workspace(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	keys := auth.New(st)
	tb.Cleanup(keys.Close)
	appKey, _, err := keys.Create(ctx, auth.KindApp, synced["chatbot"].ID)
	if err != nil {
		tb.Fatal(err)
	}
	kbKey, _, err := keys.Create(ctx, auth.KindKnowledge, "")
	if err != nil {
		tb.Fatal(err)
	}
	ids := map[string]string{}
	for name, a := range synced {
		ids[name] = a.ID
	}
	registry, err := apps.NewRegistry(file.Apps, ids, func(n int) int { return n })
	if err != nil {
		tb.Fatal(err)
	}
	e, srv, err := New(Options{
		Keys: keys, Catalog: models.NewCatalog(file.Providers, getenv), TenantID: ws.ID, Apps: registry,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), Validation: mode,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return &fixture{e: e, srv: srv, st: st, appID: synced["chatbot"].ID, appKey: appKey, kbKey: kbKey}
}

func (f *fixture) do(method, path, key, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	f.e.ServeHTTP(rec, req)
	return rec
}

func decodeErr(t *testing.T, rec *httptest.ResponseRecorder) (code, message string) {
	t.Helper()
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Status  int    `json:"status"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	if e.Status != rec.Code {
		t.Fatalf("body status %d != HTTP %d", e.Status, rec.Code)
	}
	return e.Code, e.Message
}

func TestModelsListingFromSampleConfig(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	rec := f.do("GET", "/v1/workspaces/current/models/model-types/text-embedding", f.kbKey, "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got struct {
		Data []struct {
			Provider string `json:"provider"`
			Models   []struct {
				Model           string         `json:"model"`
				ModelProperties map[string]any `json:"model_properties"`
				Features        *[]string      `json:"features"`
			} `json:"models"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 1 || got.Data[0].Provider != "openai" || len(got.Data[0].Models) != 1 {
		t.Fatalf("listing: %s", rec.Body)
	}
	m := got.Data[0].Models[0]
	if m.Model != "text-embedding-3-small" || m.ModelProperties["context_size"] != float64(8191) || m.Features != nil {
		t.Fatalf("model: %+v", m)
	}
	if f.srv.Violations() != 0 {
		t.Fatalf("%d contract violations", f.srv.Violations())
	}
}

// TestDifyClientQuirksPassValidation sends what Dify's SDKs really send through the whole chat
// stack: request validation stays on and must not reject them.
func TestDifyClientQuirksPassValidation(t *testing.T) {
	h, key, _ := chatStack(t, ValidationEnforce)
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for name, body := range map[string]string{
		"files null (Node and Python SDKs)": `{"inputs":{},"query":"hi","user":"u","response_mode":"blocking","files":null}`,
		"extra members":                     `{"inputs":{"name":"x"},"query":"hi","user":"u","retriever_from":"dev","unknown":1}`,
		"empty conversation_id":             `{"inputs":{},"query":"hi","user":"u","conversation_id":""}`,
		"null response_mode":                `{"inputs":{},"query":"hi","user":"u","response_mode":null}`,
		"remote file":                       `{"inputs":{},"query":"hi","user":"u","files":[{"type":"image","transfer_method":"remote_url","url":"https://example.com/a.png"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := do("POST", "/v1/chat-messages", body)
			if rec.Code == http.StatusBadRequest {
				code, msg := decodeErr(t, rec)
				t.Fatalf("rejected: %s %s", code, msg)
			}
		})
	}
	// The JSON body on DELETE that both SDKs send.
	rec := do("DELETE", "/v1/conversations/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11", `{"user":"u"}`)
	if rec.Code == http.StatusBadRequest {
		t.Fatalf("DELETE with JSON body rejected: %s", rec.Body)
	}
}

// TestEnforceReplacesViolatingJSON proves the response validator can fail: a handler that
// breaks the contract is turned into a 500 in enforce mode and passed through in log mode.
func TestEnforceReplacesViolatingJSON(t *testing.T) {
	for _, mode := range []ValidationMode{ValidationEnforce, ValidationLog} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t, mode)
			// Replace the models listing with one that omits required members.
			f.e.GET("/v1/workspaces/current/models/model-types/:model_type", func(c echo.Context) error {
				return c.JSON(http.StatusOK, map[string]any{"data": []any{map[string]any{"provider": "x"}}})
			})
			rec := f.do("GET", "/v1/workspaces/current/models/model-types/llm", f.kbKey, "", "")
			if f.srv.Violations() != 1 {
				t.Fatalf("violations = %d, want 1", f.srv.Violations())
			}
			switch mode {
			case ValidationEnforce:
				if rec.Code != http.StatusInternalServerError {
					t.Fatalf("status %d, want 500", rec.Code)
				}
				if code, _ := decodeErr(t, rec); code != "internal_server_error" {
					t.Fatalf("code %q", code)
				}
			case ValidationLog:
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"provider":"x"`) {
					t.Fatalf("log mode changed the response: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestEnforceEndsViolatingStream streams two valid events and one invalid one: in enforce mode
// the invalid one is replaced by an `error` event, the producer's write fails, and nothing more
// is sent.
func TestEnforceEndsViolatingStream(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	const env = `"conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22"`
	var writeErr error
	f.e.POST("/v1/chat-messages", func(c echo.Context) error {
		c.Response().Header().Set("Content-Type", "text/event-stream")
		c.Response().WriteHeader(http.StatusOK)
		for _, frame := range []string{
			"event: ping\n\n",
			`data: {"event":"message",` + env + `,"answer":"Hel"}` + "\n\n",
			`data: {"event":"message",` + env + `}` + "\n\n", // no answer
			`data: {"event":"message_end",` + env + `,"metadata":{}}` + "\n\n",
		} {
			if _, err := c.Response().Write([]byte(frame)); err != nil {
				writeErr = err
				return nil
			}
			c.Response().Flush()
		}
		return nil
	})
	rec := f.do("POST", "/v1/chat-messages", f.appKey, "application/json", `{"query":"hi","inputs":{},"user":"u"}`)
	body := rec.Body.String()
	frames := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if len(frames) != 3 {
		t.Fatalf("frames: %q", frames)
	}
	// The error event keeps the offending event's envelope and carries the Error body's members.
	want := `data: {"event":"error","conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,` +
		`"code":"internal_server_error","message":"The response violated the API contract.","status":500}`
	if frames[2] != want {
		t.Fatalf("last frame\n got %s\nwant %s", frames[2], want)
	}
	if err := f.srv.validator.CheckEvent("sendChatMessage", []byte(frames[2])); err != nil {
		t.Fatalf("the error event breaks the contract itself: %v", err)
	}
	if writeErr == nil {
		t.Fatal("the producer was not told to stop")
	}
	if f.srv.Violations() != 1 {
		t.Fatalf("violations = %d", f.srv.Violations())
	}
}
