package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// extErr is the External Knowledge API's error body.
type extErr struct {
	ErrorCode *int    `json:"error_code"`
	ErrorMsg  *string `json:"error_msg"`
}

// extCall sends an External Knowledge API request to p with the Authorization header auth ("":
// none) and returns the status and body.
func extCall(t *testing.T, p *Parley, auth, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.URL+"/external-knowledge/retrieval", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, raw := rawDo(t, req)
	return resp.StatusCode, raw
}

// wantExtError checks an External Knowledge API error: the status and error_code, and a message.
func wantExtError(t *testing.T, what string, status int, body []byte, wantStatus, wantCode int) {
	t.Helper()
	var e extErr
	if err := json.Unmarshal(body, &e); err != nil || status != wantStatus || e.ErrorCode == nil || *e.ErrorCode != wantCode ||
		e.ErrorMsg == nil || *e.ErrorMsg == "" {
		t.Errorf("%s: %d %s, want %d with error_code %d", what, status, body, wantStatus, wantCode)
	}
}

// TestExternalKnowledge proves Parley's External Knowledge API both ways. Server B serves a
// knowledge base at {B}/v1/external-knowledge; server A registers that endpoint with the CLI
// (B's knowledge-base key in an environment variable of A) and binds an external knowledge base
// to B's, then retrieves from it, answers a chat app's question from it (the answer cites B's
// document and chunk) and exports the app naming it. The spec's errors are checked both ways:
// B's 1001, 1002 and 2001, and A facing an API that refuses, fails, hangs, answers too much or
// answers garbage — each a clear 400 `external_knowledge_request_error`, never a hang.
func TestExternalKnowledge(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, a *Parley) {
		ctx := context.Background()

		// B: the provider, a knowledge base of two documents with metadata.
		b := startParley(t, storetest.SQLite)
		bk := newClient(t, b, b.KnowledgeKey)
		ds := segDataset(t, bk, "Provided handbook", false)
		handbook := indexText(t, bk, ds, client.CreateDocumentByTextJSONRequestBody{Name: "staff handbook", Text: handbookText,
			IndexingTechnique: ptr(client.Economy), ProcessRule: paragraphRule()})
		canteen := indexText(t, bk, ds, client.CreateDocumentByTextJSONRequestBody{Name: "canteen notes",
			Text: "The canteen serves twenty vegetarian dishes every week.", ProcessRule: paragraphRule()})
		status, raw := rawCall(t, b, http.MethodPost, "/datasets/"+ds+"/metadata", `{"type": "string", "name": "team"}`, b.KnowledgeKey)
		var field struct {
			ID string `json:"id"`
		}
		if status != http.StatusCreated || json.Unmarshal(raw, &field) != nil {
			t.Fatalf("metadata field: %d %s", status, raw)
		}
		status, raw = rawCall(t, b, http.MethodPost, "/datasets/"+ds+"/documents/metadata", fmt.Sprintf(`{"operation_data": [
			{"document_id": %q, "metadata_list": [{"id": %q, "name": "team", "value": "hr"}]},
			{"document_id": %q, "metadata_list": [{"id": %q, "name": "team", "value": "facilities"}]}]}`,
			handbook, field.ID, canteen, field.ID), b.KnowledgeKey)
		if status != http.StatusOK {
			t.Fatalf("documents metadata: %d %s", status, raw)
		}

		// B answers the API: the records, and where each comes from.
		query := func(knowledgeID, extra string) string {
			return fmt.Sprintf(`{"knowledge_id": %q, "query": "how many twenty days of paid vacation", "retrieval_setting": {"top_k": 2, "score_threshold": 0.0}%s}`, knowledgeID, extra)
		}
		status, raw = extCall(t, b, "Bearer "+b.KnowledgeKey, query(ds, ""))
		var answer client.ExternalKnowledgeResponse
		if status != http.StatusOK || json.Unmarshal(raw, &answer) != nil || len(answer.Records) == 0 {
			t.Fatalf("B's answer: %d %s", status, raw)
		}
		top := answer.Records[0]
		if top.Title != "staff handbook" || !strings.Contains(top.Content, "twenty days of paid vacation") || top.Score <= 0 ||
			top.Metadata["document_id"] != handbook || top.Metadata["dataset_id"] != ds || top.Metadata["team"] != "hr" {
			t.Fatalf("B's top record %+v", top)
		}
		status, raw = extCall(t, b, "Bearer "+b.KnowledgeKey, query(ds, `, "metadata_condition": {"logical_operator": "and",
			"conditions": [{"name": ["team"], "comparison_operator": "is", "value": "facilities"}]}`))
		if status != http.StatusOK || json.Unmarshal(raw, &answer) != nil || len(answer.Records) != 1 || answer.Records[0].Title != "canteen notes" {
			t.Fatalf("B's filtered answer: %d %s", status, raw)
		}
		// B's errors, as the spec gives them.
		for _, tc := range []struct {
			what, auth, body string
			status, code     int
		}{
			{"no Authorization header", "", query(ds, ""), 403, 1001},
			{"not a bearer token", "Basic " + b.KnowledgeKey, query(ds, ""), 403, 1001},
			{"a bearer without a token", "Bearer ", query(ds, ""), 403, 1001},
			{"a wrong key", "Bearer dataset-not-a-key", query(ds, ""), 403, 1002},
			{"an app key", "Bearer " + b.AppKey, query(ds, ""), 403, 1002},
			{"an unknown knowledge base", "Bearer " + b.KnowledgeKey, query(uuid.NewString(), ""), 404, 2001},
			{"a knowledge id that is no id", "Bearer " + b.KnowledgeKey, query("handbook", ""), 404, 2001},
			{"no retrieval setting", "Bearer " + b.KnowledgeKey, fmt.Sprintf(`{"knowledge_id": %q, "query": "q"}`, ds), 400, 400},
			{"top_k 0", "Bearer " + b.KnowledgeKey, fmt.Sprintf(`{"knowledge_id": %q, "query": "q", "retrieval_setting": {"top_k": 0, "score_threshold": 0}}`, ds), 400, 400},
			{"broken JSON", "Bearer " + b.KnowledgeKey, `{"knowledge_id": `, 400, 400},
		} {
			status, raw := extCall(t, b, tc.auth, tc.body)
			wantExtError(t, tc.what, status, raw, tc.status, tc.code)
		}

		// A: the client. An API registered with the CLI, its key in A's environment.
		wrong := fakeExternalAPI(t)
		apiID := a.CLI(t, "datasets", "external-api", "add", "parley-b", "--endpoint", strings.TrimSuffix(b.URL, "/v1")+"/v1/external-knowledge",
			"--api-key-env", "CONFORMANCE_B_KEY")
		if _, err := uuid.Parse(apiID); err != nil {
			t.Fatalf("external-api add printed %q, not an id alone", apiID)
		}
		wrongKey := a.CLI(t, "datasets", "external-api", "add", "parley-b-wrong-key", "--endpoint", b.URL+"/external-knowledge",
			"--api-key-env", "CONFORMANCE_B_WRONG_KEY")
		flaky := a.CLI(t, "datasets", "external-api", "add", "flaky", "--endpoint", wrong.URL, "--api-key-env", "CONFORMANCE_B_KEY")
		a.Restart(t, "CONFORMANCE_B_KEY="+b.KnowledgeKey, "CONFORMANCE_B_WRONG_KEY=dataset-wrong",
			"PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS=127.0.0.1", "PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT=2s")
		ak := newClient(t, a, a.KnowledgeKey)
		name := "B handbook " + a.engine.Name
		ext := mustDataset(t, ak, client.CreateDatasetJSONRequestBody{Name: name, Provider: ptr(client.CreateDatasetRequestProviderExternal),
			ExternalKnowledgeApiId: &apiID, ExternalKnowledgeId: &ds,
			ExternalRetrievalModel: &client.ExternalRetrievalModel{TopK: ptr(1), ScoreThresholdEnabled: ptr(false)}})
		info := ext.ExternalKnowledgeInfo
		if ext.Provider != "external" || info == nil || *info.ExternalKnowledgeApiId != apiID || *info.ExternalKnowledgeApiName != "parley-b" ||
			*info.ExternalKnowledgeId != ds || !strings.HasSuffix(*info.ExternalKnowledgeApiEndpoint, "/v1/external-knowledge") ||
			ext.ExternalRetrievalModel == nil || *ext.ExternalRetrievalModel.TopK != 1 || ext.IndexingTechnique != nil {
			t.Fatalf("external knowledge base %s", mustJSON(ext))
		}
		extID := ext.Id.String()
		// Its setting changes; it has no documents to list or add.
		up, err := ak.UpdateDatasetWithResponse(ctx, extID, client.UpdateDatasetJSONRequestBody{ExternalRetrievalModel: &client.ExternalRetrievalModel{TopK: ptr(2)}})
		if err != nil || up.JSON200 == nil || *up.JSON200.ExternalRetrievalModel.TopK != 2 || up.JSON200.RetrievalModelDict.TopK != 2 {
			t.Fatalf("update: %v %s", err, up.Body)
		}
		if g, _ := ak.GetDatasetWithResponse(ctx, extID); g.JSON200 == nil || g.JSON200.ExternalKnowledgeInfo == nil {
			t.Fatalf("get: %d %s", g.StatusCode(), g.Body)
		}
		docs, err := ak.ListDocumentsWithResponse(ctx, extID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "documents of an external knowledge base", docs.StatusCode(), docs.Body, 400, "invalid_param")
		status, raw = rawCall(t, a, http.MethodPost, "/datasets/"+extID+"/document/create-by-text", `{"name": "x", "text": "x", "indexing_technique": "economy"}`, a.KnowledgeKey)
		wantError(t, "a document in an external knowledge base", status, raw, 400, "invalid_param")

		// Retrieval on A calls B: B's chunks, cited by B's document and chunk ids.
		q := "how many days of paid vacation does every employee receive"
		rr, err := ak.RetrieveWithResponse(ctx, extID, client.RetrieveJSONRequestBody{Query: &q})
		if err != nil || rr.JSON200 == nil || len(rr.JSON200.Records) == 0 {
			t.Fatalf("retrieve on A: %v %s", err, rr.Body)
		}
		rec := rr.JSON200.Records[0]
		if rec.Title == nil || *rec.Title != "staff handbook" || rec.Content == nil || !strings.Contains(*rec.Content, "twenty days") ||
			rec.Metadata == nil || (*rec.Metadata)["team"] != "hr" || rec.Segment.Document.Id.String() != handbook ||
			rec.Segment.Document.DataSourceType != "external" || rec.Segment.Document.Name != "staff handbook" || rec.Score == nil || *rec.Score <= 0 ||
			rec.Segment.Id.String() != (*rec.Metadata)["segment_id"] {
			t.Fatalf("A's record %s", mustJSON(rec))
		}
		filtered, err := ak.RetrieveWithResponse(ctx, extID, client.RetrieveJSONRequestBody{Query: ptr("twenty days"), MetadataFilteringConditions: &map[string]any{
			"logical_operator": "and", "conditions": []any{map[string]any{"name": "team", "comparison_operator": "is", "value": "facilities"}}}})
		if err != nil || filtered.JSON200 == nil || len(filtered.JSON200.Records) != 1 || *filtered.JSON200.Records[0].Title != "canteen notes" {
			t.Fatalf("filtered retrieve on A: %v %s", err, filtered.Body)
		}

		// A chat app on A, imported from a DSL file that names the external knowledge base,
		// answers from it and cites it.
		appName := "External Desk " + a.engine.Name
		dslPath := filepath.Join(t.TempDir(), "desk.yml")
		if err := os.WriteFile(dslPath, []byte(externalDeskDSL(appName, extID)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := a.cliOut("apps", "import", dslPath); err != nil || strings.Contains(stderr, "unmapped") {
			t.Fatalf("import: %v\n%s", err, stderr)
		}
		if export := a.CLI(t, "apps", "export", appName); !strings.Contains(export, "id: "+name) {
			t.Fatalf("the export does not name the external knowledge base:\n%s", export)
		}
		cc := newClient(t, a, a.CLI(t, "keys", "create", "--app", appName))
		cq := marker(t, q)
		upstream.On(cq, openaitest.Reply{Text: "Twenty days."})
		resp, err := cc.SendChatMessageWithResponse(ctx, nil, client.SendChatMessageJSONRequestBody{Query: cq, User: "reader", Inputs: map[string]any{},
			ResponseMode: ptr(client.Blocking)})
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("chat: %v %s", err, resp.Body)
		}
		rs := resp.JSON200.Metadata.RetrieverResources
		if len(rs) == 0 || rs[0].DatasetId.String() != extID || rs[0].DatasetName != name || rs[0].DocumentId.String() != handbook ||
			rs[0].DocumentName != "staff handbook" || rs[0].DataSourceType == nil || *rs[0].DataSourceType != "external" ||
			!strings.Contains(rs[0].Content, "twenty days of paid vacation") || rs[0].Score <= 0 || rs[0].Position != 1 {
			t.Fatalf("retriever_resources %s", mustJSON(rs))
		}
		found := false
		for _, r := range upstream.Requests() {
			if r.LastUserMessage() == cq && len(r.Messages) > 0 && strings.Contains(r.Messages[0].Text(), "twenty days of paid vacation") {
				found = true
			}
		}
		if !found {
			t.Fatal("the model was not given B's chunk as context")
		}

		// The CLI lists the APIs and will not remove one a knowledge base is bound to.
		if list := a.CLI(t, "datasets", "external-api", "list"); !strings.Contains(list, "parley-b ") || !strings.Contains(list, apiID) {
			t.Fatalf("external-api list:\n%s", list)
		}
		if _, stderr, err := a.cliOut("datasets", "external-api", "remove", "parley-b"); err == nil || !strings.Contains(stderr, "is bound to 1 knowledge base") {
			t.Fatalf("remove of an API in use: %v\n%s", err, stderr)
		}

		// A facing a provider that fails: each a clear 400, within the timeout.
		bound := func(t *testing.T, api, knowledgeID, label string) string {
			d := mustDataset(t, ak, client.CreateDatasetJSONRequestBody{Name: label + " " + a.engine.Name,
				Provider: ptr(client.CreateDatasetRequestProviderExternal), ExternalKnowledgeApiId: &api, ExternalKnowledgeId: &knowledgeID})
			return d.Id.String()
		}
		for _, tc := range []struct {
			what, api, knowledge, mode, want string
		}{
			{"unknown knowledge", apiID, uuid.NewString(), "", "answered HTTP 404 (error 2001: The knowledge does not exist.)"},
			{"wrong key", wrongKey, ds, "", "answered HTTP 403 (error 1002: Authorization failed)"},
			{"server error", flaky, "k", "fail", "answered HTTP 500"},
			{"error body", flaky, "k", "error", "answered error 1002: Authorization failed"},
			{"garbage", flaky, "k", "garbage", "not the External Knowledge API's"},
			{"too large", flaky, "k", "huge", "larger than 8 MiB"},
			{"hangs", flaky, "k", "hang", "did not answer within 2s"},
		} {
			t.Run(tc.what, func(t *testing.T) {
				id := bound(t, tc.api, tc.knowledge, tc.what)
				start := time.Now()
				r, err := ak.RetrieveWithResponse(ctx, id, client.RetrieveJSONRequestBody{Query: ptr(tc.mode + " vacation")})
				if err != nil {
					t.Fatal(err)
				}
				var e apiErr
				_ = json.Unmarshal(r.Body, &e)
				if r.StatusCode() != 400 || e.Code != "external_knowledge_request_error" || !strings.Contains(e.Message, tc.want) ||
					!strings.Contains(e.Message, "External knowledge base ") {
					t.Fatalf("retrieve: %d %s, want a 400 saying %q", r.StatusCode(), r.Body, tc.want)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("the failure took %s", d)
				}
			})
		}

		// A chat whose knowledge base's API fails ends with the same clear error.
		ds2 := bound(t, flaky, "k", "chat flaky")
		flakyApp := "Flaky Desk " + a.engine.Name
		if err := os.WriteFile(dslPath, []byte(externalDeskDSL(flakyApp, ds2)), 0o600); err != nil {
			t.Fatal(err)
		}
		a.CLI(t, "apps", "import", dslPath)
		fc := newClient(t, a, a.CLI(t, "keys", "create", "--app", flakyApp))
		fr, err := fc.SendChatMessageWithResponse(ctx, nil, client.SendChatMessageJSONRequestBody{Query: "fail please", User: "reader",
			Inputs: map[string]any{}, ResponseMode: ptr(client.Blocking)})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "chat with a failing external knowledge base", fr.StatusCode(), fr.Body, 400, "external_knowledge_request_error")
		var sawError bool
		for _, ev := range streamEvents(t, fc, client.SendChatMessageJSONRequestBody{Query: "fail again", User: "reader",
			Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)}) {
			if eventName(t, ev) == "error" {
				e, _ := ev.AsErrorEvent()
				sawError = e.Code == "external_knowledge_request_error" && strings.Contains(e.Message, "answered HTTP 500")
			}
		}
		if !sawError {
			t.Fatal("the stream did not end with the external knowledge error")
		}
	})
}

// externalDeskDSL is a Dify DSL export of a Chatbot app that retrieves from the dataset id and
// cites its sources.
func externalDeskDSL(name, datasetID string) string {
	return fmt.Sprintf(`app: {name: %q, mode: chat}
kind: app
version: 0.6.0
model_config:
  agent_mode: {enabled: false, tools: []}
  dataset_configs:
    retrieval_model: multiple
    datasets: {datasets: [{dataset: {enabled: true, id: %s}}]}
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You answer from the handbook.
  prompt_type: simple
  retriever_resource: {enabled: true}
  user_input_form: []
`, name, datasetID)
}

// fakeExternalAPI is an External Knowledge API that misbehaves as the query asks: "fail" (500),
// "error" (an error body with 200), "garbage", "huge" (more than 8 MiB) or "hang" (no answer
// until the caller gives up).
func fakeExternalAPI(t *testing.T) *httptest.Server {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Query string `json:"query"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mode, _, _ := strings.Cut(body.Query, " ")
		switch mode {
		case "fail":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "error":
			_, _ = io.WriteString(w, `{"error_code": 1002, "error_msg": "Authorization failed"}`)
		case "garbage":
			_, _ = io.WriteString(w, "<html>not json</html>")
		case "huge":
			_, _ = io.WriteString(w, `{"records": [{"content": "`)
			chunk := strings.Repeat("x", 1<<20)
			for range 9 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `", "score": 1, "title": "t", "metadata": {}}]}`)
		case "hang":
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		default:
			_, _ = io.WriteString(w, `{"records": []}`)
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}
