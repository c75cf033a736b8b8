package conformance

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestUnmappedDatasetsRun imports a public Chatflow export whose knowledge-retrieval node names
// datasets of its author's Dify workspace, without mapping them, as a migrating user first
// does. Like Dify, Parley imports it: the notes name each dataset and how to map it, `apps list`
// and `apps export` show them, and the app runs, its retrieval node finding nothing.
func TestUnmappedDatasetsRun(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	ctx := context.Background()
	path := filepath.Join("..", "internal", "apps", "dsl", "testdata", "public", "advanced-chat", "amypg-contextual-rag.yml")
	_, stderr, err := p.cliOut("apps", "import", "--publish", "--model-fallback", "openai:gpt-4o-mini", "--name", "rag", path)
	refs := unmappedRefs(stderr)
	if err != nil || len(refs) == 0 {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if list := p.CLI(t, "apps", "list"); !strings.Contains(list, "Datasets not mapped to a knowledge base") ||
		!strings.Contains(list, "\n  rag: "+strings.Join(refs, ", ")) {
		t.Fatalf("apps list does not show %v:\n%s", refs, list)
	}
	export := p.CLI(t, "apps", "export", "rag")
	for _, ref := range refs {
		if !strings.Contains(export, ref) {
			t.Fatalf("the export lost dataset %s:\n%s", ref, export)
		}
	}

	key := p.CLI(t, "keys", "create", "--app", "rag")
	c := newClient(t, p, key)
	par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
	if err != nil || par.JSON200 == nil {
		t.Fatalf("parameters: %v", err)
	}
	body := client.SendChatMessageJSONRequestBody{Query: "What does the handbook say about leave?", User: "migrating",
		Inputs: sampleInputs(t, p, key, par.JSON200.UserInputForm), ResponseMode: ptr(client.Streaming)}
	evs := streamEvents(t, c, body)
	retrieved := false
	for _, ev := range evs {
		nf, err := ev.AsNodeFinishedEvent()
		if err != nil || eventName(t, ev) != "node_finished" || nf.Data.NodeType != "knowledge-retrieval" {
			continue
		}
		retrieved = true
		if nf.Data.Status != "succeeded" || nf.Data.Outputs == nil {
			t.Fatalf("the retrieval node finished %+v", nf.Data)
		}
		if res, _ := (*nf.Data.Outputs)["result"].([]any); len(res) != 0 {
			t.Fatalf("retrieval from unmapped datasets found %v", res)
		}
	}
	last := evs[len(evs)-1]
	fin, _ := last.AsWorkflowFinishedEvent()
	if !retrieved || eventName(t, last) != "workflow_finished" || fin.Data.Status != "succeeded" {
		t.Fatalf("the run ended with %s %+v (retrieval node finished: %v)", eventName(t, last), fin.Data, retrieved)
	}
}
