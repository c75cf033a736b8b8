package dsl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// triggerDoc is a Workflow app whose graph starts from the given trigger node (YAML of a node's
// data, indented for the place), leading to an end node.
func triggerDoc(mode, data string) string {
	return `version: 0.5.0
kind: app
app: {name: Triggered, mode: ` + mode + `}
workflow:
  graph:
    nodes:
    - id: trig
      data:
` + data + `
    - id: end
      data: {type: end, title: End, outputs: []}
    edges:
    - {id: e1, source: trig, target: end}
`
}

// TestImportTriggerExports imports the conformance exports that start from triggers: the
// webhooks and schedules import (the graph has no start node, so the app has no input form) and
// round-trip; the plugin trigger is refused, naming the plugin.
func TestImportTriggerExports(t *testing.T) {
	t.Parallel()
	opts := Options{NodeTypes: nodes.Registry(nodes.Deps{}).Supports}
	for _, file := range []string{"triggers-webhook.yml", "triggers-schedule.yml"} {
		res, err := Import(read(t, filepath.Join("..", "..", "..", "conformance", "testdata", file)), testEnv(), opts)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(res.App.UserInputForm) != 0 {
			t.Fatalf("%s: an input form %+v", file, res.App.UserInputForm)
		}
		roundTrip(t, res.App, testEnv(), opts)
	}
	e := importErr(t, string(read(t, filepath.Join("..", "..", "..", "conformance", "testdata", "triggers-plugin.yml"))), testEnv(), opts)
	if len(e.Problems) != 1 || !strings.Contains(e.Problems[0].String(),
		`workflow.graph.nodes[0]: node 1763000000001: plugin trigger langgenius/github_trigger (event "issues_opened") is not supported`) {
		t.Fatalf("plugin trigger: %v", e)
	}
}

func TestImportRefusesTriggerMistakes(t *testing.T) {
	t.Parallel()
	opts := Options{NodeTypes: nodes.Registry(nodes.Deps{}).Supports}
	for _, tc := range []struct {
		what, doc, want string
	}{
		{"a webhook's method", triggerDoc("workflow", "        {type: trigger-webhook, method: TRACE}"),
			"workflow.graph.nodes[0]: node trig: webhook trigger: method: TRACE is not one of"},
		{"a webhook's parameter type", triggerDoc("workflow",
			"        {type: trigger-webhook, method: POST, body: [{name: when, type: date, required: true}]}"),
			`node trig: webhook trigger: body[0] (when): type "date"`},
		{"a schedule's cron", triggerDoc("workflow", "        {type: trigger-schedule, mode: cron, cron_expression: '0 9 * *'}"),
			"node trig: schedule trigger: cron expression \"0 9 * *\": 4 fields"},
		{"a schedule's time zone", triggerDoc("workflow",
			"        {type: trigger-schedule, mode: visual, frequency: daily, visual_config: {time: '9:00 AM'}, timezone: Nowhere/City}"),
			`node trig: schedule trigger: timezone: "Nowhere/City"`},
		{"a Chatflow's trigger", triggerDoc("advanced-chat", "        {type: trigger-webhook, method: POST}"),
			"node trig: a trigger-webhook node starts a Workflow app; a Chatflow starts from its start node"},
	} {
		e := importErr(t, tc.doc, testEnv(), opts)
		found := false
		for _, p := range e.Problems {
			found = found || strings.Contains(p.String(), tc.want)
		}
		if !found {
			t.Errorf("%s: %v, want %q", tc.what, e, tc.want)
		}
	}
	// A start node beside a trigger: one or the other.
	doc := strings.Replace(triggerDoc("workflow", "        {type: trigger-webhook, method: POST}"), "    - id: end",
		"    - id: start\n      data: {type: start, title: Start, variables: []}\n    - id: end", 1)
	e := importErr(t, doc, testEnv(), opts)
	if !strings.Contains(e.Error(), "the graph has a start node and trigger nodes (trig)") {
		t.Fatalf("start and trigger: %v", e)
	}
}
