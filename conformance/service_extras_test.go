package conformance

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// getRaw sends a GET with the key ("" for none) over the contract-checking client and returns
// the response (body read) and its body.
func (p *Parley) getRaw(t *testing.T, key, path string) (*http.Response, []byte) {
	t.Helper()
	return p.sendRaw(t, http.MethodGet, key, path, "", nil)
}

func (p *Parley) sendRaw(t *testing.T, method, key, path, contentType string, body []byte) (*http.Response, []byte) {
	t.Helper()
	target := p.URL + path
	if strings.HasPrefix(path, "/v1/") {
		// A link from the server's root, as signed links are.
		base, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := url.Parse(path)
		if err != nil {
			t.Fatal(err)
		}
		target = base.ResolveReference(ref).String()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return rawDo(t, req)
}

// wantErr checks an error answer's status and code, and that it is the Error body with a message.
func wantErr(t *testing.T, what string, resp *http.Response, raw []byte, status int, code string) {
	t.Helper()
	segErr(t, what, resp.StatusCode, raw, status, code, "")
	if e := (apiErr{}); json.Unmarshal(raw, &e) == nil && e.Message == "" {
		t.Errorf("%s: error without a message: %s", what, raw)
	}
}

// relLink is a signed link as a path from the server's root.
func relLink(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/v1/files/") {
		t.Fatalf("link %q: %v", link, err)
	}
	return u.RequestURI()
}

// TestEndUsersAndSite: an end user is found by id within its app only; the site shows the app.
func TestEndUsersAndSite(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		_, f, e := p.upload(t, hc, part{field: "file", filename: "eu.png", contentType: "image/png", data: pngBytes(t)},
			part{field: "user", data: []byte("eve-endusers")})
		if f.CreatedBy == "" {
			t.Fatalf("upload: %+v", e)
		}
		resp, raw := p.getRaw(t, p.AppKey, "/end-users/"+f.CreatedBy)
		var eu client.EndUser
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &eu) != nil {
			t.Fatalf("end user: %d %s", resp.StatusCode, raw)
		}
		if eu.Id.String() != f.CreatedBy || eu.SessionId != "eve-endusers" || eu.ExternalUserId == nil ||
			*eu.ExternalUserId != "eve-endusers" || eu.IsAnonymous || eu.Type != "service-api" || eu.TenantId == "" || eu.Name != nil {
			t.Errorf("end user = %s", raw)
		}
		// Timestamps are ISO 8601 strings here, as in Dify.
		if !bytes.Contains(raw, []byte(`"created_at":"`)) {
			t.Errorf("created_at is not a string: %s", raw)
		}

		// The anonymous end user of an upload without `user`.
		_, anon, _ := p.upload(t, hc, part{field: "file", filename: "anon.png", contentType: "image/png", data: pngBytes(t)})
		if resp, raw := p.getRaw(t, p.AppKey, "/end-users/"+anon.CreatedBy); resp.StatusCode != 200 || !bytes.Contains(raw, []byte(`"is_anonymous":true`)) {
			t.Errorf("anonymous end user: %d %s", resp.StatusCode, raw)
		}

		for what, id := range map[string]string{"unknown": uuid.NewString(), "malformed": "not-an-id", "long": strings.Repeat("7", 300)} {
			resp, raw := p.getRaw(t, p.AppKey, "/end-users/"+id)
			wantErr(t, what+" end user", resp, raw, 404, "end_user_not_found")
		}
		// Another app's key does not reach this app's end user.
		resp, raw = p.getRaw(t, p.CompletionKey(t), "/end-users/"+f.CreatedBy)
		wantErr(t, "another app's end user", resp, raw, 404, "end_user_not_found")
		resp, raw = p.getRaw(t, p.KnowledgeKey, "/end-users/"+f.CreatedBy)
		wantErr(t, "knowledge key", resp, raw, 401, "unauthorized")

		var site client.Site
		resp, raw = p.getRaw(t, p.AppKey, "/site?user=eve-endusers")
		if resp.StatusCode != 200 || json.Unmarshal(raw, &site) != nil {
			t.Fatalf("site: %d %s", resp.StatusCode, raw)
		}
		var info client.AppInfo
		p.getJSON(t, p.AppKey, "/info", &info)
		if site.Title != info.Name || site.DefaultLanguage != "en-US" || !site.ShowWorkflowSteps || site.Copyright != nil {
			t.Errorf("site = %s (app %q)", raw, info.Name)
		}
		for _, member := range []string{`"chat_color_theme":null`, `"privacy_policy":null`, `"custom_disclaimer":""`, `"input_placeholder":null`} {
			if !bytes.Contains(raw, []byte(member)) {
				t.Errorf("site lacks %s: %s", member, raw)
			}
		}
	})
}

// TestFilePreview: an upload is served to its end user only, with its type, never sniffed and
// never rendered when it is a page; its signed link serves it without a key until it is
// tampered with; history lists message files with all nine members and a link that loads.
func TestFilePreview(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		img := pngBytes(t)
		page := []byte("<html><script>alert(document.cookie)</script></html>")
		_, png, e := p.upload(t, hc, part{field: "file", filename: "dot.png", contentType: "image/png", data: img},
			part{field: "user", data: []byte("pia")})
		_, html, e2 := p.upload(t, hc, part{field: "file", filename: "page.html", contentType: "text/html", data: page},
			part{field: "user", data: []byte("pia")})
		if png.CreatedBy == "" || html.CreatedBy == "" {
			t.Fatalf("uploads: %+v %+v", e, e2)
		}
		// The upload answer has current Dify's members: a signed source_url, the tenant, nulls.
		if png.SourceUrl == nil || png.TenantId == "" || png.PreviewUrl != nil || png.Reference != nil || png.ConversationId != nil {
			t.Errorf("upload members: %+v", png)
		}

		preview := func(id, query string) (*http.Response, []byte) {
			return p.getRaw(t, p.AppKey, "/files/"+id+"/preview"+query)
		}
		resp, raw := preview(png.Id.String(), "?user=pia")
		if resp.StatusCode != 200 || !bytes.Equal(raw, img) || resp.Header.Get("Content-Type") != "image/png" ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "inline") ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("preview png: %d %q %q %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("X-Content-Type-Options"), resp.Header.Get("Content-Disposition"), len(raw))
		}
		resp, _ = preview(png.Id.String(), "?user=pia&as_attachment=true")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("as_attachment: %d %q", resp.StatusCode, resp.Header.Get("Content-Disposition"))
		}
		// A page is a download, whatever is asked.
		resp, raw = preview(html.Id.String(), "?user=pia&as_attachment=false")
		if resp.StatusCode != 200 || !bytes.Equal(raw, page) || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("preview html: %d %q", resp.StatusCode, resp.Header.Get("Content-Disposition"))
		}

		for what, q := range map[string]string{
			"another user's file":  png.Id.String() + "/preview?user=mallory",
			"no user":              png.Id.String() + "/preview",
			"unknown id":           uuid.NewString() + "/preview?user=pia",
			"malformed id":         "..%2F..%2Fetc/preview?user=pia",
			"not an id":            "dot.png/preview?user=pia",
			"bad as_attachment":    png.Id.String() + "/preview?user=pia&as_attachment=maybe",
			"another app's key":    png.Id.String() + "/preview?user=pia&app=writer",
			"knowledge key":        png.Id.String() + "/preview?user=pia&key=knowledge",
			"tool route, no links": "tools/" + png.Id.String() + ".png",
		} {
			key := p.AppKey
			switch {
			case strings.Contains(q, "app=writer"):
				key = p.CompletionKey(t)
			case strings.Contains(q, "key=knowledge"):
				key = p.KnowledgeKey
			}
			resp, raw := p.getRaw(t, key, "/files/"+q)
			switch what {
			case "bad as_attachment", "tool route, no links":
				if resp.StatusCode != 400 {
					t.Errorf("%s: %d %s, want 400", what, resp.StatusCode, raw)
				}
			case "knowledge key":
				wantErr(t, what, resp, raw, 401, "unauthorized")
			case "malformed id":
				if resp.StatusCode != 404 {
					t.Errorf("%s: %d %s, want 404", what, resp.StatusCode, raw)
				}
			default:
				wantErr(t, what, resp, raw, 404, "file_not_found")
			}
		}

		// The signed link needs no key; a tampered or foreign one is refused before any lookup.
		link := relLink(t, *png.SourceUrl)
		resp, raw = p.getRaw(t, "", link)
		if resp.StatusCode != 200 || !bytes.Equal(raw, img) || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("signed link: %d %d bytes", resp.StatusCode, len(raw))
		}
		u, _ := url.Parse(link)
		q := u.Query()
		for what, mutate := range map[string]func(url.Values, *url.URL){
			"other file":    func(_ url.Values, u *url.URL) { u.Path = "/v1/files/" + html.Id.String() + "/file-preview" },
			"other nonce":   func(q url.Values, _ *url.URL) { q.Set("nonce", "0000") },
			"no signature":  func(q url.Values, _ *url.URL) { q.Del("sign") },
			"old timestamp": func(q url.Values, _ *url.URL) { q.Set("timestamp", "1000") },
		} {
			v, uu := url.Values{}, *u
			for k, vs := range q {
				v[k] = append([]string(nil), vs...)
			}
			mutate(v, &uu)
			uu.RawQuery = v.Encode()
			resp, raw := p.getRaw(t, "", uu.RequestURI())
			if what == "no signature" {
				wantErr(t, what, resp, raw, 400, "invalid_param")
				continue
			}
			wantErr(t, what, resp, raw, 403, "forbidden")
		}

		// History: a message with the upload lists it with its name, type, size and a link.
		remoteSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(img)
		}))
		defer remoteSrv.Close()
		c := newClient(t, p, p.AppKey)
		query := marker(t, "preview history")
		upstream.On(query, openaitest.Reply{Text: "Two dots."})
		body := chatBody(query, "pia", false)
		upID, remoteURL := png.Id.String(), remoteSrv.URL+"/pics/cat.png"
		body.Files = &[]client.FileReference{
			{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodLocalFile, UploadFileId: &upID},
			{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodRemoteUrl, Url: &remoteURL},
		}
		r, err := c.SendChatMessageWithResponse(context.Background(), nil, body)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("chat with files: %v %s", err, r.Body)
		}
		resp, raw = p.getRaw(t, p.AppKey, "/messages?user=pia&conversation_id="+r.JSON200.ConversationId.String())
		var h struct {
			Data []struct {
				MessageFiles []map[string]any `json:"message_files"`
			} `json:"data"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(raw, &h) != nil || len(h.Data) != 1 || len(h.Data[0].MessageFiles) != 2 {
			t.Fatalf("history: %d %s", resp.StatusCode, raw)
		}
		for _, mf := range h.Data[0].MessageFiles {
			for _, k := range []string{"id", "filename", "type", "url", "mime_type", "size", "transfer_method", "belongs_to", "upload_file_id"} {
				if _, ok := mf[k]; !ok {
					t.Errorf("message file lacks %s: %v", k, mf)
				}
			}
		}
		local, remote := h.Data[0].MessageFiles[0], h.Data[0].MessageFiles[1]
		if local["filename"] != "dot.png" || local["mime_type"] != "image/png" || local["size"] != float64(len(img)) {
			t.Errorf("local message file: %v", local)
		}
		if remote["filename"] != "cat.png" || remote["url"] != remoteURL || remote["mime_type"] != nil || remote["size"] != nil {
			t.Errorf("remote message file: %v", remote)
		}
		if resp, raw := p.getRaw(t, "", relLink(t, local["url"].(string))); resp.StatusCode != 200 || !bytes.Equal(raw, img) {
			t.Errorf("history link: %d %d bytes", resp.StatusCode, len(raw))
		}
	})
}

// TestDocumentDownloads: a document's original file through a signed link, several as one ZIP,
// and the refusals.
func TestDocumentDownloads(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		kc := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, kc, "downloads", false)
		other := segDataset(t, kc, "downloads other", false)
		text := func(s string) client.CreateDocumentByTextJSONRequestBody {
			return client.CreateDocumentByTextJSONRequestBody{Name: "notes", Text: s, ProcessRule: &client.ProcessRule{Mode: "automatic"}}
		}
		a, _ := addText(t, kc, ds, text("Alpha text."))
		b := kdCreateFile(t, kc, ds, "notes.md", []byte("# Beta\n\nMarkdown."), `{"process_rule":{"mode":"automatic"}}`).Document.Id.String()
		foreign, _ := addText(t, kc, other, text("Foreign."))

		resp, raw := p.getRaw(t, p.KnowledgeKey, "/datasets/"+ds+"/documents/"+a+"/download")
		var dl client.DocumentDownload
		if resp.StatusCode != 200 || json.Unmarshal(raw, &dl) != nil {
			t.Fatalf("download: %d %s", resp.StatusCode, raw)
		}
		resp, raw = p.getRaw(t, "", relLink(t, dl.Url))
		if resp.StatusCode != 200 || string(raw) != "Alpha text." || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
			!strings.Contains(resp.Header.Get("Content-Disposition"), "notes") || strings.Contains(resp.Header.Get("Content-Disposition"), ".txt") {
			t.Errorf("downloaded: %d %q %q", resp.StatusCode, raw, resp.Header.Get("Content-Disposition"))
		}
		for what, path := range map[string]string{
			"unknown document":         "/datasets/" + ds + "/documents/" + uuid.NewString() + "/download",
			"malformed document":       "/datasets/" + ds + "/documents/x/download",
			"another dataset's":        "/datasets/" + ds + "/documents/" + foreign + "/download",
			"unknown dataset":          "/datasets/" + uuid.NewString() + "/documents/" + a + "/download",
			"malformed dataset, known": "/datasets/zzz/documents/" + a + "/download",
		} {
			resp, raw := p.getRaw(t, p.KnowledgeKey, path)
			wantErr(t, what, resp, raw, 404, "not_found")
		}

		zipOf := func(ids ...string) (*http.Response, []byte) {
			body, _ := json.Marshal(map[string]any{"document_ids": ids})
			return p.sendRaw(t, http.MethodPost, p.KnowledgeKey, "/datasets/"+ds+"/documents/download-zip", "application/json", body)
		}
		resp, raw = zipOf(a, b, a)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" {
			t.Fatalf("zip: %d %s", resp.StatusCode, raw)
		}
		zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			t.Fatalf("zip: %v", err)
		}
		got := map[string]string{}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(rc)
			rc.Close()
			got[f.Name] = string(data)
		}
		if want := map[string]string{"notes": "Alpha text.", "notes.md": "# Beta\n\nMarkdown."}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("zip entries = %q, want %q", got, want)
		}

		over := make([]string, 101)
		for i := range over {
			over[i] = a
		}
		for what, ids := range map[string][]string{"over the bound": over, "empty": {}} {
			resp, raw := zipOf(ids...)
			wantErr(t, "zip "+what, resp, raw, 400, "invalid_param")
		}
		resp, raw = zipOf(a, uuid.NewString())
		wantErr(t, "zip with an unknown document", resp, raw, 404, "not_found")
		resp, raw = zipOf(a, foreign)
		wantErr(t, "zip with another dataset's document", resp, raw, 404, "not_found")
		resp, raw = p.sendRaw(t, http.MethodPost, p.KnowledgeKey, "/datasets/"+ds+"/documents/download-zip", "application/json", []byte(`{"document_ids": "x"}`))
		wantErr(t, "zip ids not a list", resp, raw, 400, "invalid_param")
	})
}

// TestKnowledgePipeline: the built-in pipeline indexes uploaded files as documents, and
// everything it does not have is a 400 naming it.
func TestKnowledgePipeline(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		kc := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, kc, "pipeline", false)

		upload := func(parts ...part) (*http.Response, []byte) {
			body, ct := formBody(parts...)
			return p.sendRaw(t, http.MethodPost, p.KnowledgeKey, "/datasets/pipeline/file-upload", ct, body)
		}
		resp, raw := upload(part{field: "file", filename: "handbook.md", contentType: "text/markdown", data: []byte("# Leave\n\nThirty days of leave.")})
		var up client.PipelineUploadedFile
		if resp.StatusCode != 201 || json.Unmarshal(raw, &up) != nil || up.Name != "handbook.md" || up.Extension != "md" {
			t.Fatalf("pipeline upload: %d %s", resp.StatusCode, raw)
		}
		if !bytes.Contains(raw, []byte(`"created_at":"`)) {
			t.Errorf("created_at is not an ISO string: %s", raw)
		}
		resp, raw = upload(part{field: "file", filename: "tool.exe", contentType: "application/octet-stream", data: []byte("MZ")})
		wantErr(t, "unreadable type", resp, raw, 415, "unsupported_file_type")
		resp, raw = upload(part{field: "user", data: []byte("x")})
		wantErr(t, "no file", resp, raw, 400, "no_file_uploaded")
		resp, raw = upload(part{field: "file", filename: "a.txt", data: []byte("a")}, part{field: "file", filename: "b.txt", data: []byte("b")})
		wantErr(t, "two files", resp, raw, 400, "too_many_files")

		resp, raw = p.getRaw(t, p.KnowledgeKey, "/datasets/"+ds+"/pipeline/datasource-plugins?is_published=true")
		var srcs []client.PipelineDatasource
		if resp.StatusCode != 200 || json.Unmarshal(raw, &srcs) != nil || len(srcs) != 1 || srcs[0].DatasourceType != "local_file" || srcs[0].NodeId != "local_file" {
			t.Fatalf("datasources: %d %s", resp.StatusCode, raw)
		}
		resp, raw = p.getRaw(t, p.KnowledgeKey, "/datasets/"+uuid.NewString()+"/pipeline/datasource-plugins")
		wantErr(t, "datasources of an unknown dataset", resp, raw, 404, "not_found")

		post := func(path, body string) (*http.Response, []byte) {
			return p.sendRaw(t, http.MethodPost, p.KnowledgeKey, path, "application/json", []byte(body))
		}
		for what, c := range map[string]struct{ node, body string }{
			"local file":      {"local_file", `{"inputs":{},"datasource_type":"local_file"}`},
			"online document": {"notion", `{"inputs":{},"datasource_type":"online_document","credential_id":"c1"}`},
		} {
			resp, raw := post("/datasets/"+ds+"/pipeline/datasource/nodes/"+c.node+"/run", c.body)
			wantErr(t, "node run, "+what, resp, raw, 400, "invalid_param")
		}
		resp, raw = post("/datasets/"+uuid.NewString()+"/pipeline/datasource/nodes/local_file/run", `{"inputs":{},"datasource_type":"local_file"}`)
		wantErr(t, "node run of an unknown dataset", resp, raw, 404, "not_found")

		run := func(mut func(map[string]any)) (*http.Response, []byte) {
			body := map[string]any{"inputs": map[string]any{"process_rule": map[string]any{"mode": "automatic"}}, "datasource_type": "local_file",
				"datasource_info_list": []any{map[string]any{"reference": up.Id.String(), "name": "Leave handbook.md"}},
				"start_node_id":        "local_file", "is_published": true, "response_mode": "blocking"}
			if mut != nil {
				mut(body)
			}
			b, _ := json.Marshal(body)
			return post("/datasets/"+ds+"/pipeline/run", string(b))
		}
		for what, mut := range map[string]func(map[string]any){
			"streaming":          func(b map[string]any) { b["response_mode"] = "streaming" },
			"website crawl":      func(b map[string]any) { b["datasource_type"] = "website_crawl" },
			"another start node": func(b map[string]any) { b["start_node_id"] = "1750000000000" },
			"unknown reference": func(b map[string]any) {
				b["datasource_info_list"] = []any{map[string]any{"reference": uuid.NewString()}}
			},
			"malformed reference": func(b map[string]any) { b["datasource_info_list"] = []any{map[string]any{"reference": "../x"}} },
			"no files":            func(b map[string]any) { b["datasource_info_list"] = []any{} },
			"bad process rule": func(b map[string]any) {
				b["inputs"] = map[string]any{"process_rule": map[string]any{"mode": "sideways"}}
			},
		} {
			resp, raw := run(mut)
			wantErr(t, "pipeline run, "+what, resp, raw, 400, "invalid_param")
		}
		// An app's upload is not a pipeline file.
		_, appFile, _ := p.upload(t, newContractClient(t), part{field: "file", filename: "app.txt", contentType: "text/plain", data: []byte("app")})
		resp, raw = run(func(b map[string]any) {
			b["datasource_info_list"] = []any{map[string]any{"reference": appFile.Id.String()}}
		})
		wantErr(t, "pipeline run of an app's upload", resp, raw, 400, "invalid_param")

		resp, raw = run(nil)
		var res client.PipelineRunResult
		if resp.StatusCode != 200 || json.Unmarshal(raw, &res) != nil || res.Data.Status != "succeeded" || len(res.Data.Outputs.Documents) != 1 {
			t.Fatalf("pipeline run: %d %s", resp.StatusCode, raw)
		}
		doc := res.Data.Outputs.Documents[0]
		if doc.Name != "Leave handbook.md" || doc.DataSourceInfo.UploadFileId == nil || *doc.DataSourceInfo.UploadFileId != up.Id.String() {
			t.Errorf("pipeline document: %+v", doc)
		}
		kdCompleted(t, kc, ds, res.Data.Outputs.Batch)
		if rec := retrieve(t, kc, ds, "leave", nil); len(rec.Records) == 0 || !strings.Contains(rec.Records[0].Segment.Content, "Thirty days") {
			t.Errorf("retrieve after the pipeline: %+v", rec)
		}
	})
}

// TestWireGaps pins the members a Dify client reads that Parley once left out or typed
// differently: input-form defaults and hide, a provider's null icons, a document's rule id and
// its automatic rules, float dates of built-in metadata.
func TestWireGaps(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		resp, raw := p.getRaw(t, p.AppKey, "/parameters")
		var params struct {
			UserInputForm []map[string]map[string]any `json:"user_input_form"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(raw, &params) != nil || len(params.UserInputForm) == 0 {
			t.Fatalf("parameters: %d %s", resp.StatusCode, raw)
		}
		for _, item := range params.UserInputForm {
			for kind, in := range item {
				if _, ok := in["default"].(string); !ok {
					t.Errorf("%s input %v has no default", kind, in)
				}
				if _, ok := in["hide"].(bool); !ok {
					t.Errorf("%s input %v has no hide", kind, in)
				}
			}
		}

		resp, raw = p.getRaw(t, p.KnowledgeKey, "/workspaces/current/models/model-types/llm")
		if resp.StatusCode != 200 || bytes.Contains(raw, []byte(`"icon_small":{}`)) {
			t.Errorf("models: %d %s", resp.StatusCode, raw)
		}

		kc := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, kc, "wire gaps", false)
		doc := p.indexTextDocument(t, ds, "gaps", "Some text to index.")
		if st, raw := rawCall(t, p, http.MethodPost, "/datasets/"+ds+"/metadata/built-in/enable", "", p.KnowledgeKey); st != 200 {
			t.Fatalf("enable built-in metadata: %d %s", st, raw)
		}
		st, raw := rawCall(t, p, http.MethodGet, "/datasets/"+ds+"/documents/"+doc, "", p.KnowledgeKey)
		var detail struct {
			DatasetProcessRuleID *string `json:"dataset_process_rule_id"`
			DocumentProcessRule  struct {
				ID    string         `json:"id"`
				Mode  string         `json:"mode"`
				Rules map[string]any `json:"rules"`
			} `json:"document_process_rule"`
			DocMetadata []struct {
				Name  string          `json:"name"`
				Value json.RawMessage `json:"value"`
			} `json:"doc_metadata"`
		}
		if st != 200 || json.Unmarshal(raw, &detail) != nil {
			t.Fatalf("document: %d %s", st, raw)
		}
		if detail.DatasetProcessRuleID == nil || *detail.DatasetProcessRuleID != detail.DocumentProcessRule.ID {
			t.Errorf("dataset_process_rule_id: %s", raw)
		}
		seg, _ := detail.DocumentProcessRule.Rules["segmentation"].(map[string]any)
		if detail.DocumentProcessRule.Mode != "automatic" || seg["max_tokens"] != float64(500) || seg["chunk_overlap"] != float64(50) || seg["delimiter"] != "\n" {
			t.Errorf("automatic rules: %s", raw)
		}
		dates := 0
		for _, m := range detail.DocMetadata {
			if m.Name == "upload_date" || m.Name == "last_update_date" {
				dates++
				if !bytes.Contains(m.Value, []byte(".")) {
					t.Errorf("%s = %s, want a float", m.Name, m.Value)
				}
			}
		}
		if dates != 2 {
			t.Errorf("built-in dates: %s", raw)
		}
	})
}
