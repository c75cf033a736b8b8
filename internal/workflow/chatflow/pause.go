package chatflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
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

// pause ends a segment that paused (humaninput.SavePause): the forms, the state and what a
// resumption needs are stored in one commit, then the pause events go out.
func (w *work) pause(ctx context.Context, out *run.Output, pool *workflow.Pool, rep workflow.Report, rec store.WorkflowRun, consumed []string) (run.Outcome, error) {
	pc := pauseContext{VersionID: w.v.id, MessageID: out.MessageID(), ConversationID: w.t.Conversation.ID, User: w.t.User,
		EndUserID: w.t.EndUser.ID, Inputs: w.t.Inputs, CreatedAt: rec.CreatedAt.Unix(), MessageCreated: w.messageCreated}
	_ = json.Unmarshal(rec.Inputs, &pc.RunInputs)
	err := humaninput.SavePause(ctx, w.r.store, humaninput.PauseSegment{Run: rec, Report: rep, Context: pc, Consumed: consumed,
		GlobalTimeout: w.r.globalTimeout}, func() {
		w.saveConversationVariables(ctx, pool)
		if w.r.onPause != nil {
			w.r.onPause()
		}
	}, out.Emit)
	if err != nil {
		return run.Outcome{}, err
	}
	return run.Outcome{Usage: rep.Usage, Paused: true}, nil
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
	return run.Resumption{App: app, User: pc.User, EndUserID: pc.EndUserID, MessageID: pc.MessageID, ConversationID: pc.ConversationID,
		WorkflowRunID: runID, CreatedAt: time.Unix(pc.MessageCreated, 0), Answer: answer, PriorTokens: int64(state.Usage.TotalTokens), Work: rs}, nil
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
	if w.isApp() {
		rec.ConversationID = ""
	}
	out.Emit(run.Event{Kind: run.EventWorkflowStarted, Data: workflowStarted{ID: w.runID, WorkflowID: w.v.id,
		Inputs: rs.runInputs, CreatedAt: rs.created.Unix(), Reason: "resumption"}})
	env := &nodes.Env{Inputs: w.t.Inputs, History: w.historyFunc(), AppID: w.v.app.ID, MessageID: out.MessageID(), EndUserID: w.t.EndUser.ID}
	rep := w.r.engine.Execute(ctx, workflow.Spec{Graph: w.v.graph, Pool: pool, RunID: w.runID, Out: out, Env: env,
		From: rs.state, Resume: decisions, TextChunks: w.isApp()})
	return w.finish(ctx, out, pool, rep, rec, consumed, false)
}
