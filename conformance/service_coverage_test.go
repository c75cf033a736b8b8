package conformance

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
)

// difyServiceAPI is every operation of Dify's published Service API (its API reference, app and
// knowledge halves, plus the spellings Dify registers for the same handlers and the operations
// older references publish), as method and path template with Dify's parameter names.
var difyServiceAPI = []string{
	"GET /",
	// Chat and completion.
	"POST /chat-messages", "POST /chat-messages/{task_id}/stop",
	"POST /completion-messages", "POST /completion-messages/{task_id}/stop",
	// Files and end users.
	"POST /files/upload", "GET /files/{file_id}/preview", "GET /end-users/{end_user_id}",
	// Feedback and suggestions.
	"POST /messages/{message_id}/feedbacks", "GET /app/feedbacks", "GET /messages/{message_id}/suggested",
	// Conversations and messages.
	"GET /messages", "GET /conversations", "DELETE /conversations/{conversation_id}",
	"POST /conversations/{conversation_id}/name", "GET /conversations/{conversation_id}/variables",
	"PUT /conversations/{conversation_id}/variables/{variable_id}",
	// Audio.
	"POST /audio-to-text", "POST /text-to-audio",
	// Applications.
	"GET /info", "GET /parameters", "GET /meta", "GET /site",
	// Annotations.
	"GET /apps/annotations", "POST /apps/annotations",
	"PUT /apps/annotations/{annotation_id}", "DELETE /apps/annotations/{annotation_id}",
	"POST /apps/annotation-reply/{action}", "GET /apps/annotation-reply/{action}/status/{job_id}",
	// Workflow runs.
	"POST /workflows/run", "POST /workflows/{workflow_id}/run", "GET /workflows/run/{workflow_run_id}",
	"POST /workflows/tasks/{task_id}/stop", "GET /workflows/logs",
	// Human input.
	"GET /form/human_input/{form_token}", "POST /form/human_input/{form_token}",
	"GET /workflow/{workflow_run_id}/events",
	// Knowledge bases.
	"POST /datasets", "GET /datasets", "GET /datasets/{dataset_id}", "PATCH /datasets/{dataset_id}",
	"DELETE /datasets/{dataset_id}",
	// Documents, with the underscore spellings Dify registers beside the published ones.
	"POST /datasets/{dataset_id}/document/create-by-text", "POST /datasets/{dataset_id}/document/create_by_text",
	"POST /datasets/{dataset_id}/document/create-by-file", "POST /datasets/{dataset_id}/document/create_by_file",
	"POST /datasets/{dataset_id}/documents/{document_id}/update-by-text",
	"POST /datasets/{dataset_id}/documents/{document_id}/update_by_text",
	"POST /datasets/{dataset_id}/documents/{document_id}/update-by-file",
	"POST /datasets/{dataset_id}/documents/{document_id}/update_by_file",
	"GET /datasets/{dataset_id}/documents", "GET /datasets/{dataset_id}/documents/{document_id}",
	"PATCH /datasets/{dataset_id}/documents/{document_id}", "DELETE /datasets/{dataset_id}/documents/{document_id}",
	"GET /datasets/{dataset_id}/documents/{batch}/indexing-status",
	"PATCH /datasets/{dataset_id}/documents/status/{action}",
	"GET /datasets/{dataset_id}/documents/{document_id}/download",
	"POST /datasets/{dataset_id}/documents/download-zip",
	"GET /datasets/{dataset_id}/documents/{document_id}/upload-file",
	// Chunks and child chunks.
	"POST /datasets/{dataset_id}/documents/{document_id}/segments",
	"GET /datasets/{dataset_id}/documents/{document_id}/segments",
	"GET /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}",
	"POST /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}",
	"DELETE /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}",
	"POST /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks",
	"GET /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks",
	"PATCH /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks/{child_chunk_id}",
	"DELETE /datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks/{child_chunk_id}",
	// Retrieval, under both of Dify's names.
	"POST /datasets/{dataset_id}/retrieve", "POST /datasets/{dataset_id}/hit-testing",
	// Metadata.
	"POST /datasets/{dataset_id}/metadata", "GET /datasets/{dataset_id}/metadata",
	"PATCH /datasets/{dataset_id}/metadata/{metadata_id}", "DELETE /datasets/{dataset_id}/metadata/{metadata_id}",
	"GET /datasets/{dataset_id}/metadata/built-in", "POST /datasets/{dataset_id}/metadata/built-in/{action}",
	"POST /datasets/{dataset_id}/documents/metadata",
	// Tags.
	"GET /datasets/tags", "POST /datasets/tags", "PATCH /datasets/tags", "DELETE /datasets/tags",
	"POST /datasets/tags/binding", "POST /datasets/tags/unbinding", "GET /datasets/{dataset_id}/tags",
	// Models.
	"GET /workspaces/current/models/model-types/{model_type}",
	// Knowledge pipeline.
	"POST /datasets/pipeline/file-upload", "GET /datasets/{dataset_id}/pipeline/datasource-plugins",
	"POST /datasets/{dataset_id}/pipeline/datasource/nodes/{node_id}/run", "POST /datasets/{dataset_id}/pipeline/run",
}

// TestDifyServiceAPICovered: the contract declares every operation of Dify's Service API (TestSweep
// then requires each declared operation to succeed).
func TestDifyServiceAPICovered(t *testing.T) {
	c := loadContract(t)
	declared := map[string]bool{}
	for tmpl, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			declared[method+" "+tmpl] = true
		}
	}
	seen := map[string]bool{}
	for _, op := range difyServiceAPI {
		if seen[op] {
			t.Errorf("%s is listed twice", op)
		}
		seen[op] = true
		switch {
		case declared[op]:
		default:
			t.Errorf("Dify's %s is not declared in the contract", op)
		}
	}
}

// TestServiceInfo: the API's root answers, without a key, which API and which server this is.
func TestServiceInfo(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		for what, key := range map[string]string{"no key": "", "an app key": p.AppKey, "a knowledge key": p.KnowledgeKey, "a bad key": "app-nope"} {
			resp, raw := p.getRaw(t, key, "/")
			var info client.ServiceInfo
			if resp.StatusCode != 200 || json.Unmarshal(raw, &info) != nil || info.ApiVersion != client.V1 || info.ServerVersion == "" || info.Welcome == "" {
				t.Errorf("%s: %d %s", what, resp.StatusCode, raw)
			}
		}
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			resp, raw := p.sendRaw(t, method, "", "/", "application/json", []byte(`{}`))
			wantErr(t, method+" /", resp, raw, 405, "method_not_allowed")
		}
	})
}

// TestVersionHeaders: every response, errors, streams and probes included, carries X-Version
// and X-Env as Dify's do (Dify's Go SDK reads X-Version into its errors); the version is the one
// GET / reports, `parley version` and `parley --version` print, and never "dev" in a built binary.
func TestVersionHeaders(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		_, raw := p.getRaw(t, "", "/")
		var info client.ServiceInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatalf("GET /: %v: %s", err, raw)
		}
		if binary != "" {
			if info.ServerVersion == "dev" || info.ServerVersion == "" {
				t.Errorf("server_version of a built binary is %q", info.ServerVersion)
			}
			for _, args := range [][]string{{"version"}, {"--version"}} {
				if got := p.CLI(t, args...); got != info.ServerVersion {
					t.Errorf("parley %s prints %q, GET / says %q", args[0], got, info.ServerVersion)
				}
			}
		}
		check := func(what string, resp *http.Response) {
			t.Helper()
			if got := resp.Header.Get("X-Version"); got != info.ServerVersion {
				t.Errorf("%s: X-Version %q, want %q", what, got, info.ServerVersion)
			}
			if got := resp.Header.Get("X-Env"); binary != "" && got != "PRODUCTION" {
				t.Errorf("%s: X-Env %q, want PRODUCTION (the default DEPLOY_ENV)", what, got)
			}
		}
		resp, _ := p.getRaw(t, "", "/")
		check("GET /", resp)
		resp, _ = p.getRaw(t, "", "/parameters")
		check("401", resp)
		resp, _ = p.getRaw(t, p.AppKey, "/no-such-operation")
		check("404", resp)
		resp, _ = p.getRaw(t, p.AppKey, "/parameters")
		check("GET /parameters", resp)
		resp, _ = p.sendRaw(t, http.MethodPost, p.AppKey, "/chat-messages", "application/json",
			[]byte(`{"query": "Hi", "inputs": {"tone": "dry"}, "user": "version-user", "response_mode": "streaming"}`))
		check("a stream", resp)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("the chat was not streamed: %s", resp.Header.Get("Content-Type"))
		}
		base := strings.TrimSuffix(p.URL, "/v1")
		probe, err := http.Get(base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		probe.Body.Close()
		check("GET /health", probe)
	})
}

// TestDocumentUploadFile: older Dify's upload-file names a document's original file with a link
// to view it and one to download it; unknown or foreign documents and wrong keys are refused.
func TestDocumentUploadFile(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		kc := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, kc, "upload-file", false)
		other := segDataset(t, kc, "upload-file other", false)
		before := time.Now().Add(-time.Minute)
		text, _ := addText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: "notes", Text: "Alpha text.", ProcessRule: &client.ProcessRule{Mode: "automatic"}})
		md := kdCreateFile(t, kc, ds, "beta.md", []byte("# Beta\n\nMarkdown."), `{"process_rule":{"mode":"automatic"}}`).Document.Id.String()
		foreign, _ := addText(t, kc, other, client.CreateDocumentByTextJSONRequestBody{Name: "foreign", Text: "Foreign.", ProcessRule: &client.ProcessRule{Mode: "automatic"}})

		for _, tc := range []struct {
			doc, name, ext, mime, content string
		}{
			{text, "notes", "txt", "text/plain", "Alpha text."},
			{md, "beta.md", "md", "text/markdown", "# Beta\n\nMarkdown."},
		} {
			resp, raw := p.getRaw(t, p.KnowledgeKey, "/datasets/"+ds+"/documents/"+tc.doc+"/upload-file")
			var f client.DocumentUploadFile
			if resp.StatusCode != 200 || json.Unmarshal(raw, &f) != nil {
				t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, raw)
			}
			created := time.UnixMicro(int64(f.CreatedAt * 1e6))
			if f.Name != tc.name || f.Extension != tc.ext || !strings.HasPrefix(f.MimeType, tc.mime) || f.Size != int64(len(tc.content)) ||
				f.Id == "" || created.Before(before) || created.After(time.Now().Add(time.Minute)) {
				t.Errorf("%s: %s", tc.name, raw)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(raw, &members); err != nil || !strings.Contains(string(members["created_at"]), ".") {
				t.Errorf("%s: created_at %s is not seconds with a fraction", tc.name, members["created_at"])
			}
			resp, body := p.getRaw(t, "", relLink(t, f.Url))
			if resp.StatusCode != 200 || string(body) != tc.content || strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
				t.Errorf("%s url: %d %q %q", tc.name, resp.StatusCode, body, resp.Header.Get("Content-Disposition"))
			}
			resp, body = p.getRaw(t, "", relLink(t, f.DownloadUrl))
			if resp.StatusCode != 200 || string(body) != tc.content || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
				t.Errorf("%s download_url: %d %q %q", tc.name, resp.StatusCode, body, resp.Header.Get("Content-Disposition"))
			}
			if u, err := url.Parse(f.DownloadUrl); err != nil || u.Query().Get("as_attachment") != "true" {
				t.Errorf("%s download_url %q has no as_attachment=true", tc.name, f.DownloadUrl)
			}
		}

		for what, path := range map[string]string{
			"unknown document":         "/datasets/" + ds + "/documents/" + uuid.NewString() + "/upload-file",
			"malformed document":       "/datasets/" + ds + "/documents/x/upload-file",
			"another dataset's":        "/datasets/" + ds + "/documents/" + foreign + "/upload-file",
			"unknown dataset":          "/datasets/" + uuid.NewString() + "/documents/" + text + "/upload-file",
			"malformed dataset, known": "/datasets/zzz/documents/" + text + "/upload-file",
		} {
			resp, raw := p.getRaw(t, p.KnowledgeKey, path)
			wantErr(t, what, resp, raw, 404, "not_found")
		}
		for what, key := range map[string]string{"no key": "", "an app key": p.AppKey, "an unknown key": "dataset-nope"} {
			resp, raw := p.getRaw(t, key, "/datasets/"+ds+"/documents/"+text+"/upload-file")
			wantErr(t, what, resp, raw, 401, "unauthorized")
		}
		resp, raw := p.sendRaw(t, http.MethodPost, p.KnowledgeKey, "/datasets/"+ds+"/documents/"+text+"/upload-file", "application/json", []byte(`{}`))
		wantErr(t, "POST", resp, raw, 405, "method_not_allowed")
	})
}
