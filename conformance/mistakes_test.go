package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestClientMistakes replays the client mistakes that used to end in a 500 (each is one case of
// a class the sweep covers at large) and checks the exact 4xx they get now, on both engines.
func TestClientMistakes(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		kc := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, kc, "mistakes", false)
		app, kb := "Bearer "+p.AppKey, "Bearer "+p.KnowledgeKey
		jsonCall := func(method, path, key, body string) call {
			return call{method: method, path: path, key: key, contentType: "application/json", body: strings.NewReader(body)}
		}
		chat := func(members string) string { return `{"inputs":{"tone":"warm","name":"Ada"},` + members + `}` }
		dataForm := func(data string) call {
			b, ct := formBody(part{field: "data", data: []byte(data)}, part{field: "file", filename: "m.txt", data: []byte("Some text.")})
			return call{method: "POST", path: "/datasets/" + ds + "/document/create-by-file", key: kb, contentType: ct, body: bytes.NewReader(b)}
		}
		for _, tc := range []struct {
			name              string
			c                 call
			status            int
			code, msgContains string
		}{
			// Validation failures inside a nullable member reached the error handler without
			// their request error.
			{"permission everyone", jsonCall("POST", "/datasets", kb, `{"name":"m1","permission":"everyone"}`), 400, "invalid_param", "permission"},
			{"search_method psychic on create", jsonCall("POST", "/datasets", kb, `{"name":"m2","retrieval_model":{"search_method":"psychic"}}`), 400, "invalid_param", "retrieval_model.search_method"},
			{"permission x on update", jsonCall("PATCH", "/datasets/"+ds, kb, `{"permission":"x"}`), 400, "invalid_param", "permission"},
			{"search_method psychic on retrieve", jsonCall("POST", "/datasets/"+ds+"/retrieve", kb, `{"query":"q","retrieval_model":{"search_method":"psychic"}}`), 400, "invalid_param", "retrieval_model.search_method"},
			{"score_threshold x on retrieve", jsonCall("POST", "/datasets/"+ds+"/retrieve", kb, `{"query":"q","retrieval_model":{"score_threshold":"x"}}`), 400, "invalid_param", "retrieval_model.score_threshold"},
			// Accepted by the validator, refused by the Go type.
			{"top_k past int64", jsonCall("POST", "/datasets/"+ds+"/retrieve", kb, `{"query":"q","retrieval_model":{"top_k":9223372036854775808}}`), 400, "invalid_param", ""},
			// Read one way by the validator and another by the binding.
			{"duplicate query", jsonCall("POST", "/chat-messages", app, chat(`"query":5,"query":"x","user":"u1"`)), 400, "invalid_param", `duplicate key "query" in the JSON body`},
			{"case variant of user", jsonCall("POST", "/chat-messages", app, chat(`"query":"x","user":"u1","User":""`)), 400, "invalid_param", `unknown member "User"`},
			{"duplicate in the data part", dataForm(`{"indexing_technique":"economy","process_rule":{"mode":"automatic","mode":5}}`), 400, "invalid_param", `data.process_rule: duplicate key "mode"`},
			// Dify's rule for a required user.
			{"empty user", jsonCall("POST", "/chat-messages", app, chat(`"query":"x","user":""`)), 400, "invalid_param", "Arg user must be provided."},
			{"empty user on feedback", jsonCall("POST", "/messages/8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22/feedbacks", app, `{"rating":"like","user":""}`), 400, "invalid_param", "Arg user must be provided."},
			// The generated handler opens the multipart body itself.
			{"multipart without boundary", call{method: "POST", path: "/files/upload", key: app, contentType: "multipart/form-data", body: strings.NewReader("x")}, 400, "bad_request", ""},
			// Text PostgreSQL cannot store.
			{"NUL in a tag name", jsonCall("POST", "/datasets/tags", kb, `{"name":"a\u0000b"}`), 400, "invalid_param", "name"},
			{"NUL in a keyword", call{method: "GET", path: "/datasets?keyword=a%00", key: kb}, 400, "invalid_param", "keyword"},
			{"invalid UTF-8 in a path id", call{method: "GET", path: "/datasets/%ff", key: kb}, 404, "not_found", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, e := p.do(t, hc, tc.c)
				if resp.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msgContains) {
					t.Fatalf("got %d %s %q, want %d %s containing %q", resp.StatusCode, e.Code, e.Message, tc.status, tc.code, tc.msgContains)
				}
			})
		}
	})
}

// TestPagesPastTheEnd asks every paginated list for a page past its last one, including one
// whose offset overflows int64: the page is empty, says there is no more, echoes the page asked
// for and keeps the right total. (The overflowing page used to answer the first page.)
func TestPagesPastTheEnd(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		kc := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, kc, "pages", true)
		doc := indexText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: "pages",
			Text: "One parent.\nIts child.\n\nAnother parent.\nAnother child.", DocForm: ptr("hierarchical_model"), ProcessRule: sweepHierarchicalRule()})
		segs := listSegments(t, kc, ds, doc, nil)
		if len(segs.Data) != 2 {
			t.Fatalf("segments: %+v", segs)
		}
		seg := segs.Data[0].Id.String()
		var datasets client.DatasetList
		p.getJSON(t, p.KnowledgeKey, "/datasets?limit=100", &datasets)

		const maxPage = "9223372036854775807"
		for _, page := range []string{"3", "461168601842738792", maxPage} {
			lists := []struct {
				path  string
				total int
			}{
				{"/datasets?limit=20&page=" + page, datasets.Total},
				{"/datasets/" + ds + "/documents?limit=20&page=" + page, 1},
				{"/datasets/" + ds + "/documents/" + doc + "/segments?limit=20&page=" + page, 2},
				{"/datasets/" + ds + "/documents/" + doc + "/segments/" + seg + "/child_chunks?limit=20&page=" + page, len(segs.Data[0].ChildChunks)},
			}
			for _, l := range lists {
				var got struct {
					Data    []json.RawMessage `json:"data"`
					HasMore *bool             `json:"has_more"`
					Page    json.Number       `json:"page"`
					Limit   int               `json:"limit"`
					Total   int               `json:"total"`
				}
				p.getJSON(t, p.KnowledgeKey, l.path, &got)
				if got.Data == nil || len(got.Data) != 0 || (got.HasMore != nil && *got.HasMore) ||
					got.Page.String() != page || got.Limit != 20 || got.Total != l.total {
					t.Errorf("%s: data %d items (nil %v), has_more %v, page %s, limit %d, total %d; want an empty page %s of 20, total %d",
						l.path, len(got.Data), got.Data == nil, got.HasMore, got.Page, got.Limit, got.Total, page, l.total)
				}
			}
		}
		// App feedbacks: pages are capped by the contract; one past the last is empty too.
		var fb struct {
			Data []json.RawMessage `json:"data"`
		}
		p.getJSON(t, p.AppKey, "/app/feedbacks?page=99999&limit=101", &fb)
		if fb.Data == nil || len(fb.Data) != 0 {
			t.Errorf("feedbacks past the end: %d items", len(fb.Data))
		}
	})
}

// getJSON GETs path with key over the contract-checking client and decodes a 200.
func (p *Parley) getJSON(t *testing.T, key, path string, v any) {
	t.Helper()
	req, err := http.NewRequest("GET", p.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := newContractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, raw)
	}
}
