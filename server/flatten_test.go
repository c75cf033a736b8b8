package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/parleyhq/parley/api"
)

// TestFlattenAllOfKeepsMeaning checks events against each event schema as written (allOf) and
// as flattened: both must accept and reject the same documents.
func TestFlattenAllOfKeepsMeaning(t *testing.T) {
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	const env = `"conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420`
	const task = `,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33"`
	const run = task + `,"workflow_run_id":"ae3e5e4f-8d7f-4b7f-8d88-6f3e8a3bcf44"`
	node := `"id":"n1","node_id":"llm","node_type":"llm","title":"LLM","index":2,"status":"succeeded","outputs":{"text":"hi"},"execution_metadata":null,"elapsed_time":0.5,"created_at":1,"finished_at":2`
	form := `"form_id":"f","form_token":null,"node_id":"h","node_title":"Review","form_content":"c","inputs":[{"type":"paragraph","output_variable_name":"fb","default":null}],"actions":[{"id":"ok","title":"OK","button_style":"primary"}],"resolved_default_values":{},"expiration_time":1`
	cases := []struct {
		schema string
		doc    string
		valid  bool
	}{
		{"MessageEvent", `{"event":"message",` + env + task + `,"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"a","extra":1}`, true},
		{"MessageEvent", `{"event":"message",` + env + task + `,"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22"}`, false},
		{"MessageEvent", `{"event":"message",` + env + `,"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"a"}`, false},
		{"MessageEvent", `{"event":"agent_message",` + env + task + `,"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"a"}`, false},
		{"ErrorEvent", `{"event":"error",` + env + `,"status":400,"code":"x","message":"m"}`, true},
		{"ErrorEvent", `{"event":"error",` + env + `,"status":"400","code":"x","message":"m"}`, false},
		{"NodeFinishedEvent", `{"event":"node_finished",` + env + run + `,"data":{` + node + `}}`, true},
		{"NodeFinishedEvent", `{"event":"node_finished",` + env + run + `,"data":{` + strings.Replace(node, `"index":2`, `"index":"2"`, 1) + `}}`, false},
		{"NodeRetryEvent", `{"event":"node_retry",` + env + run + `,"data":{` + node + `,"retry_index":1}}`, true},
		{"NodeRetryEvent", `{"event":"node_retry",` + env + run + `,"data":{` + node + `}}`, false},
		{"HumanInputRequiredEvent", `{"event":"human_input_required",` + env + run + `,"data":{` + form + `,"display_in_ui":true}}`, true},
		{"HumanInputRequiredEvent", `{"event":"human_input_required",` + env + run + `,"data":{` + form + `}}`, false},
		{"WorkflowPausedEvent", `{"event":"workflow_paused",` + env + run + `,"data":{"workflow_run_id":"ae3e5e4f-8d7f-4b7f-8d88-6f3e8a3bcf44","paused_nodes":["h"],"outputs":{},"reasons":[{"TYPE":"human_input_required",` + form + `}],"status":"paused","created_at":1,"elapsed_time":1.5,"total_tokens":3,"total_steps":2}}`, true},
		{"WorkflowPausedEvent", `{"event":"workflow_paused",` + env + run + `,"data":{"workflow_run_id":"ae3e5e4f-8d7f-4b7f-8d88-6f3e8a3bcf44","paused_nodes":["h"],"outputs":{},"reasons":[{` + form + `}],"status":"paused","created_at":1,"elapsed_time":1.5,"total_tokens":3,"total_steps":2}}`, false},
		{"IterationNextEvent", `{"event":"iteration_next",` + env + run + `,"data":{"id":"i","node_id":"it","anything":[1,2]}}`, true},
		{"IterationNextEvent", `{"event":"iteration_next",` + env + run + `,"data":{"node_id":"it"}}`, false},
	}
	for _, tc := range cases {
		orig := doc.Components.Schemas[tc.schema].Value
		flat := flattenAllOf(orig)
		if len(flat.AllOf) != 0 {
			t.Errorf("%s: not flattened", tc.schema)
		}
		var v any
		if err := json.Unmarshal([]byte(tc.doc), &v); err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		eo, ef := orig.VisitJSON(v, openapi3.MultiErrors()), flat.VisitJSON(v, openapi3.MultiErrors())
		if (eo == nil) != tc.valid || (ef == nil) != tc.valid {
			t.Errorf("%s %s:\n  allOf: %v\n  flat:  %v\n  want valid=%v", tc.schema, tc.doc, eo, ef, tc.valid)
		}
	}
}
