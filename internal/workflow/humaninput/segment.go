package humaninput

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/workflow"
)

// PauseStore is what SavePause needs from storage; *store.Store implements it.
type PauseStore interface {
	HumanInputForms(ctx context.Context, runID string) ([]store.HumanInputForm, error)
	SaveRunSegment(ctx context.Context, seg store.RunSegment) error
}

// PauseSegment is a segment of a run that ended paused (Report.Status workflow.StatusPaused).
type PauseSegment struct {
	// Run is the run as stored, with its id, app and creation time.
	Run    store.WorkflowRun
	Report workflow.Report
	// Context is what the app kind's Resumer needs besides the engine's state (JSON-encoded).
	Context any
	// Consumed are the forms whose decisions the segment took.
	Consumed []string
	// GlobalTimeout bounds how long the new forms wait at most.
	GlobalTimeout time.Duration
}

// SavePause stores a paused segment for any app kind that runs a graph: one form per node that
// paused (a token for those delivered to the web app), the run marked paused with its counters,
// the engine's state and the kind's context, the consumed forms marked — in one commit. Then
// saved runs (the kind's own writes), and emit gets human_input_required for each new form and
// workflow_paused with every form the run waits for.
func SavePause(ctx context.Context, st PauseStore, seg PauseSegment, saved func(), emit func(run.Event)) error {
	now := time.Now()
	rec, rep := seg.Run, seg.Report
	state, err := json.Marshal(rep.State)
	if err != nil {
		return fmt.Errorf("humaninput: encode paused state: %w", err)
	}
	pctx, err := json.Marshal(seg.Context)
	if err != nil {
		return fmt.Errorf("humaninput: encode pause context: %w", err)
	}
	var (
		forms    []store.HumanInputForm
		required []FormRequired
	)
	for _, p := range rep.Paused {
		def, err := json.Marshal(p.Form)
		if err != nil {
			return fmt.Errorf("humaninput: encode form: %w", err)
		}
		f := store.HumanInputForm{ID: uuid.NewString(), WorkflowRunID: rec.ID, AppID: rec.AppID, NodeID: p.NodeID,
			Definition: def, Status: store.FormWaiting, Expiration: now.Add(p.Form.Timeout),
			GlobalDeadline: now.Add(seg.GlobalTimeout), CreatedAt: now}
		if p.Form.DisplayInUI {
			f.Token = NewFormToken()
		}
		forms = append(forms, f)
		required = append(required, FormPayload(f, p.Form))
	}
	rec.Status, rec.Elapsed = workflow.StatusPaused, now.Sub(rec.CreatedAt).Seconds()
	rec.TotalTokens, rec.TotalSteps, rec.ExceptionsCount = int64(rep.Usage.TotalTokens), rep.Steps, rep.Exceptions
	// Forms still waiting from an earlier pause are reasons of this one too.
	earlier, err := st.HumanInputForms(ctx, rec.ID)
	if err != nil {
		return err
	}
	if err := st.SaveRunSegment(ctx, store.RunSegment{Run: rec, Forms: forms, Consumed: seg.Consumed,
		Pause: &store.WorkflowPause{WorkflowRunID: rec.ID, State: state, Context: pctx}, TraceParent: tracing.TraceParent(ctx)}); err != nil {
		return err
	}
	if saved != nil {
		saved()
	}
	reasons := []any{}
	pausedNodes := []string{}
	for _, f := range earlier {
		if f.Status != store.FormWaiting {
			continue
		}
		var def workflow.HumanInputForm
		if json.Unmarshal(f.Definition, &def) == nil {
			reasons = append(reasons, Reason(FormPayload(f, &def)))
			pausedNodes = append(pausedNodes, f.NodeID)
		}
	}
	for _, r := range required {
		emit(run.Event{Kind: run.EventHumanInputRequired, Data: r})
		reasons = append(reasons, Reason(r))
		pausedNodes = append(pausedNodes, r.NodeID)
	}
	outputs := rep.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	emit(run.Event{Kind: run.EventWorkflowPaused, Data: WorkflowPaused{WorkflowRunID: rec.ID, PausedNodes: pausedNodes,
		Outputs: outputs, Reasons: reasons, Status: workflow.StatusPaused, CreatedAt: rec.CreatedAt.Unix(),
		ElapsedTime: rec.Elapsed, TotalTokens: rec.TotalTokens, TotalSteps: rep.Steps}})
	return nil
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

// ReasonEntry is a reason of workflow_paused: the form's members and TYPE.
type ReasonEntry struct {
	Type string `json:"TYPE"`
	FormRequired
}

// Reason is f as a reason of workflow_paused.
func Reason(f FormRequired) ReasonEntry {
	return ReasonEntry{Type: "human_input_required", FormRequired: f}
}

// WorkflowPaused is workflow_paused's data.
type WorkflowPaused struct {
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
