package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestPublicWorkflows imports every public Dify Workflow app export of the DSL corpus (files
// Parley's authors did not write) with a model fallback, and runs each that imports through POST
// /workflows/run with the fake provider: the stream must end with workflow_finished, succeeded,
// or failed in a node on the test's sample inputs or for want of the Internet. Datasets are mapped
// to a knowledge base of the test. A file that starts from triggers instead of a start node
// imports with its triggers listed by `parley apps triggers` (it runs when they fire, not through
// the API). A file that does not import must be refused only for node types Parley does not run
// yet, agent strategies or tools it does not have. The tally is logged.
func TestPublicWorkflows(t *testing.T) {
	files, p := publicCorpus(t, "workflow")
	ctx := context.Background()
	var ran, failed, triggered []string
	imported := 0
	refused := map[string]int{}
	for i, path := range files {
		name := fmt.Sprintf("public workflow %d", i)
		_, stderr, err := importPublic(p, path, name)
		if err != nil {
			for _, line := range strings.Split(stderr, "\n") {
				switch {
				case strings.Contains(line, "is not available on this server"):
					refused["missing tool"]++
				case strings.Contains(line, "agent strategy"):
					refused["agent strategy"]++
				case strings.Contains(line, "the graph has no start node"):
					refused["no start node (trigger)"]++
				case strings.Contains(line, "is not supported yet"):
					typ := line[strings.Index(line, `node type "`)+len(`node type "`):]
					refused[typ[:strings.Index(typ, `"`)]]++
				case strings.Contains(line, "workflow.graph"):
					t.Fatalf("%s: %s", filepath.Base(path), line)
				}
			}
			continue
		}
		imported++
		if out := p.CLI(t, "apps", "triggers", name); out != "" {
			// It starts from triggers: listed, each a webhook or a schedule.
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) < 3 || f[1] != "webhook" && f[1] != "schedule" {
					t.Fatalf("%s: triggers %q", filepath.Base(path), out)
				}
			}
			triggered = append(triggered, filepath.Base(path))
			continue
		}
		key := p.CLI(t, "keys", "create", "--app", name)
		c := newClient(t, p, key)
		par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || par.JSON200 == nil {
			t.Fatalf("%s: parameters: %v", filepath.Base(path), err)
		}
		inputs := sampleInputs(t, p, key, par.JSON200.UserInputForm)
		evs := workflowStream(t, c, client.RunWorkflowJSONRequestBody{User: "corpus", Inputs: inputs})
		last := evs[len(evs)-1]
		fin, _ := last.AsWorkflowAppFinishedEvent()
		switch {
		case workflowEventName(t, last) != "workflow_finished":
			t.Fatalf("%s: the run ended with %s", filepath.Base(path), workflowEventName(t, last))
		case fin.Data.Status == "succeeded":
			ran = append(ran, filepath.Base(path))
		case fin.Data.Status == "failed" && fin.Data.Error != nil && strings.Contains(*fin.Data.Error, "node "):
			failed = append(failed, filepath.Base(path)+": "+*fin.Data.Error)
		default:
			t.Fatalf("%s: workflow_finished %+v", filepath.Base(path), fin.Data)
		}
	}
	types := make([]string, 0, len(refused))
	for typ, n := range refused {
		types = append(types, fmt.Sprintf("%s×%d", typ, n))
	}
	sort.Strings(types)
	t.Logf("%d of %d public Workflow apps import; %d run to workflow_finished succeeded: %s; %d fail in a node:\n%s\n"+
		"%d start from triggers: %s\nrefused for: %s", imported, len(files), len(ran), strings.Join(ran, ", "), len(failed),
		strings.Join(failed, "\n"), len(triggered), strings.Join(triggered, ", "), strings.Join(types, ", "))
	if len(triggered) == 0 {
		t.Fatal("no public Workflow app starts from triggers; the corpus has one (a1sh4-schedule-triggered.yml)")
	}
	if len(ran) < minPublicWorkflowsRun {
		t.Fatalf("only %d public Workflow apps ran", len(ran))
	}
}

// minPublicWorkflowsRun is how many public Workflow apps run to success as they are today; it
// only goes up.
const minPublicWorkflowsRun = 14
