package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
)

// mustDataset creates a knowledge base and returns it.
func mustDataset(t *testing.T, c *client.ClientWithResponses, body client.CreateDatasetJSONRequestBody) client.Dataset {
	t.Helper()
	r, err := c.CreateDatasetWithResponse(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil {
		t.Fatalf("create dataset %q: status %d, body %s", body.Name, r.StatusCode(), r.Body)
	}
	return *r.JSON200
}

// wantError checks an error response's status and code (any code when wantCode is "").
func wantError(t *testing.T, what string, status int, body []byte, wantStatus int, wantCode string) {
	t.Helper()
	segErr(t, what, status, body, wantStatus, wantCode, "")
}

// indexTextDocument creates a document from text in the dataset and waits until it is indexed;
// it returns the document id.
// indexTextDocument adds an economy document from text and waits until it is indexed.
func (p *Parley) indexTextDocument(t *testing.T, datasetID, name, text string) string {
	t.Helper()
	return indexText(t, newClient(t, p, p.KnowledgeKey), datasetID, client.CreateDocumentByTextJSONRequestBody{
		Name: name, Text: text, IndexingTechnique: ptr(client.Economy), ProcessRule: &client.ProcessRule{Mode: "automatic"}})
}

// TestKnowledgeDatasets covers create, list, get, update and delete of knowledge bases.
func TestKnowledgeDatasets(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.KnowledgeKey)

		// Create: an economy knowledge base with the defaults filled in.
		econ := mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: "Manuals", Description: ptr("Every manual."),
			IndexingTechnique: ptr(client.IndexingTechnique("economy"))})
		if econ.Name != "Manuals" || econ.Description != "Every manual." || econ.Provider != "vendor" || econ.Permission != "only_me" {
			t.Errorf("created dataset: %+v", econ)
		}
		if econ.IndexingTechnique == nil || *econ.IndexingTechnique != "economy" || econ.RetrievalModelDict.SearchMethod != "keyword_search" {
			t.Errorf("economy dataset: technique %v, search method %q", econ.IndexingTechnique, econ.RetrievalModelDict.SearchMethod)
		}
		if econ.AuthorName == nil || *econ.AuthorName != "Conformance" || !econ.EnableApi || econ.IsPublished || econ.IsMultimodal {
			t.Errorf("author %v, enable_api %v, is_published %v, is_multimodal %v", econ.AuthorName, econ.EnableApi, econ.IsPublished, econ.IsMultimodal)
		}
		if econ.DocumentCount != 0 || econ.TotalDocuments != 0 || econ.AppCount != 0 || len(econ.Tags) != 0 || len(econ.DocMetadata) != 0 {
			t.Errorf("new dataset counts: %+v", econ)
		}
		if econ.PartialMemberList != nil {
			t.Errorf("create response has partial_member_list %v", *econ.PartialMemberList)
		}

		// A high-quality knowledge base without a model gets the workspace's embedding model.
		hq := mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: "Policies", IndexingTechnique: ptr(client.IndexingTechnique("high_quality"))})
		if hq.EmbeddingModel == nil || *hq.EmbeddingModel != "text-embedding-3-small" || hq.EmbeddingModelProvider == nil || *hq.EmbeddingModelProvider != "openai" || !hq.EmbeddingAvailable {
			t.Errorf("high-quality dataset: model %v provider %v available %v", hq.EmbeddingModel, hq.EmbeddingModelProvider, hq.EmbeddingAvailable)
		}
		if hq.RetrievalModelDict.SearchMethod != "semantic_search" || hq.RetrievalModelDict.TopK != 2 {
			t.Errorf("default retrieval model: %+v", hq.RetrievalModelDict)
		}
		// Without a technique it stays null until the first document.
		blank := mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: "Blank"})
		if blank.IndexingTechnique != nil || blank.EmbeddingModel != nil || blank.DataSourceType != nil || blank.DocForm != nil {
			t.Errorf("dataset without technique: %+v", blank)
		}

		// Create refusals.
		r, err := c.CreateDatasetWithResponse(ctx, client.CreateDatasetJSONRequestBody{Name: "Manuals"})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "duplicate name", r.StatusCode(), r.Body, http.StatusConflict, "dataset_name_duplicate")
		status, raw := rawCall(t, p, "POST", "/datasets", `{"description": "no name"}`, p.KnowledgeKey)
		wantError(t, "missing name", status, raw, http.StatusBadRequest, "")
		status, raw = rawCall(t, p, "POST", "/datasets", `{"name": "x", "indexing_technique": "high_quality", "embedding_model": "nope", "embedding_model_provider": "openai"}`, p.KnowledgeKey)
		wantError(t, "unknown embedding model", status, raw, http.StatusBadRequest, "")

		// List: keyword, paging, Dify's has_more, and limit capped at 100.
		for i := 1; i <= 3; i++ {
			mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: fmt.Sprintf("Paged %d", i)})
		}
		lr, err := c.ListDatasetsWithResponse(ctx, &client.ListDatasetsParams{Keyword: ptr("paged"), Limit: ptr(2)})
		if err != nil {
			t.Fatal(err)
		}
		if lr.JSON200 == nil {
			t.Fatalf("list: %d %s", lr.StatusCode(), lr.Body)
		}
		if l := lr.JSON200; len(l.Data) != 2 || !l.HasMore || l.Total != 3 || l.Page != 1 || l.Limit != 2 {
			t.Errorf("page 1: %d items, has_more %v, total %d, page %d, limit %d", len(l.Data), l.HasMore, l.Total, l.Page, l.Limit)
		}
		lr, err = c.ListDatasetsWithResponse(ctx, &client.ListDatasetsParams{Keyword: ptr("paged"), Limit: ptr(2), Page: ptr(2)})
		if err != nil {
			t.Fatal(err)
		}
		if l := lr.JSON200; l == nil || len(l.Data) != 1 || l.HasMore || l.Total != 3 || l.Page != 2 {
			t.Errorf("page 2: %s", lr.Body)
		}
		lr, err = c.ListDatasetsWithResponse(ctx, &client.ListDatasetsParams{Limit: ptr(500)})
		if err != nil {
			t.Fatal(err)
		}
		if l := lr.JSON200; l == nil || l.Limit != 100 || l.Total != 7 || len(l.Data) != 7 || l.HasMore {
			t.Errorf("limit 500: %s", lr.Body)
		}
		lr, err = c.ListDatasetsWithResponse(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l := lr.JSON200; l == nil || l.Limit != 20 || l.Page != 1 {
			t.Errorf("default page: %s", lr.Body)
		}

		// Get.
		g, err := c.GetDatasetWithResponse(ctx, econ.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if g.JSON200 == nil || g.JSON200.Id != econ.Id || g.JSON200.Name != "Manuals" {
			t.Errorf("get: %d %s", g.StatusCode(), g.Body)
		}
		for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
			g, err := c.GetDatasetWithResponse(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "get "+id, g.StatusCode(), g.Body, http.StatusNotFound, "not_found")
			if g.JSON404 != nil && g.JSON404.Message != "Dataset not found." {
				t.Errorf("get %s: message %q", id, g.JSON404.Message)
			}
		}

		// Update: the members given change, the response carries partial_member_list.
		u, err := c.UpdateDatasetWithResponse(ctx, hq.Id.String(), client.UpdateDatasetJSONRequestBody{
			Name: ptr("Policies 2026"), Description: ptr("Current policies."),
			Permission: ptr(client.DatasetPermission("all_team_members")),
			RetrievalModel: &client.RetrievalModel{SearchMethod: "hybrid_search", TopK: 5,
				RerankingMode: ptr(client.RetrievalModelRerankingMode("weighted_score")),
				Weights:       &client.RetrievalWeights{WeightType: ptr(client.RetrievalWeightsWeightType("keyword_first"))}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if u.JSON200 == nil {
			t.Fatalf("update: %d %s", u.StatusCode(), u.Body)
		}
		if d := u.JSON200; d.Name != "Policies 2026" || d.Description != "Current policies." || d.Permission != "all_team_members" ||
			d.RetrievalModelDict.SearchMethod != "hybrid_search" || d.RetrievalModelDict.TopK != 5 ||
			d.PartialMemberList == nil || len(*d.PartialMemberList) != 0 || *d.EmbeddingModel != "text-embedding-3-small" {
			t.Errorf("updated: %s", u.Body)
		}
		g, err = c.GetDatasetWithResponse(ctx, hq.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if d := g.JSON200; d == nil || d.Name != "Policies 2026" || d.RetrievalModelDict.TopK != 5 {
			t.Errorf("get after update: %s", g.Body)
		}
		u, err = c.UpdateDatasetWithResponse(ctx, hq.Id.String(), client.UpdateDatasetJSONRequestBody{Name: ptr("Manuals")})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "rename to a taken name", u.StatusCode(), u.Body, http.StatusBadRequest, "invalid_param")
		u, err = c.UpdateDatasetWithResponse(ctx, uuid.NewString(), client.UpdateDatasetJSONRequestBody{Name: ptr("x")})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "update unknown", u.StatusCode(), u.Body, http.StatusNotFound, "not_found")

		// Delete, then it is gone.
		del, err := c.DeleteDatasetWithResponse(ctx, econ.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if del.StatusCode() != http.StatusNoContent || len(del.Body) != 0 {
			t.Errorf("delete: %d %q", del.StatusCode(), del.Body)
		}
		g, err = c.GetDatasetWithResponse(ctx, econ.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "get deleted", g.StatusCode(), g.Body, http.StatusNotFound, "not_found")
		del, err = c.DeleteDatasetWithResponse(ctx, econ.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "delete deleted", del.StatusCode(), del.Body, http.StatusNotFound, "not_found")

		// The seeded handbook is used by the librarian app: it reports that and cannot go.
		lr, err = c.ListDatasetsWithResponse(ctx, &client.ListDatasetsParams{Keyword: ptr("handbook")})
		if err != nil {
			t.Fatal(err)
		}
		if lr.JSON200 == nil || len(lr.JSON200.Data) != 1 {
			t.Fatalf("handbook: %s", lr.Body)
		}
		handbook := lr.JSON200.Data[0]
		if handbook.AppCount != 1 || handbook.IndexingTechnique == nil || *handbook.IndexingTechnique != "high_quality" {
			t.Errorf("handbook: app_count %d, technique %v", handbook.AppCount, handbook.IndexingTechnique)
		}
		del, err = c.DeleteDatasetWithResponse(ctx, handbook.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "delete handbook", del.StatusCode(), del.Body, http.StatusConflict, "dataset_in_use")

		// An app key is no knowledge key.
		ac := newClient(t, p, p.AppKey)
		ar, err := ac.ListDatasetsWithResponse(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "app key", ar.StatusCode(), ar.Body, http.StatusUnauthorized, "unauthorized")
		ag, err := ac.GetDatasetWithResponse(ctx, handbook.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "app key get", ag.StatusCode(), ag.Body, http.StatusUnauthorized, "unauthorized")
	})
}

// TestKnowledgeTags covers the workspace's knowledge tags and their bindings.
func TestKnowledgeTags(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.KnowledgeKey)
		ds := mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: "Tagged"})
		other := mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: "Untagged"})

		cr, err := c.CreateTagWithResponse(ctx, client.CreateTagJSONRequestBody{Name: "alpha"})
		if err != nil {
			t.Fatal(err)
		}
		if cr.JSON200 == nil {
			t.Fatalf("create tag: %d %s", cr.StatusCode(), cr.Body)
		}
		tag := *cr.JSON200
		if tag.Name != "alpha" || tag.Type != "knowledge" || tag.BindingCount == nil || *tag.BindingCount != "0" {
			t.Errorf("created tag: %s", cr.Body)
		}
		if !strings.Contains(string(cr.Body), `"binding_count":"0"`) {
			t.Errorf("binding_count is not the string \"0\": %s", cr.Body)
		}
		cr, err = c.CreateTagWithResponse(ctx, client.CreateTagJSONRequestBody{Name: "alpha"})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "duplicate tag", cr.StatusCode(), cr.Body, http.StatusBadRequest, "invalid_param")

		ur, err := c.UpdateTagWithResponse(ctx, client.UpdateTagJSONRequestBody{TagId: tag.Id.String(), Name: "beta"})
		if err != nil {
			t.Fatal(err)
		}
		if ur.JSON200 == nil || ur.JSON200.Name != "beta" || ur.JSON200.Id != tag.Id {
			t.Errorf("rename tag: %d %s", ur.StatusCode(), ur.Body)
		}
		ur, err = c.UpdateTagWithResponse(ctx, client.UpdateTagJSONRequestBody{TagId: uuid.NewString(), Name: "gamma"})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "rename unknown tag", ur.StatusCode(), ur.Body, http.StatusNotFound, "not_found")

		// Bind, and the binding shows everywhere.
		br, err := c.BindTagsWithResponse(ctx, client.BindTagsJSONRequestBody{TagIds: []string{tag.Id.String(), uuid.NewString()}, TargetId: ds.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		if br.StatusCode() != http.StatusNoContent {
			t.Errorf("bind: %d %s", br.StatusCode(), br.Body)
		}
		dt, err := c.ListDatasetTagsWithResponse(ctx, ds.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if dt.JSON200 == nil || dt.JSON200.Total != 1 || len(dt.JSON200.Data) != 1 || dt.JSON200.Data[0].Name != "beta" {
			t.Errorf("dataset tags: %d %s", dt.StatusCode(), dt.Body)
		}
		lt, err := c.ListTagsWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lt.JSON200 == nil || len(*lt.JSON200) != 1 || (*lt.JSON200)[0].BindingCount == nil || *(*lt.JSON200)[0].BindingCount != "1" {
			t.Errorf("tags: %d %s", lt.StatusCode(), lt.Body)
		}
		g, err := c.GetDatasetWithResponse(ctx, ds.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if g.JSON200 == nil || len(g.JSON200.Tags) != 1 || g.JSON200.Tags[0].Id != tag.Id || g.JSON200.Tags[0].Type != "knowledge" {
			t.Errorf("dataset with tag: %s", g.Body)
		}
		lr, err := c.ListDatasetsWithResponse(ctx, &client.ListDatasetsParams{TagIds: &[]string{tag.Id.String()}})
		if err != nil {
			t.Fatal(err)
		}
		if lr.JSON200 == nil || lr.JSON200.Total != 1 || lr.JSON200.Data[0].Id != ds.Id {
			t.Errorf("datasets by tag: %s", lr.Body)
		}

		// Binding refusals.
		br, err = c.BindTagsWithResponse(ctx, client.BindTagsJSONRequestBody{TagIds: []string{}, TargetId: ds.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "bind no tags", br.StatusCode(), br.Body, http.StatusBadRequest, "invalid_param")
		if br.JSON400 != nil && br.JSON400.Message != "Tag IDs is required." {
			t.Errorf("bind no tags: message %q", br.JSON400.Message)
		}
		br, err = c.BindTagsWithResponse(ctx, client.BindTagsJSONRequestBody{TagIds: []string{tag.Id.String()}, TargetId: uuid.NewString()})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "bind to unknown dataset", br.StatusCode(), br.Body, http.StatusNotFound, "not_found")

		// Unbind with the legacy single tag_id the SDKs send; unbinding from another dataset is a no-op.
		nr, err := c.UnbindTagsWithResponse(ctx, client.UnbindTagsJSONRequestBody{TagId: ptr(tag.Id.String()), TargetId: other.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		if nr.StatusCode() != http.StatusNoContent {
			t.Errorf("unbind elsewhere: %d %s", nr.StatusCode(), nr.Body)
		}
		nr, err = c.UnbindTagsWithResponse(ctx, client.UnbindTagsJSONRequestBody{TagId: ptr(tag.Id.String()), TargetId: ds.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		if nr.StatusCode() != http.StatusNoContent {
			t.Errorf("unbind: %d %s", nr.StatusCode(), nr.Body)
		}
		nr, err = c.UnbindTagsWithResponse(ctx, client.UnbindTagsJSONRequestBody{TargetId: ds.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "unbind nothing", nr.StatusCode(), nr.Body, http.StatusBadRequest, "invalid_param")
		dt, err = c.ListDatasetTagsWithResponse(ctx, ds.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if dt.JSON200 == nil || dt.JSON200.Total != 0 || len(dt.JSON200.Data) != 0 {
			t.Errorf("dataset tags after unbind: %s", dt.Body)
		}
		dt, err = c.ListDatasetTagsWithResponse(ctx, "nope")
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "tags of unknown dataset", dt.StatusCode(), dt.Body, http.StatusNotFound, "not_found")

		// Bind again, then delete the tag with its bindings.
		if br, err = c.BindTagsWithResponse(ctx, client.BindTagsJSONRequestBody{TagIds: []string{tag.Id.String()}, TargetId: ds.Id.String()}); err != nil || br.StatusCode() != http.StatusNoContent {
			t.Fatalf("bind again: %v %v", err, br)
		}
		dr, err := c.DeleteTagWithResponse(ctx, client.DeleteTagJSONRequestBody{TagId: tag.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		if dr.StatusCode() != http.StatusNoContent {
			t.Errorf("delete tag: %d %s", dr.StatusCode(), dr.Body)
		}
		dr, err = c.DeleteTagWithResponse(ctx, client.DeleteTagJSONRequestBody{TagId: tag.Id.String()})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "delete deleted tag", dr.StatusCode(), dr.Body, http.StatusNotFound, "not_found")
		lt, err = c.ListTagsWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lt.JSON200 == nil || len(*lt.JSON200) != 0 {
			t.Errorf("tags after delete: %s", lt.Body)
		}
		dt, err = c.ListDatasetTagsWithResponse(ctx, ds.Id.String())
		if err != nil {
			t.Fatal(err)
		}
		if dt.JSON200 == nil || dt.JSON200.Total != 0 {
			t.Errorf("dataset tags after tag delete: %s", dt.Body)
		}
	})
}

// TestKnowledgeMetadata covers metadata fields, the built-in fields and documents' values.
func TestKnowledgeMetadata(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.KnowledgeKey)
		ds := mustDataset(t, c, client.CreateDatasetJSONRequestBody{Name: "With metadata"})
		id := ds.Id.String()

		cr, err := c.CreateMetadataFieldWithResponse(ctx, id, client.CreateMetadataFieldJSONRequestBody{Name: "author", Type: "string"})
		if err != nil {
			t.Fatal(err)
		}
		if cr.StatusCode() != http.StatusCreated || cr.JSON201 == nil || cr.JSON201.Name != "author" || cr.JSON201.Type != "string" {
			t.Fatalf("create field: %d %s", cr.StatusCode(), cr.Body)
		}
		field := *cr.JSON201
		if _, err := uuid.Parse(field.Id); err != nil {
			t.Errorf("field id %q: %v", field.Id, err)
		}
		for _, tc := range []struct{ name, typ, what string }{
			{"author", "string", "duplicate"}, {"document_name", "string", "built-in name"}, {strings.Repeat("n", 256), "number", "too long"},
		} {
			r, err := c.CreateMetadataFieldWithResponse(ctx, id, client.CreateMetadataFieldJSONRequestBody{Name: tc.name, Type: client.MetadataType(tc.typ)})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "create field: "+tc.what, r.StatusCode(), r.Body, http.StatusBadRequest, "invalid_param")
		}
		r404, err := c.CreateMetadataFieldWithResponse(ctx, uuid.NewString(), client.CreateMetadataFieldJSONRequestBody{Name: "x", Type: "string"})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "field of unknown dataset", r404.StatusCode(), r404.Body, http.StatusNotFound, "not_found")

		ur, err := c.UpdateMetadataFieldWithResponse(ctx, id, field.Id, client.UpdateMetadataFieldJSONRequestBody{Name: "writer"})
		if err != nil {
			t.Fatal(err)
		}
		if ur.JSON200 == nil || ur.JSON200.Name != "writer" || ur.JSON200.Id != field.Id {
			t.Errorf("rename field: %d %s", ur.StatusCode(), ur.Body)
		}
		ur, err = c.UpdateMetadataFieldWithResponse(ctx, id, uuid.NewString(), client.UpdateMetadataFieldJSONRequestBody{Name: "other"})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "rename unknown field", ur.StatusCode(), ur.Body, http.StatusNotFound, "not_found")

		// Built-in fields: listed, switched on (the dataset then lists them), switched off.
		bl, err := c.ListBuiltInMetadataFieldsWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if bl.JSON200 == nil || len(bl.JSON200.Fields) != 5 || bl.JSON200.Fields[0].Name != "document_name" || bl.JSON200.Fields[2].Type != "time" {
			t.Errorf("built-in fields: %d %s", bl.StatusCode(), bl.Body)
		}
		tr, err := c.ToggleBuiltInMetadataWithResponse(ctx, id, "enable")
		if err != nil {
			t.Fatal(err)
		}
		if tr.JSON200 == nil || tr.JSON200.Result != "success" {
			t.Errorf("enable built-in: %d %s", tr.StatusCode(), tr.Body)
		}
		g, err := c.GetDatasetWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d := g.JSON200; d == nil || !d.BuiltInFieldEnabled || len(d.DocMetadata) != 6 || d.DocMetadata[0].Name != "writer" || d.DocMetadata[1].Id != "built-in" || d.DocMetadata[5].Name != "source" {
			t.Errorf("dataset with built-in fields: %s", g.Body)
		}
		tr, err = c.ToggleBuiltInMetadataWithResponse(ctx, id, "bogus")
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "toggle bogus", tr.StatusCode(), tr.Body, http.StatusBadRequest, "")
		if tr, err = c.ToggleBuiltInMetadataWithResponse(ctx, id, "disable"); err != nil || tr.JSON200 == nil {
			t.Fatalf("disable built-in: %v %v", err, tr)
		}

		// Documents' values, counted by the field listing.
		doc := p.indexTextDocument(t, id, "Metadata doc", "Parley keeps metadata on documents. Every document can carry values.")
		g, err = c.GetDatasetWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d := g.JSON200; d == nil || d.DocumentCount != 1 || d.TotalDocuments != 1 || d.TotalAvailableDocuments != 1 || d.WordCount == 0 ||
			d.IndexingTechnique == nil || *d.IndexingTechnique != "economy" {
			t.Errorf("dataset with a document: %s", g.Body)
		}
		value := func(v any) *client.MetadataValue_Value {
			var out client.MetadataValue_Value
			raw, _ := json.Marshal(v)
			if err := out.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
			return &out
		}
		mr, err := c.UpdateDocumentsMetadataWithResponse(ctx, id, client.UpdateDocumentsMetadataJSONRequestBody{OperationData: []client.DocumentMetadataOperation{{
			DocumentId: doc, MetadataList: []client.MetadataValue{{Id: field.Id, Name: "writer", Value: value("Ann")}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if mr.JSON200 == nil || mr.JSON200.Result != "success" {
			t.Errorf("documents metadata: %d %s", mr.StatusCode(), mr.Body)
		}
		lr, err := c.ListMetadataFieldsWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if l := lr.JSON200; l == nil || l.BuiltInFieldEnabled || len(l.DocMetadata) != 1 || l.DocMetadata[0].Name != "writer" || l.DocMetadata[0].Count != 1 {
			t.Errorf("fields with a value: %s", lr.Body)
		}
		for _, tc := range []struct {
			what string
			op   client.DocumentMetadataOperation
		}{
			{"unknown document", client.DocumentMetadataOperation{DocumentId: uuid.NewString(), MetadataList: []client.MetadataValue{{Id: field.Id, Name: "writer", Value: value("x")}}}},
			{"unknown field", client.DocumentMetadataOperation{DocumentId: doc, MetadataList: []client.MetadataValue{{Id: uuid.NewString(), Name: "nope", Value: value(1)}}}},
		} {
			r, err := c.UpdateDocumentsMetadataWithResponse(ctx, id, client.UpdateDocumentsMetadataJSONRequestBody{OperationData: []client.DocumentMetadataOperation{tc.op}})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "documents metadata: "+tc.what, r.StatusCode(), r.Body, http.StatusBadRequest, "invalid_param")
		}
		// Replacing with an empty list removes the value.
		mr, err = c.UpdateDocumentsMetadataWithResponse(ctx, id, client.UpdateDocumentsMetadataJSONRequestBody{OperationData: []client.DocumentMetadataOperation{{
			DocumentId: doc, MetadataList: []client.MetadataValue{},
		}}})
		if err != nil || mr.JSON200 == nil {
			t.Fatalf("clear metadata: %v %v", err, mr)
		}
		lr, err = c.ListMetadataFieldsWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if l := lr.JSON200; l == nil || len(l.DocMetadata) != 1 || l.DocMetadata[0].Count != 0 {
			t.Errorf("fields after clearing: %s", lr.Body)
		}

		// Delete.
		dr, err := c.DeleteMetadataFieldWithResponse(ctx, id, field.Id)
		if err != nil {
			t.Fatal(err)
		}
		if dr.StatusCode() != http.StatusNoContent {
			t.Errorf("delete field: %d %s", dr.StatusCode(), dr.Body)
		}
		dr, err = c.DeleteMetadataFieldWithResponse(ctx, id, field.Id)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "delete deleted field", dr.StatusCode(), dr.Body, http.StatusNotFound, "not_found")
		lr, err = c.ListMetadataFieldsWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if l := lr.JSON200; l == nil || len(l.DocMetadata) != 0 {
			t.Errorf("fields after delete: %s", lr.Body)
		}
	})
}
