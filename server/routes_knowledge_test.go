package server

import (
	"errors"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/parleyhq/parley/api"
)

// knowledgeRouter is kin-openapi's router over the contract, mounted as New mounts it.
func knowledgeRouter(t *testing.T) routers.Router {
	t.Helper()
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = openapi3.Servers{{URL: BasePath}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// TestKnowledgeRoutesResolve pins how the validator's router resolves knowledge paths that put a
// literal segment where another path has a parameter (/datasets/tags beside
// /datasets/{dataset_id}, documents/status/{action} and documents/metadata beside
// documents/{document_id}, metadata/built-in beside metadata/{metadata_id}). Dify tells them
// apart because its ids only match UUIDs (docs/dify-compat.md, "Ids in paths"); the contract declares
// ids as plain strings, so the router must prefer the literal paths.
func TestKnowledgeRoutesResolve(t *testing.T) {
	t.Parallel()
	router := knowledgeRouter(t)
	const ds = "/v1/datasets/0190f5a2-6d1e-7c3b-9a4f-2b8c1d7e5f60"
	for _, tc := range []struct {
		method, path, op string
	}{
		{"GET", "/v1/datasets/tags", "listTags"},
		{"POST", "/v1/datasets/tags", "createTag"},
		{"PATCH", "/v1/datasets/tags", "updateTag"},
		{"DELETE", "/v1/datasets/tags", "deleteTag"},
		{"POST", "/v1/datasets/tags/binding", "bindTags"},
		{"POST", "/v1/datasets/tags/unbinding", "unbindTags"},
		{"PATCH", "/v1/datasets/x/documents/status/enable", "updateDocumentStatus"},
		{"PATCH", ds + "/documents/status/disable", "updateDocumentStatus"},
		{"PATCH", ds + "/documents/status/archive", "updateDocumentStatus"},
		{"PATCH", ds + "/documents/status/un_archive", "updateDocumentStatus"},
		{"PATCH", ds + "/documents/status/bogus", "updateDocumentStatus"}, // the handler answers invalid_action
		{"GET", "/v1/datasets/x/metadata/built-in", "listBuiltInMetadataFields"},
		{"POST", ds + "/metadata/built-in/enable", "toggleBuiltInMetadata"},
		{"POST", "/v1/datasets/x/documents/metadata", "updateDocumentsMetadata"},
		{"POST", ds + "/documents/download-zip", "downloadDocumentsZip"},
		{"POST", "/v1/datasets/pipeline/file-upload", "uploadPipelineFile"},
		{"GET", ds + "/pipeline/datasource-plugins", "listPipelineDatasources"},
		{"POST", ds + "/pipeline/run", "runPipeline"},
		{"GET", "/v1/files/tools/x.png", "getToolFile"},
		{"GET", "/v1/files/x/preview", "previewFile"},
		{"GET", "/v1/files/x/file-preview", "getSignedFile"},
		{"POST", "/v1/files/upload", "uploadFile"},
		// The parameter paths beside them still reach their own operations.
		{"GET", "/v1/datasets/x", "getDataset"},
		{"PATCH", "/v1/datasets/x", "updateDataset"},
		{"DELETE", "/v1/datasets/x", "deleteDataset"},
		{"GET", ds + "/tags", "listDatasetTags"},
		{"GET", ds + "/documents/d", "getDocument"},
		{"PATCH", ds + "/documents/d", "updateDocument"},
		{"DELETE", ds + "/documents/d", "deleteDocument"},
		{"GET", ds + "/documents/20250306150245647595/indexing-status", "getDocumentIndexingStatus"},
		{"GET", ds + "/documents/d/download", "getDocumentDownload"},
		{"GET", ds + "/documents/d/upload-file", "getDocumentUploadFile"},
		{"GET", "/v1/", "getServiceInfo"},
		{"PATCH", ds + "/metadata/m", "updateMetadataField"},
		{"DELETE", ds + "/metadata/m", "deleteMetadataField"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			route, _, err := router.FindRoute(httptest.NewRequest(tc.method, tc.path, nil))
			if err != nil {
				t.Fatalf("no route: %v", err)
			}
			if got := route.Operation.OperationID; got != tc.op {
				t.Fatalf("routed to %s (%s), want %s", got, route.Path, tc.op)
			}
		})
	}
}

// TestKnowledgeLiteralPathsDoNotFallThrough checks that a method a literal path does not declare is
// refused rather than handed to the parameter path beside it, as Flask does when the literal
// segment is not a UUID.
func TestKnowledgeLiteralPathsDoNotFallThrough(t *testing.T) {
	t.Parallel()
	router := knowledgeRouter(t)
	const ds = "/v1/datasets/0190f5a2-6d1e-7c3b-9a4f-2b8c1d7e5f60"
	for _, tc := range []struct{ method, path string }{
		{"GET", ds + "/documents/metadata"},
		{"PATCH", ds + "/metadata/built-in"},
		{"PUT", "/v1/datasets/tags"},
	} {
		route, _, err := router.FindRoute(httptest.NewRequest(tc.method, tc.path, nil))
		if !errors.Is(err, routers.ErrMethodNotAllowed) {
			op := ""
			if route != nil {
				op = route.Operation.OperationID
			}
			t.Errorf("%s %s: route %q, err %v; want method not allowed", tc.method, tc.path, op, err)
		}
	}
}

// TestEveryOperationRoutesToItself fills every path template of the contract with a UUID and
// checks the router hands the request to the operation that declared it, so no path shadows
// another.
func TestEveryOperationRoutesToItself(t *testing.T) {
	t.Parallel()
	router := knowledgeRouter(t)
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for path, item := range doc.Paths.Map() {
		base := BasePath
		if len(item.Servers) > 0 {
			// A path with servers of its own (the webhooks) sits at the server's root.
			base = ""
		}
		concrete := base + param.ReplaceAllString(path, "0190f5a2-6d1e-7c3b-9a4f-2b8c1d7e5f60")
		for method, op := range item.Operations() {
			route, _, err := router.FindRoute(httptest.NewRequest(method, concrete, nil))
			if err != nil {
				t.Errorf("%s %s (%s): %v", method, concrete, op.OperationID, err)
				continue
			}
			if route.Operation.OperationID != op.OperationID {
				t.Errorf("%s %s: routed to %s, want %s", method, concrete, route.Operation.OperationID, op.OperationID)
			}
		}
	}
}
