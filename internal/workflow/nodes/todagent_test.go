package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// todGraph is a Chatflow whose agent node runs svcvit/agent's TOD strategy over a three-field
// schema, keeping its state under the conversation's id, as the public export does.
func todGraph(t *testing.T) *workflow.Graph {
	schema := `{"fields": [
		{"name": "destination", "question": "Where do you want to go?", "required": true},
		{"name": "duration", "question": "For how long?", "required": true},
		{"name": "budget", "question": "What is your budget?"}]}`
	return parse(t, []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("tod", "agent", map[string]any{
			"agent_strategy_provider_name": "svcvit/agent/agent", "agent_strategy_name": "TOD",
			"agent_parameters": map[string]any{
				"model": map[string]any{"type": "constant", "value": map[string]any{"provider": "openai", "model": "gpt-4o-mini",
					"mode": "chat", "completion_params": map[string]any{}}},
				"information_schema": map[string]any{"type": "constant", "value": schema},
				"query":              map[string]any{"type": "constant", "value": "{{#sys.query#}}"},
				"storage_key":        map[string]any{"type": "constant", "value": "{{#sys.conversation_id#}}"},
			}}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#tod.text#}}"}),
	}, []any{edgeOf("start", "source", "tod"), edgeOf("tod", "source", "a")})
}

// todTurn runs one turn of conversation conv and returns its answer and the node's json.
func todTurn(t *testing.T, d nodes.Deps, conv, query string) (string, string) {
	t.Helper()
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, query)
	pool.Set(workflow.ScopeSys, workflow.SysConversationID, conv)
	s := &toolEvents{}
	rep := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)}).Execute(context.Background(),
		workflow.Spec{Graph: todGraph(t), Pool: pool, Out: s, Env: &nodes.Env{AppID: "app-tod"}})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("turn %q: %+v", query, rep)
	}
	j, _ := pool.Get([]string{"tod", "json"})
	b, _ := json.Marshal(j)
	for _, ev := range s.all {
		if ev.Kind == run.EventAgentLog {
			return s.answer(), string(b)
		}
	}
	if query != "" {
		t.Fatalf("turn %q: no agent_log", query)
	}
	return s.answer(), string(b)
}

// TestAgentNodeTOD: svcvit/agent's TOD strategy asks the schema's questions over the turns of a
// conversation, keeps the answers the model extracts (several from one reply), asks again when a
// reply answers nothing, and completes with the marker the exports branch on and the answers as
// the node's JSON, starting over afterwards; another conversation has its own state.
func TestAgentNodeTOD(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	d.Storage = testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	up.On("User answer: Japan please", openaitest.Reply{Text: "Japan"})
	up.On("User reply: Japan please", openaitest.Reply{Text: "Sure: {\"destination\": \"Japan\"}"})
	up.On("User answer: hello", openaitest.Reply{Text: "INVALID: User is greeting or making small talk"})
	up.On("User reply: hello", openaitest.Reply{Text: "{}"})
	up.On("User answer: 5 days, 3000 dollars", openaitest.Reply{Text: "5 days"})
	up.On("User reply: 5 days, 3000 dollars", openaitest.Reply{Text: `{"duration": "5 days", "budget": 3000}`})

	steps := []struct{ query, want string }{
		{"", "Where do you want to go?"},
		{"Japan please", "For how long?"},
		{"hello", "For how long?"},
		{"5 days, 3000 dollars", "InformationCollectionCompleted:\nWhere do you want to go? Japan\nFor how long? 5 days\nWhat is your budget? 3000"},
		{"", "Where do you want to go?"},
	}
	for i, st := range steps {
		got, js := todTurn(t, d, "conv-1", st.query)
		if got != st.want {
			t.Fatalf("turn %d %q: %q, want %q", i, st.query, got, st.want)
		}
		if i == 3 && !strings.HasSuffix(js, `{"budget":"3000","destination":"Japan","duration":"5 days"}]`) {
			t.Fatalf("completed json %s", js)
		}
		if i == 1 && !strings.Contains(js, `"label":"Answer Extraction"`) {
			t.Fatalf("json %s", js)
		}
	}
	// Another conversation starts at the first question.
	if got, _ := todTurn(t, d, "conv-2", ""); got != "Where do you want to go?" {
		t.Fatalf("another conversation: %q", got)
	}
	if got, _ := todTurn(t, d, "conv-2", "Japan please"); got != "For how long?" {
		t.Fatalf("another conversation: %q", got)
	}
}
