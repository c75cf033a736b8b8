package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// handbookText is four one-paragraph chunks on distinct topics.
const handbookText = "Vacation policy: every employee receives twenty days of paid vacation each year.\n\n" +
	"Expense reports must be filed within thirty days, with the receipts attached.\n\n" +
	"The office coffee machine is descaled and cleaned every Friday afternoon.\n\n" +
	"Security badges must be worn visibly inside the building at all times."

// segErr checks an error response: status, code and (when not "") message.
func segErr(t *testing.T, what string, status int, body []byte, wantStatus int, wantCode, wantMsg string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s: status %d, want %d; body %s", what, status, wantStatus, body)
		return
	}
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("%s: error body is not JSON: %s", what, body)
		return
	}
	if (wantCode != "" && e.Code != wantCode) || (wantMsg != "" && e.Message != wantMsg) || e.Status != wantStatus {
		t.Errorf("%s: error %+v, want %d %s %q", what, e, wantStatus, wantCode, wantMsg)
	}
}

// segDataset creates a knowledge base: high quality with the conformance embedding model, or
// economy.
func segDataset(t *testing.T, c *client.ClientWithResponses, name string, highQuality bool) string {
	t.Helper()
	if highQuality {
		return kdDataset(t, c, name, string(client.HighQuality))
	}
	return kdDataset(t, c, name, string(client.Economy))
}

// datasetByName finds a knowledge base (e.g. one seeded from the config) by name.
func datasetByName(t *testing.T, c *client.ClientWithResponses, name string) string {
	t.Helper()
	r, err := c.ListDatasetsWithResponse(context.Background(), &client.ListDatasetsParams{Keyword: &name, Limit: ptr(100)})
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil {
		t.Fatalf("list datasets: status %d, body %s", r.StatusCode(), r.Body)
	}
	for _, d := range r.JSON200.Data {
		if d.Name == name {
			return d.Id.String()
		}
	}
	t.Fatalf("no dataset named %q", name)
	return ""
}

// paragraphRule splits on blank lines.
func paragraphRule() *client.ProcessRule {
	return &client.ProcessRule{Mode: "custom", Rules: &client.ProcessRuleRules{
		PreProcessingRules: &[]client.PreProcessingRule{},
		Segmentation:       &client.Segmentation{Separator: ptr("\n\n"), MaxTokens: ptr(500)},
	}}
}

// addText creates a document from text and returns its id and batch.
func addText(t *testing.T, c *client.ClientWithResponses, datasetID string, body client.CreateDocumentByTextJSONRequestBody) (string, string) {
	t.Helper()
	r, err := c.CreateDocumentByTextWithResponse(context.Background(), datasetID, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil {
		t.Fatalf("create document %q: status %d, body %s", body.Name, r.StatusCode(), r.Body)
	}
	return r.JSON200.Document.Id.String(), r.JSON200.Batch
}

// waitIndexing polls the batch until every document is completed or failed, and returns the
// final status of the first.
func waitIndexing(t *testing.T, c *client.ClientWithResponses, datasetID, batch string) client.DocumentIndexingStatus {
	t.Helper()
	return kdWait(t, c, datasetID, batch)[0]
}

// indexText adds a document and waits until it is completed.
func indexText(t *testing.T, c *client.ClientWithResponses, datasetID string, body client.CreateDocumentByTextJSONRequestBody) string {
	t.Helper()
	id, batch := addText(t, c, datasetID, body)
	if st := waitIndexing(t, c, datasetID, batch); st.IndexingStatus != client.IndexingStatusCompleted {
		t.Fatalf("document %q: indexing %s, error %v", body.Name, st.IndexingStatus, st.Error)
	}
	return id
}

func listSegments(t *testing.T, c *client.ClientWithResponses, ds, doc string, params *client.ListSegmentsParams) client.SegmentList {
	t.Helper()
	r, err := c.ListSegmentsWithResponse(context.Background(), ds, doc, params)
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil {
		t.Fatalf("list segments: status %d, body %s", r.StatusCode(), r.Body)
	}
	return *r.JSON200
}

func getSegment(t *testing.T, c *client.ClientWithResponses, ds, doc, seg string) client.Segment {
	t.Helper()
	r, err := c.GetSegmentWithResponse(context.Background(), ds, doc, seg)
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil {
		t.Fatalf("get segment: status %d, body %s", r.StatusCode(), r.Body)
	}
	return r.JSON200.Data
}

func retrieve(t *testing.T, c *client.ClientWithResponses, ds, query string, rm *client.RetrievalModel) client.RetrieveResult {
	t.Helper()
	r, err := c.RetrieveWithResponse(context.Background(), ds, client.RetrieveJSONRequestBody{Query: &query, RetrievalModel: rm})
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil {
		t.Fatalf("retrieve %q: status %d, body %s", query, r.StatusCode(), r.Body)
	}
	if r.JSON200.Query.Content != query {
		t.Errorf("query.content %q, want %q", r.JSON200.Query.Content, query)
	}
	return *r.JSON200
}

// checkSegment checks the invariants of a completed chunk of a high-quality knowledge base.
func checkSegment(t *testing.T, s client.Segment, docID string) {
	t.Helper()
	if s.DocumentId.String() != docID || s.Status != client.SegmentStatusCompleted || !s.Enabled ||
		s.SignContent != s.Content || s.Answer != nil || s.WordCount != utf8.RuneCountInString(s.Content) ||
		s.Tokens <= 0 || s.Keywords == nil || s.IndexNodeId == "" || s.IndexNodeHash == "" ||
		s.DisabledAt != nil || s.DisabledBy != nil || s.Error != nil || s.StoppedAt != nil ||
		s.CompletedAt == nil || s.IndexingAt == nil || s.CreatedAt == 0 || s.CreatedBy == "" ||
		s.Attachments == nil || len(s.Attachments) != 0 || s.ChildChunks == nil || s.Summary != nil {
		t.Errorf("segment %+v", s)
	}
}

func TestKnowledgeSegments(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, c, "segments", true)
		doc := indexText(t, c, ds, client.CreateDocumentByTextJSONRequestBody{Name: "handbook", Text: handbookText, ProcessRule: paragraphRule()})

		// List: by position, full pages report has_more.
		all := listSegments(t, c, ds, doc, nil)
		if len(all.Data) != 4 || all.Total != 4 || all.HasMore || all.Page != 1 || all.Limit != 20 || all.DocForm != "text_model" {
			t.Fatalf("list %+v", all)
		}
		for i, s := range all.Data {
			checkSegment(t, s, doc)
			if s.Position != i+1 || s.HitCount != 0 || len(s.ChildChunks) != 0 {
				t.Errorf("segment %d: %+v", i, s)
			}
		}
		if !strings.HasPrefix(all.Data[0].Content, "Vacation policy") || !strings.HasPrefix(all.Data[2].Content, "The office coffee") {
			t.Fatalf("order: %q, %q", all.Data[0].Content, all.Data[2].Content)
		}
		page := listSegments(t, c, ds, doc, &client.ListSegmentsParams{Page: ptr(2), Limit: ptr(2)})
		if len(page.Data) != 2 || !page.HasMore || page.Total != 4 || page.Page != 2 || page.Limit != 2 || page.Data[0].Position != 3 {
			t.Fatalf("page 2 of 2: %+v", page)
		}
		if big := listSegments(t, c, ds, doc, &client.ListSegmentsParams{Limit: ptr(500)}); big.Limit != 100 || len(big.Data) != 4 {
			t.Fatalf("limit 500 is served as 100: %+v", big)
		}
		if kw := listSegments(t, c, ds, doc, &client.ListSegmentsParams{Keyword: ptr("coffee")}); kw.Total != 1 || len(kw.Data) != 1 || kw.Data[0].Position != 3 {
			t.Fatalf("keyword: %+v", kw)
		}
		if st := listSegments(t, c, ds, doc, &client.ListSegmentsParams{Status: &[]string{"completed"}}); st.Total != 4 {
			t.Fatalf("status completed: %+v", st)
		}
		if st := listSegments(t, c, ds, doc, &client.ListSegmentsParams{Status: &[]string{"error", "indexing"}}); st.Total != 0 || len(st.Data) != 0 {
			t.Fatalf("status error: %+v", st)
		}

		// Get.
		first := all.Data[0]
		if got := getSegment(t, c, ds, doc, first.Id.String()); got.Id != first.Id || got.Content != first.Content || got.IndexNodeHash != first.IndexNodeHash {
			t.Fatalf("get %+v, listed %+v", got, first)
		}
		for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
			r, err := c.GetSegmentWithResponse(ctx, ds, doc, id)
			if err != nil {
				t.Fatal(err)
			}
			segErr(t, "unknown segment "+id, r.StatusCode(), r.Body, 404, "not_found", "Segment not found.")
		}
		if r, _ := c.ListSegmentsWithResponse(ctx, ds, uuid.NewString(), nil); r != nil {
			segErr(t, "unknown document", r.StatusCode(), r.Body, 404, "not_found", "Document not found.")
		}

		// Create: appended after the last chunk, indexed at once.
		created, err := c.CreateSegmentsWithResponse(ctx, ds, doc, client.CreateSegmentsJSONRequestBody{Segments: []client.SegmentInput{
			{Content: ptr("Parking spaces in the garage are assigned by the facilities team.")},
			{Content: ptr("Lunch is served in the canteen from noon."), Keywords: &[]string{"lunch", "canteen"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if created.JSON200 == nil {
			t.Fatalf("create segments: status %d, body %s", created.StatusCode(), created.Body)
		}
		if len(created.JSON200.Data) != 2 || created.JSON200.DocForm != "text_model" {
			t.Fatalf("created %+v", created.JSON200)
		}
		for i, s := range created.JSON200.Data {
			checkSegment(t, s, doc)
			if s.Position != 5+i {
				t.Errorf("created segment %d position %d", i, s.Position)
			}
		}
		parking := created.JSON200.Data[0]
		if kw := created.JSON200.Data[1].Keywords; strings.Join(kw, ",") != "lunch,canteen" {
			t.Errorf("given keywords %q", kw)
		}
		if kw := getSegment(t, c, ds, doc, created.JSON200.Data[1].Id.String()).Keywords; strings.Join(kw, ",") != "lunch,canteen" {
			t.Errorf("stored keywords %q", kw)
		}
		if res := retrieve(t, c, ds, "who assigns parking spaces in the garage", &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 1}); len(res.Records) != 1 || res.Records[0].Segment.Id != parking.Id {
			t.Fatalf("new chunk is not searchable: %+v", res.Records)
		}
		for name, body := range map[string]string{
			"empty content":   `{"segments":[{"content":"  "}]}`,
			"missing content": `{"segments":[{"answer":"x"}]}`,
		} {
			code, raw := rawCall(t, p, http.MethodPost, "/datasets/"+ds+"/documents/"+doc+"/segments", body, p.KnowledgeKey)
			segErr(t, name, code, raw, 400, "invalid_param", "Content is empty")
		}

		// Update: content re-indexed; disabling hides the chunk from search.
		upd, err := c.UpdateSegmentWithResponse(ctx, ds, doc, parking.Id.String(), client.UpdateSegmentJSONRequestBody{
			Segment: client.SegmentUpdate{Content: ptr("Bicycle racks stand beside the main entrance.")}})
		if err != nil {
			t.Fatal(err)
		}
		if upd.JSON200 == nil {
			t.Fatalf("update segment: status %d, body %s", upd.StatusCode(), upd.Body)
		}
		u := upd.JSON200.Data
		checkSegment(t, u, doc)
		if u.Id != parking.Id || u.Content != "Bicycle racks stand beside the main entrance." || u.IndexNodeHash == parking.IndexNodeHash ||
			u.Position != parking.Position || u.UpdatedBy == nil || upd.JSON200.DocForm != "text_model" {
			t.Fatalf("updated %+v", u)
		}
		if res := retrieve(t, c, ds, "where are the bicycle racks", &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 1}); len(res.Records) != 1 || res.Records[0].Segment.Id != parking.Id {
			t.Fatalf("updated chunk is not found by its new content: %+v", res.Records)
		}
		dis, err := c.UpdateSegmentWithResponse(ctx, ds, doc, parking.Id.String(), client.UpdateSegmentJSONRequestBody{Segment: client.SegmentUpdate{Enabled: ptr(false)}})
		if err != nil || dis.JSON200 == nil {
			t.Fatalf("disable: %v %s", err, dis.Body)
		}
		if d := dis.JSON200.Data; d.Enabled || d.DisabledAt == nil || d.DisabledBy == nil {
			t.Fatalf("disabled %+v", d)
		}
		res := retrieve(t, c, ds, "where are the bicycle racks", &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 10})
		for _, r := range res.Records {
			if r.Segment.Id == parking.Id {
				t.Fatalf("a disabled chunk was retrieved")
			}
		}
		code, raw := rawCall(t, p, http.MethodPost, "/datasets/"+ds+"/documents/"+doc+"/segments/"+parking.Id.String(), `{"segment":{"content":"changed"}}`, p.KnowledgeKey)
		segErr(t, "edit a disabled chunk", code, raw, 400, "invalid_param", "Can't update disabled segment")
		en, err := c.UpdateSegmentWithResponse(ctx, ds, doc, parking.Id.String(), client.UpdateSegmentJSONRequestBody{Segment: client.SegmentUpdate{Enabled: ptr(true)}})
		if err != nil || en.JSON200 == nil || !en.JSON200.Data.Enabled || en.JSON200.Data.DisabledAt != nil {
			t.Fatalf("enable: %v %s", err, en.Body)
		}

		// Delete.
		del, err := c.DeleteSegmentWithResponse(ctx, ds, doc, parking.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if del.StatusCode() != http.StatusNoContent || len(del.Body) != 0 {
			t.Fatalf("delete: status %d, body %s", del.StatusCode(), del.Body)
		}
		if r, _ := c.GetSegmentWithResponse(ctx, ds, doc, parking.Id.String()); r.StatusCode() != 404 {
			t.Fatalf("deleted segment: status %d", r.StatusCode())
		}
		if r, _ := c.DeleteSegmentWithResponse(ctx, ds, doc, parking.Id.String()); r != nil {
			segErr(t, "delete twice", r.StatusCode(), r.Body, 404, "not_found", "Segment not found.")
		}
		if l := listSegments(t, c, ds, doc, nil); l.Total != 5 {
			t.Fatalf("after delete: total %d", l.Total)
		}

		// Adding chunks needs a completed document: a document whose indexing failed is not.
		mark := marker(t, "embedding refused")
		upstream.On(mark, openaitest.Reply{Status: 400, ErrorMessage: "refused"})
		broken, batch := addText(t, c, ds, client.CreateDocumentByTextJSONRequestBody{Name: "broken", Text: mark, ProcessRule: paragraphRule()})
		if st := waitIndexing(t, c, ds, batch); st.IndexingStatus != client.IndexingStatusError {
			t.Fatalf("broken document: %+v", st)
		}
		code, raw = rawCall(t, p, http.MethodPost, "/datasets/"+ds+"/documents/"+broken+"/segments", `{"segments":[{"content":"more"}]}`, p.KnowledgeKey)
		segErr(t, "create on a failed document", code, raw, 404, "not_found", "Document is not completed.")
	})
}

func TestKnowledgeChildChunks(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, c, "parents", true)
		rule := &client.ProcessRule{Mode: "hierarchical", Rules: &client.ProcessRuleRules{
			PreProcessingRules:   &[]client.PreProcessingRule{},
			ParentMode:           ptr("paragraph"),
			Segmentation:         &client.Segmentation{Separator: ptr("\n\n"), MaxTokens: ptr(500)},
			SubchunkSegmentation: &client.Segmentation{Separator: ptr("\n"), MaxTokens: ptr(200)},
		}}
		text := "Vacation days are granted every January.\nUnused vacation days expire in March.\n\n" +
			"The coffee machine is cleaned on Fridays.\nThe canteen serves lunch from noon."
		doc := indexText(t, c, ds, client.CreateDocumentByTextJSONRequestBody{Name: "parents", Text: text,
			DocForm: ptr("hierarchical_model"), ProcessRule: rule})

		l := listSegments(t, c, ds, doc, nil)
		if l.DocForm != "hierarchical_model" || len(l.Data) != 2 {
			t.Fatalf("list %+v", l)
		}
		parent := l.Data[0]
		if len(parent.ChildChunks) != 2 || parent.ChildChunks[0].Content != "Vacation days are granted every January." ||
			parent.ChildChunks[0].Type != client.ChildChunkTypeAutomatic || parent.ChildChunks[1].Position != 2 ||
			parent.ChildChunks[0].SegmentId != parent.Id || parent.ChildChunks[0].WordCount != utf8.RuneCountInString(parent.ChildChunks[0].Content) {
			t.Fatalf("children of the first parent: %+v", parent.ChildChunks)
		}
		seg := parent.Id.String()
		children := func(params *client.ListChildChunksParams) client.ChildChunkList {
			t.Helper()
			r, err := c.ListChildChunksWithResponse(ctx, ds, doc, seg, params)
			if err != nil {
				t.Fatal(err)
			}
			if r.JSON200 == nil {
				t.Fatalf("list child chunks: status %d, body %s", r.StatusCode(), r.Body)
			}
			return *r.JSON200
		}
		if got := children(nil); got.Total != 2 || got.TotalPages != 1 || got.Page != 1 || got.Limit != 20 || len(got.Data) != 2 {
			t.Fatalf("child chunks %+v", got)
		}
		if got := children(&client.ListChildChunksParams{Limit: ptr(1), Page: ptr(2)}); got.Total != 2 || got.TotalPages != 2 || len(got.Data) != 1 || got.Data[0].Position != 2 {
			t.Fatalf("page 2 of 1: %+v", got)
		}
		if got := children(&client.ListChildChunksParams{Keyword: ptr("expire")}); got.Total != 1 || got.Data[0].Position != 2 {
			t.Fatalf("keyword: %+v", got)
		}

		// Retrieval searches the children and returns the parent.
		res := retrieve(t, c, ds, "when do unused vacation days expire", &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 1})
		if len(res.Records) != 1 || res.Records[0].Segment.Id != parent.Id || len(res.Records[0].ChildChunks) == 0 {
			t.Fatalf("records %+v", res.Records)
		}
		rec := res.Records[0]
		if best := rec.ChildChunks[0]; best.Content != "Unused vacation days expire in March." || rec.Score == nil || *rec.Score != best.Score {
			t.Fatalf("best child %+v, record score %v", best, rec.Score)
		}

		// Create, update, delete a child chunk.
		cr, err := c.CreateChildChunkWithResponse(ctx, ds, doc, seg, client.CreateChildChunkJSONRequestBody{Content: "Carry-over of vacation needs approval."})
		if err != nil {
			t.Fatal(err)
		}
		if cr.JSON200 == nil {
			t.Fatalf("create child chunk: status %d, body %s", cr.StatusCode(), cr.Body)
		}
		child := cr.JSON200.Data
		if child.Type != client.ChildChunkTypeCustomized || child.Position != 3 || child.SegmentId != parent.Id || child.Content != "Carry-over of vacation needs approval." ||
			child.WordCount != utf8.RuneCountInString(child.Content) || child.CreatedAt == 0 {
			t.Fatalf("child %+v", child)
		}
		res = retrieve(t, c, ds, "carry-over of vacation approval", &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 1})
		if len(res.Records) != 1 || len(res.Records[0].ChildChunks) == 0 || res.Records[0].ChildChunks[0].Id != child.Id {
			t.Fatalf("new child not searchable: %+v", res.Records)
		}
		code, raw := rawCall(t, p, http.MethodPost, "/datasets/"+ds+"/documents/"+doc+"/segments/"+seg+"/child_chunks", `{"content":" "}`, p.KnowledgeKey)
		segErr(t, "empty child", code, raw, 400, "invalid_param", "Content is empty")

		up, err := c.UpdateChildChunkWithResponse(ctx, ds, doc, seg, child.Id.String(), client.UpdateChildChunkJSONRequestBody{Content: "Carry-over needs a manager's approval."})
		if err != nil {
			t.Fatal(err)
		}
		if up.JSON200 == nil || up.JSON200.Data.Content != "Carry-over needs a manager's approval." || up.JSON200.Data.Id != child.Id || up.JSON200.Data.Type != client.ChildChunkTypeCustomized {
			t.Fatalf("update child: status %d, body %s", up.StatusCode(), up.Body)
		}
		// Editing an automatic child makes it customized.
		auto := parent.ChildChunks[0]
		up, err = c.UpdateChildChunkWithResponse(ctx, ds, doc, seg, auto.Id.String(), client.UpdateChildChunkJSONRequestBody{Content: "Vacation days are granted each January."})
		if err != nil || up.JSON200 == nil || up.JSON200.Data.Type != client.ChildChunkTypeCustomized {
			t.Fatalf("update automatic child: %v %s", err, up.Body)
		}
		if r, _ := c.UpdateChildChunkWithResponse(ctx, ds, doc, seg, uuid.NewString(), client.UpdateChildChunkJSONRequestBody{Content: "x"}); r != nil {
			segErr(t, "unknown child", r.StatusCode(), r.Body, 404, "not_found", "Child chunk not found.")
		}
		del, err := c.DeleteChildChunkWithResponse(ctx, ds, doc, seg, child.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete child: status %d, body %s", del.StatusCode(), del.Body)
		}
		if got := children(nil); got.Total != 2 {
			t.Fatalf("after delete: %+v", got)
		}
		if r, _ := c.DeleteChildChunkWithResponse(ctx, ds, doc, seg, child.Id.String()); r != nil {
			segErr(t, "delete child twice", r.StatusCode(), r.Body, 404, "not_found", "Child chunk not found.")
		}
	})
}

func TestKnowledgeRetrieve(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.KnowledgeKey)
		hq := segDataset(t, c, "retrieval-hq", true)
		doc := indexText(t, c, hq, client.CreateDocumentByTextJSONRequestBody{Name: "policies", Text: handbookText, ProcessRule: paragraphRule()})
		eco := segDataset(t, c, "retrieval-economy", false)
		ecoDoc := indexText(t, c, eco, client.CreateDocumentByTextJSONRequestBody{Name: "policies", Text: handbookText, ProcessRule: paragraphRule()})

		const q = "how many days of paid vacation does an employee receive"
		check := func(name string, res client.RetrieveResult, ds, docID string, scored bool) {
			t.Helper()
			if len(res.Records) == 0 {
				t.Fatalf("%s: no records", name)
			}
			top := res.Records[0]
			if !strings.HasPrefix(top.Segment.Content, "Vacation policy") {
				t.Errorf("%s: top record %q", name, top.Segment.Content)
			}
			for i, r := range res.Records {
				s := r.Segment
				d := s.Document
				if s.DocumentId.String() != docID || d.Id.String() != docID || !strings.HasPrefix(d.Name, "policies") || d.DataSourceType != "upload_file" ||
					d.DocType != nil || s.SignContent != s.Content || s.Keywords == nil || s.Status != client.SegmentStatusCompleted ||
					!s.Enabled || s.IndexNodeId == "" || s.IndexNodeHash == "" || s.WordCount != utf8.RuneCountInString(s.Content) ||
					r.ChildChunks == nil || len(r.ChildChunks) != 0 || r.TsnePosition != nil || r.Files == nil || len(r.Files) != 0 || r.Summary != nil {
					t.Errorf("%s: record %d: %+v", name, i, r)
				}
				if scored != (r.Score != nil) {
					t.Errorf("%s: record %d score %v, want scored=%v", name, i, r.Score, scored)
				}
				if scored && i > 0 && *r.Score > *res.Records[i-1].Score {
					t.Errorf("%s: records not best first", name)
				}
			}
		}

		// Each search method of a high-quality knowledge base.
		rerank := &client.RerankingModel{RerankingProviderName: ptr("langgenius/openai/openai"), RerankingModelName: ptr("jina-reranker-v2-base-multilingual")}
		for name, rm := range map[string]*client.RetrievalModel{
			"default":   nil,
			"semantic":  {SearchMethod: client.SemanticSearch, TopK: 3},
			"full_text": {SearchMethod: client.FullTextSearch, TopK: 3},
			"hybrid weighted": {SearchMethod: client.HybridSearch, TopK: 3, RerankingEnable: false,
				RerankingMode: ptr(client.RetrievalModelRerankingModeWeightedScore),
				Weights: &client.RetrievalWeights{WeightType: ptr(client.RetrievalWeightsWeightTypeCustomized),
					VectorSetting:  &client.RetrievalWeights_VectorSetting{VectorWeight: 0.6, EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small"},
					KeywordSetting: &client.RetrievalWeights_KeywordSetting{KeywordWeight: 0.4}}},
			"semantic reranked": {SearchMethod: client.SemanticSearch, TopK: 3, RerankingEnable: true,
				RerankingMode: ptr(client.RetrievalModelRerankingModeRerankingModel), RerankingModel: rerank},
		} {
			res := retrieve(t, c, hq, q, rm)
			check(name, res, hq, doc, true)
			if rm != nil && len(res.Records) > rm.TopK {
				t.Errorf("%s: %d records, top_k %d", name, len(res.Records), rm.TopK)
			}
		}
		if res := retrieve(t, c, hq, q, nil); len(res.Records) > 4 {
			t.Errorf("default top_k: %d records", len(res.Records))
		}
		// The reranker's scores replace the search's.
		up := upstream.Requests()
		reranked := false
		for _, r := range up {
			if strings.HasSuffix(r.Path, "/rerank") && strings.Contains(string(r.Body), q) {
				reranked = true
			}
		}
		if !reranked {
			t.Errorf("no rerank request reached the upstream")
		}

		// top_k and the score threshold.
		if res := retrieve(t, c, hq, q, &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 1}); len(res.Records) != 1 {
			t.Errorf("top_k 1: %d records", len(res.Records))
		}
		all := retrieve(t, c, hq, q, &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 10})
		if len(all.Records) != 4 {
			t.Fatalf("top_k 10: %d records", len(all.Records))
		}
		threshold := (*all.Records[0].Score + *all.Records[1].Score) / 2
		res := retrieve(t, c, hq, q, &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 10, ScoreThresholdEnabled: true, ScoreThreshold: &threshold})
		if len(res.Records) != 1 || res.Records[0].Segment.Id != all.Records[0].Segment.Id {
			t.Errorf("threshold %v: %d records", threshold, len(res.Records))
		}
		res = retrieve(t, c, hq, q, &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 10, ScoreThresholdEnabled: false, ScoreThreshold: &threshold})
		if len(res.Records) != 4 {
			t.Errorf("threshold disabled: %d records", len(res.Records))
		}

		// hit-testing is the same operation.
		ht, err := c.HitTestingWithResponse(ctx, hq, client.HitTestingJSONRequestBody{Query: ptr(q), RetrievalModel: &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if ht.JSON200 == nil || len(ht.JSON200.Records) != 4 || ht.JSON200.Query.Content != q {
			t.Fatalf("hit-testing: status %d, body %s", ht.StatusCode(), ht.Body)
		}
		for i := range ht.JSON200.Records {
			if ht.JSON200.Records[i].Segment.Id != all.Records[i].Segment.Id || *ht.JSON200.Records[i].Score != *all.Records[i].Score {
				t.Errorf("hit-testing record %d differs from retrieve", i)
			}
		}

		// An economy knowledge base searches by keyword, without scores.
		ecoRes := retrieve(t, c, eco, "paid vacation days", &client.RetrievalModel{SearchMethod: client.KeywordSearch, TopK: 2})
		check("keyword", ecoRes, eco, ecoDoc, false)
		if kw := ecoRes.Records[0].Segment.Keywords; !strings.Contains(strings.Join(kw, ","), "vacation") {
			t.Errorf("economy chunk keywords %q", kw)
		}
		if len(ecoRes.Records) > 2 {
			t.Errorf("keyword top_k 2: %d records", len(ecoRes.Records))
		}
		check("economy default", retrieve(t, c, eco, "paid vacation days", nil), eco, ecoDoc, false)

		// Hit counts are not changed by retrieval.
		if s := getSegment(t, c, hq, doc, all.Records[0].Segment.Id.String()); s.HitCount != 0 {
			t.Errorf("hit_count after retrieval: %d", s.HitCount)
		}

		// Errors.
		long := strings.Repeat("a", 251)
		for _, path := range []string{"/retrieve", "/hit-testing"} {
			code, raw := rawCall(t, p, http.MethodPost, "/datasets/"+hq+path, `{"query":"`+long+`"}`, p.KnowledgeKey)
			segErr(t, "long query "+path, code, raw, 400, "invalid_param", "Query cannot exceed 250 characters")
			code, raw = rawCall(t, p, http.MethodPost, "/datasets/"+hq+path, `{"query":"`+strings.Repeat("é", 250)+`"}`, p.KnowledgeKey)
			if code != 200 {
				t.Errorf("250-character query %s: status %d, body %s", path, code, raw)
			}
			code, raw = rawCall(t, p, http.MethodPost, "/datasets/"+hq+path, `{}`, p.KnowledgeKey)
			segErr(t, "no query "+path, code, raw, 400, "invalid_param", "Query or attachment_ids is required")
			code, raw = rawCall(t, p, http.MethodPost, "/datasets/"+uuid.NewString()+path, `{"query":"vacation"}`, p.KnowledgeKey)
			segErr(t, "unknown dataset "+path, code, raw, 404, "not_found", "Dataset not found.")
		}
		code, raw := rawCall(t, p, http.MethodPost, "/datasets/"+hq+"/retrieve", `{"query":"vacation","retrieval_model":{"search_method":"semantic_search","reranking_enable":true,"reranking_mode":"reranking_model","reranking_model":{"reranking_provider_name":"openai","reranking_model_name":"no-such-reranker"},"top_k":2,"score_threshold_enabled":false}}`, p.KnowledgeKey)
		if code != 400 {
			t.Errorf("unknown rerank model: status %d, body %s", code, raw)
		}
	})
}

// TestKnowledgeKeywordSearchIgnoresCase: an economy knowledge base's keyword search finds a chunk
// whatever the case of its keywords and of the query (Dify's is case-sensitive; users take it
// for a bug), in scripts with case beyond ASCII too.
func TestKnowledgeKeywordSearchIgnoresCase(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		eco := segDataset(t, c, "keyword-case", false)
		indexText(t, c, eco, client.CreateDocumentByTextJSONRequestBody{Name: "birds",
			Text: "Penguins cannot fly.\n\nΟΙ ΠΙΓΚΟΥΙΝΟΙ κολυμπούν.\n\nOwls hunt at night.", ProcessRule: paragraphRule()})
		for _, q := range []string{"penguins", "PENGUINS", "Penguins", "πιγκουινοι"} {
			res := retrieve(t, c, eco, q, nil)
			if len(res.Records) != 1 || !strings.HasPrefix(res.Records[0].Segment.Content, "Penguins") && !strings.Contains(res.Records[0].Segment.Content, "ΠΙΓΚΟΥΙΝΟΙ") {
				t.Errorf("%q: %d records %+v", q, len(res.Records), res.Records)
			}
		}
	})
}
