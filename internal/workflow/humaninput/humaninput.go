// Package humaninput serves the forms of paused workflow runs and resumes the runs: a submitted
// form or a timer that fires decides a form (one conditional UPDATE decides between them), then
// the run is claimed (paused → running, conditional too) and its next segment runs from the
// persisted state in this process. Timers live in the database: each waiting form has a durable
// job (internal/jobs) due at its first deadline, written with the form; whichever replica claims
// it decides the form, so a form whose timeout passed while no server ran is decided as soon as
// one runs. docs/human-input.md describes the states.
package humaninput

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
)

// Errors of the form operations, as Dify answers them.
var (
	// ErrFormNotFound is an unknown token, a form of another app or one not delivered to the
	// web app (404 not_found).
	ErrFormNotFound = errors.New("form not found")
	// ErrFormSubmitted is a form already submitted (412 human_input_form_submitted).
	ErrFormSubmitted = errors.New("the form has already been submitted")
	// ErrFormExpired is a form past its timeout (412 human_input_form_expired).
	ErrFormExpired = errors.New("the form has expired")
	// ErrRunNotFound is a run of another app or end user, or none (404 not_found).
	ErrRunNotFound = errors.New("workflow run not found")
)

// Store is what the service needs from storage; *store.Store implements it.
type Store interface {
	HumanInputFormByToken(ctx context.Context, token string) (store.HumanInputForm, error)
	SubmitHumanInputForm(ctx context.Context, id, action string, data json.RawMessage, by string, now time.Time) (bool, error)
	TimeOutHumanInputForm(ctx context.Context, id string, now time.Time) (bool, error)
	HumanInputFormByID(ctx context.Context, id string) (store.HumanInputForm, error)
	ExpireHumanInputRun(ctx context.Context, runID, errText string, now time.Time) (bool, error)
	ClaimPausedRun(ctx context.Context, runID string) (bool, error)
	ReleaseRun(ctx context.Context, runID string) error
	DecidedForms(ctx context.Context, runID string) ([]store.HumanInputForm, error)
	WorkflowRunByID(ctx context.Context, id string) (store.WorkflowRun, error)
	WorkflowRunOwner(ctx context.Context, runID string) (string, error)
	NodeExecutions(ctx context.Context, runID string) ([]store.NodeExecution, error)
	HumanInputForms(ctx context.Context, runID string) ([]store.HumanInputForm, error)
	Message(ctx context.Context, appID, endUserID, id string) (store.Message, error)
	RunsToResume(ctx context.Context) ([]store.WorkflowRun, error)
}

// Resumer prepares the next segment of a paused run of one app kind (chatflow.Runner).
type Resumer interface {
	Resume(ctx context.Context, app *apps.App, runID string, decided []store.HumanInputForm) (run.Resumption, error)
}

// Options configure a Service.
type Options struct {
	Store Store
	Runs  *run.Engine
	// Resumers by app mode.
	Resumers map[string]Resumer
	// App returns an app by id (the registry's lookup).
	App    func(ctx context.Context, id string) (*apps.App, error)
	Logger *slog.Logger
}

// Service serves forms and resumes runs.
type Service struct {
	o   Options
	log *slog.Logger
}

// New returns a Service; register HandleTimer for store.JobKindHumanInputTimer on the job
// queue and call ResumeDecided at start.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{o: o, log: o.Logger}
}

// Form is a form as the form operation shows it.
type Form struct {
	Stored     store.HumanInputForm
	Definition workflow.HumanInputForm
}

// Form returns the waiting form a token opens for an app.
func (s *Service) Form(ctx context.Context, appID, token string) (Form, error) {
	f, err := s.o.Store.HumanInputFormByToken(ctx, token)
	if errors.Is(err, store.ErrNotFound) || err == nil && f.AppID != appID {
		return Form{}, ErrFormNotFound
	}
	if err != nil {
		return Form{}, err
	}
	var def workflow.HumanInputForm
	if err := json.Unmarshal(f.Definition, &def); err != nil {
		return Form{}, fmt.Errorf("humaninput: form %s: %w", f.ID, err)
	}
	now := time.Now()
	switch {
	case f.Status == store.FormSubmitted:
		return Form{}, ErrFormSubmitted
	case f.Status != store.FormWaiting, !now.Before(f.Expiration), !now.Before(f.GlobalDeadline):
		return Form{}, ErrFormExpired
	}
	return Form{Stored: f, Definition: def}, nil
}

// Submit records a submission and resumes the run. A submission the form does not accept
// returns a *workflow.FormDataError and leaves the form open.
func (s *Service) Submit(ctx context.Context, appID, token, action string, inputs map[string]any, user string) error {
	f, err := s.Form(ctx, appID, token)
	if err != nil {
		return err
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	if err := f.Definition.Check(action, inputs); err != nil {
		return err
	}
	data, err := json.Marshal(inputs)
	if err != nil {
		return err
	}
	ok, err := s.o.Store.SubmitHumanInputForm(ctx, f.Stored.ID, action, data, user, time.Now())
	if err != nil {
		return err
	}
	if !ok {
		// Decided since it was read: by another submission or the timer.
		if _, err := s.Form(ctx, appID, token); err != nil {
			return err
		}
		return ErrFormExpired
	}
	go s.drive(f.Stored.WorkflowRunID, f.Stored.AppID)
	return nil
}

// drive resumes a run for as long as decided forms wait for it: a decision that arrives while a
// segment runs is taken when the segment ends.
func (s *Service) drive(runID, appID string) {
	ctx := context.Background()
	for {
		ok, err := s.o.Store.ClaimPausedRun(ctx, runID)
		if err != nil {
			s.log.Error("claim paused run", "workflow_run_id", runID, "error", err)
			return
		}
		if !ok {
			return // not paused: a segment runs (it will look again) or the run ended
		}
		decided, err := s.o.Store.DecidedForms(ctx, runID)
		if err == nil && len(decided) == 0 {
			err = s.o.Store.ReleaseRun(ctx, runID)
			if err == nil {
				// A decision may have arrived between the read and the release.
				if decided, err = s.o.Store.DecidedForms(ctx, runID); err == nil && len(decided) > 0 {
					continue
				}
			}
			if err != nil {
				s.log.Error("release run", "workflow_run_id", runID, "error", err)
			}
			return
		}
		if err != nil {
			s.log.Error("read decided forms", "workflow_run_id", runID, "error", err)
			_ = s.o.Store.ReleaseRun(ctx, runID)
			return
		}
		r, err := s.resume(ctx, runID, appID, decided)
		if err != nil {
			s.log.Error("resume workflow run", "workflow_run_id", runID, "error", err)
			_ = s.o.Store.ReleaseRun(ctx, runID)
			return
		}
		// Nobody reads the segment's own stream: its events reach clients through the
		// engine's tap, the event log the events operation serves from any replica.
		r.Detach()
		<-r.Done()
	}
}

func (s *Service) resume(ctx context.Context, runID, appID string, decided []store.HumanInputForm) (*run.Run, error) {
	app, err := s.o.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	res, ok := s.o.Resumers[app.Mode]
	if !ok {
		return nil, fmt.Errorf("humaninput: apps of mode %s cannot resume", app.Mode)
	}
	rs, err := res.Resume(ctx, app, runID, decided)
	if err != nil {
		return nil, err
	}
	return s.o.Runs.Resume(ctx, rs)
}

// Created is the paused forms were just stored by this process. Their timers are jobs stored
// with them, so there is nothing left to do; it is kept for the pause hook.
func (s *Service) Created() {}

// ResumeDecided resumes the runs whose forms a stopped server decided without acting on the
// decision. Call it at start.
func (s *Service) ResumeDecided(ctx context.Context) {
	rs, err := s.o.Store.RunsToResume(ctx)
	if err != nil {
		s.log.Error("read runs to resume", "error", err)
		return
	}
	for _, r := range rs {
		go s.drive(r.ID, r.AppID)
	}
}

// errNotDue is a timer job that ran before its form's deadline (it is retried).
var errNotDue = errors.New("humaninput: form timer ran before its deadline")

// HandleTimer is the jobs.Handler of store.JobKindHumanInputTimer: it decides the form whose
// timeout passed (the run resumes on the __timeout edge, in this process), or stops the run
// whose global deadline passed. A form decided meanwhile (submitted, or by another timer) is
// left alone: the conditional UPDATE of the store decides once.
func (s *Service) HandleTimer(ctx context.Context, job jobs.Job) error {
	f, err := s.o.Store.HumanInputFormByID(ctx, string(job.Payload))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.Status != store.FormWaiting {
		return nil
	}
	now := time.Now()
	if !now.Before(f.GlobalDeadline) {
		msg := "Human input global timeout at node " + f.NodeID
		ok, err := s.o.Store.ExpireHumanInputRun(ctx, f.WorkflowRunID, msg, now)
		if err != nil {
			return fmt.Errorf("humaninput: expire paused run %s: %w", f.WorkflowRunID, err)
		}
		if ok {
			s.log.Info("stopped a run past the human input global timeout", "workflow_run_id", f.WorkflowRunID)
		}
		return nil
	}
	if now.Before(f.Expiration) {
		return errNotDue
	}
	ok, err := s.o.Store.TimeOutHumanInputForm(ctx, f.ID, now)
	if err != nil {
		return fmt.Errorf("humaninput: time out form %s: %w", f.ID, err)
	}
	if ok {
		go s.drive(f.WorkflowRunID, f.AppID)
	}
	return nil
}

// RunInfo is a run as the events operation reads it.
type RunInfo struct {
	Run       store.WorkflowRun
	Mode      string
	EndUserID string
	// MessageCreated and Answer are the run's message (a Chatflow's): its creation time and the
	// answer stored so far.
	MessageCreated time.Time
	Answer         string
	Nodes          []store.NodeExecution
	Forms          []store.HumanInputForm
}

// Run returns the run runID of app appID if the end user endUserID started it.
func (s *Service) Run(ctx context.Context, appID, endUserID, runID string) (RunInfo, error) {
	r, err := s.o.Store.WorkflowRunByID(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return RunInfo{}, ErrRunNotFound
	}
	if err != nil {
		return RunInfo{}, err
	}
	owner, err := s.o.Store.WorkflowRunOwner(ctx, runID)
	if err != nil {
		return RunInfo{}, err
	}
	if r.AppID != appID || owner == "" || owner != endUserID {
		return RunInfo{}, ErrRunNotFound
	}
	app, err := s.o.App(ctx, appID)
	if err != nil {
		return RunInfo{}, err
	}
	info := RunInfo{Run: r, Mode: app.Mode, EndUserID: endUserID, MessageCreated: r.CreatedAt}
	if r.MessageID != "" {
		m, err := s.o.Store.Message(ctx, appID, endUserID, r.MessageID)
		if err != nil {
			return RunInfo{}, err
		}
		info.MessageCreated, info.Answer = m.CreatedAt, m.Answer
	}
	if info.Nodes, err = s.o.Store.NodeExecutions(ctx, runID); err != nil {
		return RunInfo{}, err
	}
	if info.Forms, err = s.o.Store.HumanInputForms(ctx, runID); err != nil {
		return RunInfo{}, err
	}
	return info, nil
}
