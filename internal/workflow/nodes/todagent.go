package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// svcvit/agent's TOD strategy (task-oriented dialogue) fills in a form over the turns of a
// conversation. Its information_schema lists the fields, {"fields": [{"name", "question",
// "required"}]}; what was collected so far is kept under storage_key (the conversation's id, as
// exports set it) between turns. A turn:
//   - with an empty query, asks the current field's question;
//   - otherwise asks the model whether the query answers the current question (an answer
//     starting with "INVALID:" says no), then asks it to extract, as a JSON object, the answers
//     the query holds for any field, keeps those, and asks the question of the first field still
//     empty; once none is, it answers "InformationCollectionCompleted:" and a line per field
//     (the question and its answer), the collected answers are the node's JSON, and the kept
//     state is dropped, so the next turn starts over.
//
// As in the plugin, the extraction runs whatever the check said, so the check only shows in
// the logs; the exports that use the strategy branch on the completion marker.

// StrategyStorage keeps what agent strategies keep between runs, by app and key
// (*store.Store implements it).
type StrategyStorage interface {
	StrategyValue(ctx context.Context, appID, key string) ([]byte, bool, error)
	SetStrategyValue(ctx context.Context, appID, key string, value []byte) error
	DeleteStrategyValue(ctx context.Context, appID, key string) error
}

// todCompleted starts the answer of a turn that completed the form.
const todCompleted = "InformationCollectionCompleted:"

// maxTODFields bounds an information schema.
const maxTODFields = 64

// todField is one field of the schema, with its answer once collected.
type todField struct {
	Name     string  `json:"name"`
	Question string  `json:"question"`
	Required bool    `json:"required"`
	Value    *string `json:"value"`
}

// todState is what a conversation's TOD node keeps between turns.
type todState struct {
	CurrentFieldIndex int        `json:"current_field_index"`
	Fields            []todField `json:"fields"`
	Completed         bool       `json:"completed"`
}

// parseTODSchema reads an information schema.
func parseTODSchema(text string) (*todState, error) {
	var schema struct {
		Fields []struct {
			Name     string `json:"name"`
			Question string `json:"question"`
			Required *bool  `json:"required"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &schema); err != nil {
		return nil, workflow.Errorf(agentErrorType, "information_schema is not a JSON object with fields: %v", err)
	}
	if len(schema.Fields) == 0 || len(schema.Fields) > maxTODFields {
		return nil, workflow.Errorf(agentErrorType, "information_schema must have 1 to %d fields, not %d", maxTODFields, len(schema.Fields))
	}
	st := &todState{}
	for i, f := range schema.Fields {
		if f.Name == "" || f.Question == "" {
			return nil, workflow.Errorf(agentErrorType, "information_schema field %d needs a name and a question", i)
		}
		st.Fields = append(st.Fields, todField{Name: f.Name, Question: f.Question, Required: f.Required == nil || *f.Required})
	}
	return st, nil
}

// todTurn is one run of a TOD node.
type todTurn struct {
	*agentRun
	m       llm.Model
	state   *todState
	roundID string
	started time.Time
}

func (a *agentNode) runTOD(ctx context.Context, x *workflow.Exec, m llm.Model) (workflow.Result, error) {
	query := strings.TrimSpace(template.Render(a.query, x.Pool.Get, value.Text))
	key := template.Render(a.storageKey, x.Pool.Get, value.Text)
	if key == "" {
		key = "tod"
	}
	res := workflow.Result{Inputs: map[string]any{"query": query, "storage_key": key}}
	appID := env(x).AppID
	t := &todTurn{agentRun: &agentRun{a: a, x: x}, m: m, roundID: uuid.NewString(), started: time.Now()}
	state, err := a.loadTOD(ctx, appID, key, template.Render(a.todSchema, x.Pool.Get, value.Text))
	if err != nil {
		return res, err
	}
	t.state = state
	t.emit(agentLog{ID: t.roundID, Label: "Dialogue Round", Status: "start", Data: map[string]any{"query": query},
		Metadata: map[string]any{"started_at": t.started.Unix()}})

	answer, collected, err := t.turn(ctx, query)
	res.Usage = &t.total
	res.Metadata = map[string]any{"agent_log": t.logs}
	res.ProcessData = map[string]any{"model_provider": a.provider, "model_name": a.name, "strategy": "TOD"}
	if err != nil {
		msg := safeMessage(err)
		t.emit(agentLog{ID: t.roundID, Label: "Dialogue Round", Status: "error", Error: &msg, Metadata: t.meta(t.started, &t.total)})
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		return res, workflow.Errorf(agentErrorType, "%s", msg)
	}
	if collected != nil {
		err = a.d.Storage.DeleteStrategyValue(ctx, appID, key)
	} else {
		err = a.saveTOD(ctx, appID, key, t.state)
	}
	if err != nil {
		return res, workflow.Errorf(agentErrorType, "%v", err)
	}
	t.emit(agentLog{ID: t.roundID, Label: "Dialogue Round", Status: "success", Metadata: t.meta(t.started, &t.total),
		Data: map[string]any{"output": answer, "dialogue_state": t.state.summary()}})
	t.stream(answer)
	jsonOut := make([]any, 0, len(t.logs)+1)
	for _, l := range t.logs {
		jsonOut = append(jsonOut, value.FromGo(logDict(l.(agentLog))))
	}
	if collected != nil {
		jsonOut = append(jsonOut, value.FromGo(collected))
	} else {
		jsonOut = append(jsonOut, value.ObjectOf("data", []any{}))
	}
	res.Outputs = map[string]any{"text": answer, "files": []any{}, "json": jsonOut, "usage": value.FromGo(t.total)}
	return res, nil
}

// loadTOD is the state kept under key, or a new one from the schema when there is none (or
// what is kept no longer reads).
func (a *agentNode) loadTOD(ctx context.Context, appID, key, schema string) (*todState, error) {
	raw, ok, err := a.d.Storage.StrategyValue(ctx, appID, key)
	if err != nil {
		return nil, workflow.Errorf(agentErrorType, "%v", err)
	}
	if ok {
		var st todState
		if json.Unmarshal(raw, &st) == nil && len(st.Fields) > 0 && st.CurrentFieldIndex < len(st.Fields) {
			return &st, nil
		}
	}
	return parseTODSchema(schema)
}

func (a *agentNode) saveTOD(ctx context.Context, appID, key string, st *todState) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return a.d.Storage.SetStrategyValue(ctx, appID, key, raw)
}

// turn answers query: the next question, or the completion with the collected answers.
func (t *todTurn) turn(ctx context.Context, query string) (string, map[string]any, error) {
	current := t.state.Fields[t.state.CurrentFieldIndex]
	if query == "" {
		return current.Question, nil, nil
	}
	check := fmt.Sprintf("Collected information:\n%s\n\nCurrent question: %s\nUser answer: %s", t.state.history(), current.Question, query)
	if _, err := t.call(ctx, "Answer Validation", todCheckPrompt, check); err != nil {
		return "", nil, err
	}
	// The plugin sends this prompt as a system message alone; some providers refuse a request
	// without a user message, so it goes as the user's.
	said, err := t.call(ctx, "Answer Extraction", "", t.state.extractPrompt(query))
	if err != nil {
		return "", nil, err
	}
	t.state.keep(extractedAnswers(said))
	if t.state.CurrentFieldIndex < len(t.state.Fields) {
		return t.state.Fields[t.state.CurrentFieldIndex].Question, nil, nil
	}
	t.state.Completed = true
	collected := map[string]any{}
	lines := make([]string, 0, len(t.state.Fields))
	for _, f := range t.state.Fields {
		collected[f.Name] = *f.Value
		lines = append(lines, f.Question+" "+*f.Value)
	}
	return todCompleted + "\n" + strings.Join(lines, "\n"), collected, nil
}

// call asks the model once, with system (if any) as the system message and user as the
// user's, logging the call under label.
func (t *todTurn) call(ctx context.Context, label, system, user string) (string, error) {
	id, begun := uuid.NewString(), time.Now()
	t.emit(agentLog{ID: id, Label: label, ParentID: &t.roundID, Status: "start", Metadata: map[string]any{"started_at": begun.Unix(), "provider": t.a.provider}})
	var msgs []providers.Message
	if system != "" {
		msgs = append(msgs, providers.Message{Role: providers.RoleSystem, Content: system})
	}
	msgs = append(msgs, providers.Message{Role: providers.RoleUser, Content: user})
	r, err := t.m.Stream(ctx, llm.Request{Messages: msgs, Params: llm.Params(t.a.params, t.m.Spec)})
	t.total = models.AddUsage(t.total, r.Usage)
	if err != nil {
		msg := safeMessage(err)
		t.emit(agentLog{ID: id, Label: label, ParentID: &t.roundID, Status: "error", Error: &msg, Metadata: t.meta(begun, &r.Usage)})
		return "", err
	}
	t.emit(agentLog{ID: id, Label: label, ParentID: &t.roundID, Status: "success", Metadata: t.meta(begun, &r.Usage),
		Data: map[string]any{"response": r.Text}})
	return r.Text, nil
}

// history is the questions answered before the current one, with their answers.
func (s *todState) history() string {
	var b strings.Builder
	for _, f := range s.Fields[:s.CurrentFieldIndex] {
		if f.Value != nil {
			fmt.Fprintf(&b, "Q: %s\nA: %s\n", f.Question, *f.Value)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// keep stores the non-empty answers of fields the state has, and moves to the first field
// still empty (past the last when none is).
func (s *todState) keep(answers map[string]string) {
	for i := range s.Fields {
		if v := answers[s.Fields[i].Name]; v != "" {
			s.Fields[i].Value = &v
		}
	}
	s.CurrentFieldIndex = len(s.Fields)
	for i, f := range s.Fields {
		if f.Value == nil || *f.Value == "" {
			s.CurrentFieldIndex = i
			break
		}
	}
}

// summary is the state as the round's log shows it.
func (s *todState) summary() map[string]any {
	done := []any{}
	for _, f := range s.Fields {
		if f.Value != nil {
			done = append(done, map[string]any{"name": f.Name, "value": *f.Value})
		}
	}
	return map[string]any{"completed": s.Completed, "current_field_index": s.CurrentFieldIndex, "total_fields": len(s.Fields), "completed_fields": done}
}

// todCheckPrompt asks whether a reply answers the question asked.
const todCheckPrompt = `You check the replies of a user who is filling in a form over a conversation, one question at a time.
Decide whether the user's answer answers the current question.
- If it does (even if it also answers other questions), reply with the answer alone.
- If the user greets you or makes small talk, reply: INVALID: User is greeting or making small talk
- If the answer is incomplete or unclear, reply: INVALID: followed by what is missing.
- If the answer has nothing to do with the question, reply: INVALID: Answer is irrelevant to the question`

// extractPrompt asks for the answers a reply holds, as a JSON object by field name.
func (s *todState) extractPrompt(reply string) string {
	fields := make([]map[string]string, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = map[string]string{"name": f.Name, "question": f.Question}
	}
	list, _ := json.Marshal(fields)
	return "Extract from the user's reply every answer it gives or clearly implies to the questions below, and return them as one " +
		"JSON object whose keys are the field names. Leave out a field the reply does not answer. Write the values in the " +
		"language of the reply.\n\nQuestions: " + string(list) + "\n\nUser reply: " + reply +
		"\n\nReturn only the JSON object, for example {\"destination\": \"Japan\", \"duration\": \"5 days\"}."
}

// extractedAnswers reads the model's JSON object of answers: the whole text, else the first
// {…} in it; values that are not text are written as JSON. Anything else is no answer.
func extractedAnswers(said string) map[string]string {
	var obj map[string]any
	if json.Unmarshal([]byte(said), &obj) != nil {
		start, end := strings.Index(said, "{"), strings.LastIndex(said, "}")
		if start < 0 || end <= start || json.Unmarshal([]byte(said[start:end+1]), &obj) != nil {
			return nil
		}
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		switch x := v.(type) {
		case nil:
		case string:
			out[k] = strings.TrimSpace(x)
		default:
			b, _ := json.Marshal(x)
			out[k] = string(b)
		}
	}
	return out
}
