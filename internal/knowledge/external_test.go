package knowledge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// fakeProvider is an external knowledge API whose answer a test sets; it keeps the last request.
type fakeProvider struct {
	*httptest.Server
	mu     sync.Mutex
	answer http.HandlerFunc
	path   string
	auth   string
	body   map[string]any
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.path, f.auth, f.body = r.URL.Path, r.Header.Get("Authorization"), nil
		_ = json.Unmarshal(raw, &f.body)
		answer := f.answer
		f.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) set(h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = h
}

func (f *fakeProvider) reply(status int, body string) {
	f.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// last is the last request: its path, Authorization header and JSON body.
func (f *fakeProvider) last() (string, string, map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.path, f.auth, f.body
}

// externalEnv is newEnv whose external knowledge APIs may be on loopback, with the key variable
// WIKI_KEY set and a short timeout.
func externalEnv(t *testing.T, eng storetest.Engine, timeout time.Duration) *env {
	t.Helper()
	client, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, eng, func(o *knowledge.Options) {
		o.ExternalClient, o.ExternalTimeout = client, timeout
		o.Getenv = func(k string) string { return map[string]string{"WIKI_KEY": "wiki-secret"}[k] }
	})
}

const wikiRecords = `{"records": [
  {"content": "The cafeteria opens at eight.", "score": 0.41, "title": "Facilities", "metadata": {"floor": 2}},
  {"content": "Vacation: twenty days a year.", "score": 0.93, "title": "Handbook",
   "metadata": {"document_id": "0190f5b1-3c2d-7e4f-9a8b-1c2d3e4f5a6b", "segment_id": "not a uuid", "lang": "en"}},
  {"content": "Parking is free.", "score": 0.12, "title": "Facilities", "metadata": null}
]}`

// TestExternalKnowledgeBase registers an external knowledge API, binds a knowledge base to it,
// and retrieves from it by hit testing and for a chat: the request is Dify's, the records are
// mapped to chunks (best first, held to top_k and the threshold) and cited, and the knowledge
// base refuses what needs documents.
func TestExternalKnowledgeBase(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		e := externalEnv(t, eng, 5*time.Second)
		ctx := context.Background()
		prov := newFakeProvider(t)
		prov.reply(200, wikiRecords)

		for _, bad := range []knowledge.ExternalAPIInput{
			{Name: "x", Endpoint: prov.URL, APIKeyEnv: "sk-123"},
			{Name: "x", Endpoint: "ftp://wiki.test", APIKeyEnv: "K"},
			{Name: "", Endpoint: prov.URL, APIKeyEnv: "K"},
		} {
			if _, err := e.svc.CreateExternalAPI(ctx, bad); !isKind(err, knowledge.KindInvalid) {
				t.Fatalf("%+v accepted: %v", bad, err)
			}
		}
		api, err := e.svc.CreateExternalAPI(ctx, knowledge.ExternalAPIInput{Name: "wiki", Endpoint: prov.URL + "/api/", APIKeyEnv: "WIKI_KEY"})
		if err != nil || api.Endpoint != prov.URL+"/api" {
			t.Fatalf("register: %+v %v", api, err)
		}
		if _, err := e.svc.CreateExternalAPI(ctx, knowledge.ExternalAPIInput{Name: "wiki", Endpoint: prov.URL, APIKeyEnv: "K"}); !isKind(err, knowledge.KindNameDuplicate) {
			t.Fatalf("a second wiki: %v", err)
		}

		for _, bad := range []knowledge.CreateDatasetInput{
			{Name: "w", Provider: store.DatasetProviderExternal, ExternalKnowledgeID: "space"},
			{Name: "w", Provider: store.DatasetProviderExternal, ExternalKnowledgeAPIID: store.NewID(), ExternalKnowledgeID: "space"},
			{Name: "w", Provider: store.DatasetProviderExternal, ExternalKnowledgeAPIID: api.ID},
			{Name: "w", Provider: store.DatasetProviderExternal, ExternalKnowledgeAPIID: api.ID, ExternalKnowledgeID: "s",
				ExternalRetrievalModel: []byte(`{"top_k": 500}`)},
		} {
			if _, err := e.svc.CreateDataset(ctx, bad); !isKind(err, knowledge.KindInvalid) {
				t.Fatalf("%+v accepted: %v", bad, err)
			}
		}
		v, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "Wiki", Provider: store.DatasetProviderExternal,
			ExternalKnowledgeAPIID: api.ID, ExternalKnowledgeID: "space-42", IndexingTechnique: store.TechniqueHighQuality,
			ExternalRetrievalModel: []byte(`{"top_k": 2, "score_threshold": 0.3, "score_threshold_enabled": true}`)})
		if err != nil {
			t.Fatal(err)
		}
		if v.Provider != store.DatasetProviderExternal || v.IndexingTechnique != "" || v.External == nil || v.External.API.Name != "wiki" ||
			v.External.KnowledgeID != "space-42" || v.External.Setting != (knowledge.ExternalSetting{TopK: 2, ScoreThreshold: 0.3, ScoreThresholdEnabled: true}) ||
			v.RetrievalModel.TopK != 2 {
			t.Fatalf("view: %+v", v)
		}

		recs, err := e.svc.RetrieveDataset(ctx, v.ID, knowledge.RetrieveInput{Query: "vacation days"})
		if err != nil {
			t.Fatal(err)
		}
		path, auth, body := prov.last()
		setting, _ := body["retrieval_setting"].(map[string]any)
		if path != "/api/retrieval" || auth != "Bearer wiki-secret" || body["knowledge_id"] != "space-42" || body["query"] != "vacation days" ||
			setting["top_k"] != 2.0 || setting["score_threshold"] != 0.3 {
			t.Fatalf("request %s %q %v", path, auth, body)
		}
		if _, sent := body["metadata_condition"]; sent {
			t.Fatalf("a metadata condition was sent without a filter: %v", body)
		}
		// Best first, the 0.12 record under the threshold dropped, top_k 2; a chunk's position is
		// its rank in the reply.
		if len(recs) != 2 || recs[0].Score != 0.93 || recs[1].Score != 0.41 {
			t.Fatalf("records %+v", recs)
		}
		top := recs[0]
		if top.External == nil || top.External.Title != "Handbook" || top.External.Metadata["lang"] != "en" ||
			top.Document.ID != "0190f5b1-3c2d-7e4f-9a8b-1c2d3e4f5a6b" || top.Document.Name != "Handbook" ||
			top.Document.DataSourceType != "external" || top.Segment.Content != "Vacation: twenty days a year." ||
			top.Segment.ID == "not a uuid" || len(top.Segment.ID) != 36 || top.Dataset.ID != v.ID || top.Segment.Position != 2 {
			t.Fatalf("top record %+v", top)
		}
		// The same answer gives the same ids.
		again, err := e.svc.RetrieveDataset(ctx, v.ID, knowledge.RetrieveInput{Query: "vacation days"})
		if err != nil || again[1].Segment.ID != recs[1].Segment.ID || again[1].Document.ID != recs[1].Document.ID {
			t.Fatalf("ids are not stable: %+v %v", again, err)
		}

		// The request's setting and filter win over the knowledge base's.
		if _, err := e.svc.RetrieveDataset(ctx, v.ID, knowledge.RetrieveInput{Query: "vacation",
			ExternalRetrievalModel:      []byte(`{"top_k": 5, "score_threshold_enabled": false}`),
			MetadataFilteringConditions: []byte(`{"logical_operator": "or", "conditions": [{"name": "lang", "comparison_operator": "is", "value": "en"}]}`)}); err != nil {
			t.Fatal(err)
		}
		_, _, body = prov.last()
		setting, _ = body["retrieval_setting"].(map[string]any)
		cond, _ := body["metadata_condition"].(map[string]any)
		if setting["top_k"] != 5.0 || setting["score_threshold"] != 0.0 || cond["logical_operator"] != "or" {
			t.Fatalf("overridden request %v", body)
		}
		// A partial setting keeps the knowledge base's other members.
		if recs, err := e.svc.RetrieveDataset(ctx, v.ID, knowledge.RetrieveInput{Query: "vacation", ExternalRetrievalModel: []byte(`{"top_k": 1}`)}); err != nil || len(recs) != 1 {
			t.Fatalf("top_k 1: %+v %v", recs, err)
		}
		_, _, body = prov.last()
		if setting, _ = body["retrieval_setting"].(map[string]any); setting["top_k"] != 1.0 || setting["score_threshold"] != 0.3 {
			t.Fatalf("partially overridden request %v", body)
		}

		// A chat cites the records, mixed with a local knowledge base's chunks.
		local, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "local"})
		if err != nil {
			t.Fatal(err)
		}
		e.addText(t, local.ID, "intro", corpus, knowledge.DocumentConfig{IndexingTechnique: ptr(store.TechniqueEconomy)})
		cc, err := e.svc.RetrieveForChat(ctx, []string{"Wiki", "local"}, "vacation monkeys")
		if err != nil {
			t.Fatal(err)
		}
		var cited bool
		for _, r := range cc.Resources {
			if r.DatasetID == v.ID {
				cited = true
				if r.DataSourceType != "external" || r.DocumentName == "" || r.Content == "" || r.SegmentID == "" || r.HitCount != 0 {
					t.Fatalf("external resource %+v", r)
				}
			}
		}
		if !cited || !strings.Contains(cc.Prompt, "twenty days") {
			t.Fatalf("chat context %+v", cc)
		}

		// No documents, chunks or metadata fields.
		if _, _, err := e.svc.CreateDocument(ctx, v.ID, knowledge.DocumentConfig{}, knowledge.Source{Filename: "x", Body: strings.NewReader("x"), Text: true}); !errors.Is(err, knowledge.ErrExternalDataset) {
			t.Fatalf("document on an external knowledge base: %v", err)
		}
		if _, _, err := e.svc.ListDocuments(ctx, v.ID, store.DocumentQuery{Page: 1, Limit: 20}); !errors.Is(err, knowledge.ErrExternalDataset) {
			t.Fatalf("documents of an external knowledge base: %v", err)
		}
		if _, err := e.svc.CreateMetadataField(ctx, v.ID, "f", "string"); !errors.Is(err, knowledge.ErrExternalDataset) {
			t.Fatalf("metadata field of an external knowledge base: %v", err)
		}

		// A partial update changes what it names; a vendor knowledge base ignores the binding.
		u, err := e.svc.UpdateDataset(ctx, v.ID, knowledge.UpdateDatasetInput{ExternalRetrievalModel: []byte(`{"top_k": 4}`),
			ExternalKnowledgeID: ptr("space-43"), IndexingTechnique: ptr(store.TechniqueEconomy)})
		if err != nil || u.External.Setting != (knowledge.ExternalSetting{TopK: 4, ScoreThreshold: 0.3, ScoreThresholdEnabled: true}) ||
			u.External.KnowledgeID != "space-43" || u.IndexingTechnique != "" {
			t.Fatalf("update: %+v %v", u, err)
		}
		if _, err := e.svc.UpdateDataset(ctx, v.ID, knowledge.UpdateDatasetInput{ExternalKnowledgeAPIID: ptr(store.NewID())}); !isKind(err, knowledge.KindInvalid) {
			t.Fatalf("bound to an unknown API: %v", err)
		}
		if lu, err := e.svc.UpdateDataset(ctx, local.ID, knowledge.UpdateDatasetInput{ExternalKnowledgeID: ptr("x")}); err != nil || lu.External != nil {
			t.Fatalf("vendor update: %+v %v", lu, err)
		}

		if err := e.svc.DeleteExternalAPI(ctx, "wiki"); !isKind(err, knowledge.KindInUse) {
			t.Fatalf("delete of an API in use: %v", err)
		}
		if err := e.svc.DeleteDataset(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteExternalAPI(ctx, "wiki"); err != nil {
			t.Fatal(err)
		}
	})
}

func isKind(err error, k knowledge.Kind) bool {
	var kerr *knowledge.Error
	return errors.As(err, &kerr) && kerr.Kind == k
}

// TestExternalKnowledgeFailures: every way an external knowledge API can fail is a clear
// KindExternalRequest error naming the knowledge base, returned within the timeout.
func TestExternalKnowledgeFailures(t *testing.T) {
	// Long enough for 8 MiB to arrive under the race detector on a busy machine.
	e := externalEnv(t, storetest.NewEngine(t, storetest.SQLite), 2*time.Second)
	ctx := context.Background()
	prov := newFakeProvider(t)
	api, err := e.svc.CreateExternalAPI(ctx, knowledge.ExternalAPIInput{Name: "wiki", Endpoint: prov.URL, APIKeyEnv: "WIKI_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "Wiki", Provider: store.DatasetProviderExternal,
		ExternalKnowledgeAPIID: api.ID, ExternalKnowledgeID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	huge := `{"records": [{"content": "` + strings.Repeat("x", knowledge.MaxExternalResponseBytes) + `", "score": 1, "title": "t"}]}`
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for _, tc := range []struct {
		name, want string
		answer     http.HandlerFunc
	}{
		{"error body", `answered error 2001: The knowledge does not exist`, replyWith(200, `{"error_code": 2001, "error_msg": "The knowledge does not exist"}`)},
		{"refused", `answered HTTP 403 (error 1002: Authorization failed)`, replyWith(403, `{"error_code": 1002, "error_msg": "Authorization failed"}`)},
		{"server error", `answered HTTP 500`, replyWith(500, `oops`)},
		{"not json", `not the External Knowledge API's`, replyWith(200, `<html>hello</html>`)},
		{"no records", `not the External Knowledge API's`, replyWith(200, `{"data": []}`)},
		{"records not a list", `not the External Knowledge API's`, replyWith(200, `{"records": {"content": "x"}}`)},
		{"record not an object", `records[1]`, replyWith(200, `{"records": [{"content": "x", "score": 1}, 7]}`)},
		{"too large", `larger than 8 MiB`, replyWith(200, huge)},
		{"hangs", `did not answer within 2s`, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}},
		{"hangs mid-reply", `did not answer within 2s`, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			_, _ = io.WriteString(w, `{"records": [`)
			w.(http.Flusher).Flush()
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov.set(tc.answer)
			start := time.Now()
			_, err := e.svc.RetrieveDataset(ctx, v.ID, knowledge.RetrieveInput{Query: "q"})
			var kerr *knowledge.Error
			if !errors.As(err, &kerr) || kerr.Kind != knowledge.KindExternalRequest ||
				!strings.Contains(kerr.Message, `External knowledge base "Wiki": its external knowledge API "wiki"`) || !strings.Contains(kerr.Message, tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if d := time.Since(start); d > 6*time.Second {
				t.Fatalf("took %s", d)
			}
			// A chat fails the same way.
			if _, err := e.svc.RetrieveForChat(ctx, []string{"Wiki"}, "q"); !isKind(err, knowledge.KindExternalRequest) {
				t.Fatalf("chat: %v", err)
			}
		})
	}

	t.Run("no key", func(t *testing.T) {
		prov.reply(200, `{"records": []}`)
		other, err := e.svc.CreateExternalAPI(ctx, knowledge.ExternalAPIInput{Name: "keyless", Endpoint: prov.URL, APIKeyEnv: "UNSET_KEY"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "Keyless", Provider: store.DatasetProviderExternal,
			ExternalKnowledgeAPIID: other.ID, ExternalKnowledgeID: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "q"}); !isKind(err, knowledge.KindExternalRequest) ||
			!strings.Contains(err.Error(), "set the environment variable UNSET_KEY") {
			t.Fatalf("no key: %v", err)
		}
	})

	t.Run("network guard", func(t *testing.T) {
		guarded := newEnv(t, storetest.NewEngine(t, storetest.SQLite), func(o *knowledge.Options) {
			o.Getenv = func(string) string { return "k" }
		})
		a, err := guarded.svc.CreateExternalAPI(ctx, knowledge.ExternalAPIInput{Name: "local", Endpoint: prov.URL, APIKeyEnv: "K"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := guarded.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "L", Provider: store.DatasetProviderExternal,
			ExternalKnowledgeAPIID: a.ID, ExternalKnowledgeID: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := guarded.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "q"}); !isKind(err, knowledge.KindExternalRequest) ||
			!strings.Contains(err.Error(), "PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS") {
			t.Fatalf("loopback behind the guard: %v", err)
		}
	})
}

func replyWith(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// TestAnswerExternal serves a local knowledge base as the External Knowledge API: top_k, the
// threshold and a metadata condition (one name or several) apply; a record carries the
// document's metadata and where it comes from; an unknown or external knowledge base is
// ErrKnowledgeNotFound, and one without an index answers nothing.
func TestAnswerExternal(t *testing.T) {
	e := externalEnv(t, storetest.NewEngine(t, storetest.SQLite), time.Second)
	ctx := context.Background()
	d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "zoo"})
	if err != nil {
		t.Fatal(err)
	}
	fruit := e.addText(t, d.ID, "fruit", "Bananas are yellow fruit loved by monkeys.", knowledge.DocumentConfig{IndexingTechnique: ptr(store.TechniqueEconomy)})
	e.addText(t, d.ID, "tools", "Monkeys use sticks as tools to reach fruit.", knowledge.DocumentConfig{})
	field, err := e.svc.CreateMetadataField(ctx, d.ID, "kind", "string")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.SetDocumentsMetadata(ctx, d.ID, []knowledge.DocumentMetadataOp{{DocumentID: fruit.ID,
		Values: []knowledge.MetadataValue{{ID: field.ID, Name: "kind", Value: "food"}}}}); err != nil {
		t.Fatal(err)
	}

	got, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: d.ID, Query: "monkeys fruit", TopK: 5})
	if err != nil || len(got) != 2 {
		t.Fatalf("answers %+v %v", got, err)
	}
	for _, a := range got {
		if a.Content == "" || a.Title == "" || a.Metadata["dataset_id"] != d.ID || a.Metadata["document_name"] != a.Title ||
			a.Metadata["segment_id"] == "" || a.Metadata["document_id"] == "" {
			t.Fatalf("answer %+v", a)
		}
	}
	if one, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: d.ID, Query: "monkeys fruit", TopK: 1}); err != nil || len(one) != 1 {
		t.Fatalf("top_k 1: %+v %v", one, err)
	}
	// Keyword scores are the share of the query's keywords a chunk has: 1 and 0.5 here.
	if above, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: d.ID, Query: "bananas monkeys", TopK: 5, ScoreThreshold: 0.9}); err != nil ||
		len(above) != 1 || above[0].Title != "fruit" {
		t.Fatalf("threshold 0.9: %+v %v", above, err)
	}
	food := knowledge.ExternalFilter("and", []knowledge.ExternalCondition{{Names: []string{"kind"}, ComparisonOperator: "is", Value: "food"}})
	if f, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: d.ID, Query: "monkeys fruit", TopK: 5, Filter: food}); err != nil ||
		len(f) != 1 || f[0].Title != "fruit" || f[0].Metadata["kind"] != "food" {
		t.Fatalf("filtered: %+v %v", f, err)
	}
	either := knowledge.ExternalFilter("and", []knowledge.ExternalCondition{{Names: []string{"colour", "kind"}, ComparisonOperator: "is", Value: "food"}})
	if f, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: d.ID, Query: "monkeys fruit", TopK: 5, Filter: either}); err != nil || len(f) != 1 {
		t.Fatalf("a condition on two names: %+v %v", f, err)
	}

	for _, id := range []string{store.NewID(), "not-a-uuid"} {
		if _, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: id, Query: "q", TopK: 2}); !errors.Is(err, knowledge.ErrKnowledgeNotFound) {
			t.Fatalf("unknown knowledge %q: %v", id, err)
		}
	}
	api, err := e.svc.CreateExternalAPI(ctx, knowledge.ExternalAPIInput{Name: "self", Endpoint: "https://parley.test/v1/external-knowledge", APIKeyEnv: "WIKI_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "relay", Provider: store.DatasetProviderExternal,
		ExternalKnowledgeAPIID: api.ID, ExternalKnowledgeID: d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: ext.ID, Query: "q", TopK: 2}); !errors.Is(err, knowledge.ErrKnowledgeNotFound) {
		t.Fatalf("an external knowledge base served in turn: %v", err)
	}
	empty, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: empty.ID, Query: "q", TopK: 2}); err != nil || len(got) != 0 {
		t.Fatalf("a knowledge base without an index: %+v %v", got, err)
	}
	if _, err := e.svc.AnswerExternal(ctx, knowledge.ExternalQuery{KnowledgeID: d.ID, Query: "  ", TopK: 2}); !isKind(err, knowledge.KindInvalid) {
		t.Fatalf("blank query: %v", err)
	}
}

// TestSeedExternal: the config file's external knowledge APIs are registered (and updated when
// they change), and its external knowledge bases are created bound to them.
func TestSeedExternal(t *testing.T) {
	e := externalEnv(t, storetest.NewEngine(t, storetest.SQLite), time.Second)
	ctx := context.Background()
	apis := []config.ExternalKnowledgeAPI{{Name: "wiki", Endpoint: "https://wiki.test/api", APIKeyEnv: "WIKI_KEY"}}
	threshold := 0.5
	kbs := []config.KnowledgeBase{{Name: "Wiki", External: &config.ExternalKnowledgeRef{API: "wiki", KnowledgeID: "space", TopK: 3, ScoreThreshold: &threshold}}}
	if err := e.svc.SeedConfigured(ctx, kbs, apis); err != nil {
		t.Fatal(err)
	}
	apis[0].Endpoint = "https://wiki2.test/api"
	if err := e.svc.SeedConfigured(ctx, kbs, apis); err != nil {
		t.Fatal(err)
	}
	a, err := e.svc.ExternalAPI(ctx, "wiki")
	if err != nil || a.Endpoint != "https://wiki2.test/api" {
		t.Fatalf("seeded api %+v %v", a, err)
	}
	d, err := e.st.DatasetByName(ctx, "Wiki")
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.GetDataset(ctx, d.ID)
	if err != nil || v.External == nil || v.External.API.ID != a.ID || v.External.KnowledgeID != "space" ||
		v.External.Setting != (knowledge.ExternalSetting{TopK: 3, ScoreThreshold: 0.5, ScoreThresholdEnabled: true}) {
		t.Fatalf("seeded knowledge base %+v %v", v, err)
	}
}
