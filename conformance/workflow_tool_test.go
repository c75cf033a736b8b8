package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestWorkflowAsTool: a Workflow app's tool node calls another Workflow app of the server as a
// workflow tool, named as a Dify export names it: the import resolves it by the app's name (and
// is refused while that app is missing), and the run answers with the called workflow's outputs,
// as the tool's text and as variables of the tool node.
func TestWorkflowAsTool(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	ctx := context.Background()
	if _, stderr, err := p.cliOut("apps", "import", "--publish", "--strict", "testdata/workflow-calls-tool.yml"); err == nil ||
		!strings.Contains(stderr, `tool "shout_it" of provider "6145e242-98ad-4597-9b84-64cc95191212" (workflow) is not available on this server`) {
		t.Fatalf("an import whose workflow tool is missing: %v\n%s", err, stderr)
	}
	p.CLI(t, "apps", "import", "--publish", "testdata/workflow-as-tool.yml")
	p.CLI(t, "apps", "import", "--publish", "testdata/workflow-calls-tool.yml")
	c := newClient(t, p, p.CLI(t, "keys", "create", "--app", "Announcer"))
	r, err := c.RunWorkflowWithResponse(ctx, nil, client.RunWorkflowJSONRequestBody{Inputs: map[string]any{"news": "rain at noon"}, User: "wf-tool"})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("run: %v %s", err, r.Body)
	}
	d := r.JSON200.Data
	if d.Status != "succeeded" || d.Outputs == nil {
		t.Fatalf("run %+v", d)
	}
	out := *d.Outputs
	if out["shout"] != "NEWS: RAIN AT NOON!" || out["announced"] != `{"shout":"NEWS: RAIN AT NOON!"}` {
		t.Fatalf("outputs %v", out)
	}
}
