package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/blob"
)

// krBlobs counts the files of the server's blob store (uploads and document sources).
func krBlobs(t *testing.T, p *Parley) int {
	t.Helper()
	n := 0
	filepath.WalkDir(blob.DefaultRoot(p.engine.DataDir), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// krState is what a refused request must leave as it was: the detail of each document and
// knowledge base named, and the number of blobs.
func krState(t *testing.T, p *Parley, paths ...string) map[string]any {
	t.Helper()
	out := map[string]any{"blobs": krBlobs(t, p)}
	for _, path := range paths {
		status, raw := rawCall(t, p, "GET", path, "", p.KnowledgeKey)
		var v any
		if status != 200 || json.Unmarshal(raw, &v) != nil {
			t.Fatalf("GET %s: %d %s", path, status, raw)
		}
		out[path] = v
	}
	return out
}

// krRequest is one request to a document route: a JSON body, or a multipart form.
type krRequest struct {
	route, method, path string
	json                string
	parts               []part
}

func (r krRequest) send(t *testing.T, p *Parley, hc *http.Client) (*http.Response, apiErr) {
	t.Helper()
	c := call{method: r.method, path: r.path, key: "Bearer " + p.KnowledgeKey}
	if r.parts != nil {
		c.body, c.contentType = form(t, r.parts...)
	} else {
		c.body, c.contentType = strings.NewReader(r.json), "application/json"
	}
	return p.do(t, hc, c)
}

// TestKnowledgeProcessRuleRefusals: a process rule the splitter cannot use (a max_tokens outside
// 50 to INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH, an overlap over the chunk size, a hierarchical
// rule without child rule, a hierarchical_model document without hierarchical rule) is refused at
// the request with 400 invalid_param and Dify's message, on every route that takes one, as
// Dify's own up-front checks are; nothing is stored: no document, no upload, no change to the
// knowledge base or the document.
func TestKnowledgeProcessRuleRefusals(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		hc := newContractClient(t)
		// fresh has no technique and no document: a create would set both.
		fresh := kdDataset(t, c, "rules-fresh", "")
		ds := kdDataset(t, c, "rules-update", "economy")
		created := kdCreateFile(t, c, ds, "kept.txt", []byte("A document the refused updates must not touch."), automaticRule)
		kdCompleted(t, c, ds, created.Batch)
		doc := created.Document.Id.String()

		const bounds = "Custom segment length should be between 50 and 4000."
		pre := `"pre_processing_rules":[{"id":"remove_extra_spaces","enabled":true}]`
		custom := func(seg string) string { return `{"mode":"custom","rules":{` + pre + `,"segmentation":` + seg + `}}` }
		hier := func(rest string) string { return `{"mode":"hierarchical","rules":{` + pre + `,` + rest + `}}` }
		cases := []struct {
			name, config, msg string
		}{
			{"max_tokens 49", `"process_rule":` + custom(`{"separator":"\n","max_tokens":49}`), bounds},
			{"max_tokens 4001", `"process_rule":` + custom(`{"separator":"\n","max_tokens":4001,"chunk_overlap":0}`), bounds},
			{"negative max_tokens", `"process_rule":` + custom(`{"separator":"\n","max_tokens":-100}`), bounds},
			{"overlap over size", `"process_rule":` + custom(`{"separator":"\n","max_tokens":100,"chunk_overlap":101}`),
				"Got a larger chunk overlap (101) than chunk size (100), should be smaller."},
			{"no subchunk segmentation", `"doc_form":"hierarchical_model","process_rule":` + hier(`"parent_mode":"paragraph","segmentation":{"separator":"\n\n","max_tokens":500}`),
				"No subchunk segmentation found in rules."},
			{"subchunk max_tokens 4001", `"doc_form":"hierarchical_model","process_rule":` + hier(`"parent_mode":"full-doc","segmentation":{"separator":"\n\n"},"subchunk_segmentation":{"separator":"\n","max_tokens":4001}`), bounds},
			{"parent max_tokens 4001", `"doc_form":"hierarchical_model","process_rule":` + hier(`"parent_mode":"paragraph","segmentation":{"separator":"\n\n","max_tokens":4001},"subchunk_segmentation":{"separator":"\n","max_tokens":100}`), bounds},
			{"hierarchical_model with a custom rule", `"doc_form":"hierarchical_model","process_rule":` + custom(`{"separator":"\n","max_tokens":500}`),
				`The hierarchical_model doc form needs a hierarchical process rule, not "custom".`},
			// Dify's own up-front checks (DocumentService.process_rule_args_validate).
			{"unknown pre-processing rule", `"process_rule":{"mode":"custom","rules":{"pre_processing_rules":[{"id":"remove_everything","enabled":true}],"segmentation":{"separator":"\n","max_tokens":500}}}`,
				"Process rule pre_processing_rules id is invalid"},
			{"no separator", `"process_rule":` + custom(`{"max_tokens":500}`), "Process rule segmentation separator is required"},
			{"unknown mode", `"process_rule":{"mode":"sideways"}`, "Process rule mode is invalid"},
		}
		file := func(config string) []part {
			return []part{{field: "data", data: []byte(config)}, {field: "file", filename: "refused.txt", data: []byte("Refused content.")}}
		}
		docPath := "/datasets/" + ds + "/documents/" + doc
		before := krState(t, p, "/datasets/"+fresh, "/datasets/"+ds, docPath)
		for _, tc := range cases {
			create := `{"indexing_technique":"economy",` + tc.config + `}`
			text := `{"name":"refused","text":"Refused content.","indexing_technique":"economy",` + tc.config + `}`
			update := `{"name":"refused","text":"Refused content.",` + tc.config + `}`
			for _, r := range []krRequest{
				{route: "create-by-text", method: "POST", path: "/datasets/" + fresh + "/document/create-by-text", json: text},
				{route: "create_by_text", method: "POST", path: "/datasets/" + fresh + "/document/create_by_text", json: text},
				{route: "create-by-file", method: "POST", path: "/datasets/" + fresh + "/document/create-by-file", parts: file(create)},
				{route: "create_by_file", method: "POST", path: "/datasets/" + fresh + "/document/create_by_file", parts: file(create)},
				{route: "update-by-text", method: "POST", path: docPath + "/update-by-text", json: update},
				{route: "update_by_text", method: "POST", path: docPath + "/update_by_text", json: update},
				{route: "update-by-file", method: "POST", path: docPath + "/update-by-file", parts: file(`{` + tc.config + `}`)},
				{route: "update_by_file", method: "POST", path: docPath + "/update_by_file", parts: file(`{` + tc.config + `}`)},
				{route: "PATCH", method: "PATCH", path: docPath, parts: file(`{` + tc.config + `}`)},
			} {
				resp, e := r.send(t, p, hc)
				if resp.StatusCode != 400 || e.Code != "invalid_param" || e.Message != tc.msg {
					t.Errorf("%s on %s: %d %+v, want 400 invalid_param %q", tc.name, r.route, resp.StatusCode, e, tc.msg)
				}
			}
		}
		if after := krState(t, p, "/datasets/"+fresh, "/datasets/"+ds, docPath); !reflect.DeepEqual(after, before) {
			t.Fatalf("refused requests changed something:\nbefore %v\nafter  %v", before, after)
		}
		for _, id := range []string{fresh, ds} {
			want := map[string]int{fresh: 0, ds: 1}[id]
			if l, _ := c.ListDocumentsWithResponse(context.Background(), id, nil); l.JSON200 == nil || l.JSON200.Total != want {
				t.Fatalf("documents of %s: %s", id, l.Body)
			}
		}

		// The bounds follow INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH, and a rule within them works.
		p.Restart(t, "INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH=1000")
		resp, e := krRequest{method: "POST", path: "/datasets/" + ds + "/document/create-by-text",
			json: `{"name":"long","text":"x","process_rule":` + custom(`{"separator":"\n","max_tokens":1001}`) + `}`}.send(t, p, hc)
		if resp.StatusCode != 400 || e.Message != "Custom segment length should be between 50 and 1000." {
			t.Errorf("max_tokens 1001 under a limit of 1000: %d %+v", resp.StatusCode, e)
		}
		resp, _ = krRequest{method: "POST", path: "/datasets/" + ds + "/document/create-by-text",
			json: `{"name":"within","text":"Within the bounds.","process_rule":` + custom(`{"separator":"\n","max_tokens":1000,"chunk_overlap":1000}`) + `}`}.send(t, p, hc)
		if resp.StatusCode != 200 {
			t.Errorf("max_tokens 1000, overlap 1000: %d", resp.StatusCode)
		}
	})
}

// TestKnowledgeFileRefusals: on every document file route (and /files/upload for the name), a
// file over its size limit is 413 file_too_large, and a file name with '/' or '\' is refused
// with 400 invalid_param as Dify does (not cut to its last element); nothing is stored either
// way.
func TestKnowledgeFileRefusals(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		c, ds, docPath, routes := krFileRoutes(t, p, "file-refusals", "A document the refused updates must not touch.")
		hc := newContractClient(t)
		before := krState(t, p, "/datasets/"+ds, docPath)

		big := bytes.Repeat([]byte("x"), 1<<20+1)
		for _, r := range routes {
			r.parts = []part{{field: "data", data: []byte(automaticRule)}, {field: "file", filename: "big.txt", data: big}}
			resp, e := r.send(t, p, hc)
			if resp.StatusCode != 413 || e.Code != "file_too_large" || e.Message != "File size exceeded. The limit is 1 MB." {
				t.Errorf("oversize on %s: %d %+v, want 413 file_too_large", r.route, resp.StatusCode, e)
			}
		}
		for _, name := range []string{"a/b.txt", `..\x.txt`, "/etc/passwd.txt"} {
			for _, r := range routes {
				r.parts = []part{{field: "data", data: []byte(automaticRule)}, {field: "file", filename: name, data: []byte("Named content.")}}
				resp, e := r.send(t, p, hc)
				if resp.StatusCode != 400 || e.Code != "invalid_param" || e.Message != "Filename contains invalid characters" {
					t.Errorf("file name %q on %s: %d %+v", name, r.route, resp.StatusCode, e)
				}
			}
			resp, _, e := p.upload(t, hc, part{field: "file", filename: name, contentType: "text/plain", data: []byte("Named content.")})
			if resp.StatusCode != 400 || e.Code != "invalid_param" || e.Message != "Filename contains invalid characters" {
				t.Errorf("file name %q on /files/upload: %d %+v", name, resp.StatusCode, e)
			}
		}
		if after := krState(t, p, "/datasets/"+ds, docPath); !reflect.DeepEqual(after, before) {
			t.Fatalf("refused requests changed something:\nbefore %v\nafter  %v", before, after)
		}
		if l, _ := c.ListDocumentsWithResponse(context.Background(), ds, nil); l.JSON200 == nil || l.JSON200.Total != 1 {
			t.Fatalf("documents: %s", l.Body)
		}
	})
}

// TestKnowledgeOversizeBodyUnread: an oversized file is answered with 413 as soon as it is over
// its limit, before the client has sent the rest of the body, and the connection is not kept
// (what is left of the body must not be read as a next request).
func TestKnowledgeOversizeBodyUnread(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		_, _, _, routes := krFileRoutes(t, p, "unread", "A document to update.")
		hc := newContractClient(t)
		for _, r := range routes {
			t.Run(r.route, func(t *testing.T) { krOversizeUnread(t, p, hc, r) })
		}
	})
}

// krFileRoutes restarts the server with a 1 MB document limit (which keeps the oversize cases
// light), indexes one document with text in a new dataset, and returns a knowledge client, the
// dataset, the document's path and every route that takes a document file.
func krFileRoutes(t *testing.T, p *Parley, dataset, text string) (*client.ClientWithResponses, string, string, []krRequest) {
	t.Helper()
	p.Restart(t, "UPLOAD_FILE_SIZE_LIMIT=1")
	c := newClient(t, p, p.KnowledgeKey)
	ds := kdDataset(t, c, dataset, "economy")
	created := kdCreateFile(t, c, ds, "kept.txt", []byte(text), automaticRule)
	kdCompleted(t, c, ds, created.Batch)
	docPath := "/datasets/" + ds + "/documents/" + created.Document.Id.String()
	return c, ds, docPath, []krRequest{
		{route: "create-by-file", method: "POST", path: "/datasets/" + ds + "/document/create-by-file"},
		{route: "create_by_file", method: "POST", path: "/datasets/" + ds + "/document/create_by_file"},
		{route: "update-by-file", method: "POST", path: docPath + "/update-by-file"},
		{route: "update_by_file", method: "POST", path: docPath + "/update_by_file"},
		{route: "PATCH", method: "PATCH", path: docPath},
	}
}

// krOversizeUnread sends a form that announces 8 MB but stops after 2 MB of a file whose limit
// is 1 MB, and waits for the answer; a server that read the body to its end would never answer.
func krOversizeUnread(t *testing.T, p *Parley, hc *http.Client, r krRequest) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	if w, err := mw.CreateFormField("data"); err == nil {
		io.WriteString(w, automaticRule)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="big.txt"`)
	h.Set("Content-Type", "text/plain")
	w, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte("y"), 2<<20))

	// The rest of the body never comes: the pipe stays open until the answer is in, or until
	// the deadline that marks a server waiting for the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	go pw.Write(head.Bytes())
	go func() {
		<-ctx.Done()
		pw.CloseWithError(errors.New("body abandoned"))
	}()
	req, err := http.NewRequestWithContext(ctx, r.method, p.URL+r.path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 8 << 20
	req.Header.Set("Authorization", "Bearer "+p.KnowledgeKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("no answer before the body was complete: %v", err)
	}
	defer resp.Body.Close()
	var e apiErr
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 413 || e.Code != "file_too_large" {
		t.Errorf("got %d %+v, want 413 file_too_large", resp.StatusCode, e)
	}
	if !resp.Close {
		t.Errorf("the connection is kept although the body was not read (Connection: %q)", resp.Header.Get("Connection"))
	}
}
