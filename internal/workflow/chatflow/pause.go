package chatflow

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// DefaultHumanInputGlobalTimeout is how long a run waits for human input at most, from the
// creation of a form (Dify's 7 days).
const DefaultHumanInputGlobalTimeout = 7 * 24 * time.Hour

// pauseContext is what a paused Chatflow run needs, besides the engine's state, to resume.
type pauseContext struct {
	VersionID      string         `json:"version_id"`
	MessageID      string         `json:"message_id"`
	ConversationID string         `json:"conversation_id"`
	User           string         `json:"user"`
	EndUserID      string         `json:"end_user_id"`
	Inputs         map[string]any `json:"inputs"`
	RunInputs      map[string]any `json:"run_inputs"`
	CreatedAt      int64          `json:"created_at"`
	MessageCreated int64          `json:"message_created_at"`
}

// tokenAlphabet and tokenLength make a form token: 22 characters from 62, about 131 bits from
// crypto/rand.
const (
	tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	tokenLength   = 22
)

// NewFormToken returns an unguessable form token.
func NewFormToken() string {
	b := make([]byte, tokenLength)
	out := make([]byte, tokenLength)
	for i := 0; i < tokenLength; {
		if _, err := rand.Read(b); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		for _, c := range b {
			if c >= 248 { // 248 = 4×62: keep the draw uniform
				continue
			}
			out[i] = tokenAlphabet[int(c)%len(tokenAlphabet)]
			if i++; i == tokenLength {
				break
			}
		}
	}
	return string(out)
}

// pause ends a segment that paused: the forms of the nodes that paused are created, the run's
// state is stored with them in one commit, and the stream gets human_input_required for each
// new form and workflow_paused with every form the run waits for.
func (w *work) pause(ctx context.Context, out *run.Output, pool *workflow.Pool, rep workflow.Report, rec store.WorkflowRun, consumed []string) (run.Outcome, error) {
	now := time.Now()
	state, err := json.Marshal(rep.State)
	if err != nil {
		return run.Outcome{}, fmt.Errorf("chatflow: encode paused state: %w", err)
	}
	pc := pauseContext{VersionID: w.v.id, MessageID: out.MessageID(), ConversationID: w.t.Conversation.ID, User: w.t.User,
		EndUserID: w.t.EndUser.ID, Inputs: w.t.Inputs, CreatedAt: rec.CreatedAt.Unix(), MessageCreated: w.messageCreated}
	_ = json.Unmarshal(rec.Inputs, &pc.RunInputs)
	pctx, _ := json.Marshal(pc)
	var forms []store.HumanInputForm
	var required []run.Event
	for _, p := range rep.Paused {
		def, err := json.Marshal(p.Form)
		if err != nil {
			return run.Outcome{}, fmt.Errorf("chatflow: encode form: %w", err)
		}
		f := store.HumanInputForm{ID: uuid.NewString(), WorkflowRunID: w.runID, AppID: w.v.app.ID, NodeID: p.NodeID,
			Definition: def, Status: store.FormWaiting, Expiration: now.Add(p.Form.Timeout),
			GlobalDeadline: now.Add(w.r.globalTimeout), CreatedAt: now}
		if p.Form.DisplayInUI {
			f.Token = NewFormToken()
		}
		forms = append(forms, f)
		required = append(required, run.Event{Kind: run.EventHumanInputRequired, Data: FormPayload(f, p.Form)})
	}
	rec.Status, rec.Elapsed = workflow.StatusPaused, now.Sub(rec.CreatedAt).Seconds()
	rec.TotalTokens, rec.TotalSteps, rec.ExceptionsCount = int64(rep.Usage.TotalTokens), rep.Steps, rep.Exceptions
	// Forms still waiting from an earlier pause are reasons of this one too.
	earlier, err := w.r.store.HumanInputForms(ctx, w.runID)
	if err != nil {
		return run.Outcome{}, err
	}
	if err := w.r.store.SaveRunSegment(ctx, store.RunSegment{Run: rec, Forms: forms, Consumed: consumed,
		Pause: &store.WorkflowPause{WorkflowRunID: w.runID, State: state, Context: pctx}}); err != nil {
		return run.Outcome{}, err
	}
	if w.r.onPause != nil {
		w.r.onPause()
	}
	w.saveConversationVariables(ctx, pool)
	reasons := []any{}
	var pausedNodes []string
	for _, f := range earlier {
		if f.Status != store.FormWaiting {
			continue
		}
		var def workflow.HumanInputForm
		if json.Unmarshal(f.Definition, &def) == nil {
			reasons = append(reasons, reason(FormPayload(f, &def)))
			pausedNodes = append(pausedNodes, f.NodeID)
		}
	}
	for _, ev := range required {
		out.Emit(ev)
		reasons = append(reasons, reason(ev.Data.(FormRequired)))
		pausedNodes = append(pausedNodes, ev.Data.(FormRequired).NodeID)
	}
	outputs := rep.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	out.Emit(run.Event{Kind: run.EventWorkflowPaused, Data: workflowPaused{WorkflowRunID: w.runID, PausedNodes: pausedNodes,
		Outputs: outputs, Reasons: reasons, Status: workflow.StatusPaused, CreatedAt: rec.CreatedAt.Unix(),
		ElapsedTime: rec.Elapsed, TotalTokens: rec.TotalTokens, TotalSteps: rep.Steps}})
	return run.Outcome{Usage: rep.Usage, Paused: true}, nil
}

// FormRequired is human_input_required's data (and, with TYPE, a reason of workflow_paused).
type FormRequired struct {
	FormID                string                `json:"form_id"`
	FormToken             *string               `json:"form_token"`
	NodeID                string                `json:"node_id"`
	NodeTitle             string                `json:"node_title"`
	FormContent           string                `json:"form_content"`
	Inputs                []any                 `json:"inputs"`
	Actions               []workflow.FormAction `json:"actions"`
	DisplayInUI           bool                  `json:"display_in_ui"`
	ResolvedDefaultValues map[string]string     `json:"resolved_default_values"`
	ExpirationTime        int64                 `json:"expiration_time"`
}

// FormPayload is a stored form as human_input_required shows it.
func FormPayload(f store.HumanInputForm, def *workflow.HumanInputForm) FormRequired {
	p := FormRequired{FormID: f.ID, NodeID: f.NodeID, NodeTitle: def.NodeTitle, FormContent: def.Content,
		Inputs: def.Inputs, Actions: def.Actions, DisplayInUI: def.DisplayInUI, ResolvedDefaultValues: def.DefaultValues,
		ExpirationTime: f.Expiration.Unix()}
	if f.Token != "" {
		t := f.Token
		p.FormToken = &t
	}
	if p.Inputs == nil {
		p.Inputs = []any{}
	}
	if p.Actions == nil {
		p.Actions = []workflow.FormAction{}
	}
	if p.ResolvedDefaultValues == nil {
		p.ResolvedDefaultValues = map[string]string{}
	}
	return p
}

// reasonEntry is a reason of workflow_paused: the form's members and TYPE.
type reasonEntry struct {
	Type string `json:"TYPE"`
	FormRequired
}

func reason(f FormRequired) reasonEntry {
	return reasonEntry{Type: "human_input_required", FormRequired: f}
}

// workflowPaused is workflow_paused's data.
type workflowPaused struct {
	WorkflowRunID string         `json:"workflow_run_id"`
	PausedNodes   []string       `json:"paused_nodes"`
	Outputs       map[string]any `json:"outputs"`
	Reasons       []any          `json:"reasons"`
	Status        string         `json:"status"`
	CreatedAt     int64          `json:"created_at"`
	ElapsedTime   float64        `json:"elapsed_time"`
	TotalTokens   int64          `json:"total_tokens"`
	TotalSteps    int            `json:"total_steps"`
}

// ErrNotPaused is a run with nothing to resume.
var ErrNotPaused = errors.New("the workflow run is not paused")

// Resume prepares the next segment of a paused run of app with the decided forms: the
// resumption to hand to the run engine. The caller claimed the run (paused → running).
func (r *Runner) Resume(ctx context.Context, app *apps.App, runID string, decided []store.HumanInputForm) (run.Resumption, error) {
	p, err := r.store.WorkflowPauseOf(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return run.Resumption{}, ErrNotPaused
	}
	if err != nil {
		return run.Resumption{}, err
	}
	var pc pauseContext
	if err := json.Unmarshal(p.Context, &pc); err != nil {
		return run.Resumption{}, fmt.Errorf("chatflow: paused run %s: %w", runID, err)
	}
	state := &workflow.State{}
	if err := json.Unmarshal(p.State, state); err != nil {
		return run.Resumption{}, fmt.Errorf("chatflow: paused run %s: %w", runID, err)
	}
	v, err := r.load(ctx, app, pc.VersionID)
	if err != nil {
		return run.Resumption{}, err
	}
	history, err := r.store.RecentMessages(ctx, pc.ConversationID, historyLimit)
	if err != nil {
		return run.Resumption{}, err
	}
	msg, err := r.store.Message(ctx, app.ID, pc.EndUserID, pc.MessageID)
	if err != nil {
		return run.Resumption{}, err
	}
	answer := msg.Answer
	kept := history[:0]
	for _, m := range history {
		if m.ID != pc.MessageID {
			kept = append(kept, m)
		}
	}
	t := run.Turn{Request: run.Request{App: app, User: pc.User}, EndUser: store.EndUser{ID: pc.EndUserID},
		Conversation: store.Conversation{ID: pc.ConversationID}, Inputs: pc.Inputs}
	w := &work{r: r, v: v, t: t, history: kept, runID: runID, messageCreated: pc.MessageCreated}
	for _, d := range v.app.Workflow.ConversationVariables {
		cv := convVar{id: str(d["id"]), name: str(d["name"]), valueType: str(d["value_type"])}
		if cv.id == "" {
			cv.id = cv.name
		}
		w.convVars = append(w.convVars, cv)
	}
	rs := &resumed{w: w, state: state, decided: decided, created: time.Unix(pc.CreatedAt, 0), runInputs: pc.RunInputs}
	return run.Resumption{App: app, User: pc.User, MessageID: pc.MessageID, ConversationID: pc.ConversationID,
		WorkflowRunID: runID, CreatedAt: time.Unix(pc.MessageCreated, 0), Answer: answer, Work: rs}, nil
}

// resumed is the work of a resumed segment.
type resumed struct {
	w         *work
	state     *workflow.State
	decided   []store.HumanInputForm
	created   time.Time
	runInputs map[string]any
}

func (rs *resumed) Run(ctx context.Context, out *run.Output) (run.Outcome, error) {
	w := rs.w
	pool, err := rs.state.RestorePool()
	if err != nil {
		return run.Outcome{}, err
	}
	decisions := map[string]*workflow.Resumption{}
	var consumed []string
	for _, f := range rs.decided {
		d := &workflow.Resumption{TimedOut: f.Status == store.FormTimeout, Action: f.Action, Expiration: f.Expiration}
		if len(f.SubmittedData) > 0 {
			_ = json.Unmarshal(f.SubmittedData, &d.Inputs)
		}
		decisions[f.NodeID] = d
		consumed = append(consumed, f.ID)
	}
	raw, _ := json.Marshal(rs.runInputs)
	rec := store.WorkflowRun{ID: w.runID, AppID: w.v.app.ID, WorkflowID: w.v.id, ConversationID: w.t.Conversation.ID,
		MessageID: out.MessageID(), Status: workflow.StatusRunning, Inputs: raw, CreatedAt: rs.created}
	out.Emit(run.Event{Kind: run.EventWorkflowStarted, Data: workflowStarted{ID: w.runID, WorkflowID: w.v.id,
		Inputs: rs.runInputs, CreatedAt: rs.created.Unix(), Reason: "resumption"}})
	env := &nodes.Env{Inputs: w.t.Inputs, History: w.historyFunc(), AppID: w.v.app.ID, MessageID: out.MessageID(), EndUserID: w.t.EndUser.ID}
	rep := w.r.engine.Execute(ctx, workflow.Spec{Graph: w.v.graph, Pool: pool, RunID: w.runID, Out: out, Env: env,
		From: rs.state, Resume: decisions})
	return w.finish(ctx, out, pool, rep, rec, consumed)
}
