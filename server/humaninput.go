package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/sse"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
)

// This file serves the Human Input operations (the form of a paused run, its submission) and
// the stream of a resumed run's events.

// idleClose is how long the events stream stays open without an event, as in Dify.
const idleClose = 300 * time.Second

const msgWorkflowRunNotFound = "Workflow run not found"

// GetHumanInputForm answers GET /form/human_input/{form_token}.
func (s *Server) GetHumanInputForm(ctx context.Context, req gen.GetHumanInputFormRequestObject) (gen.GetHumanInputFormResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if s.humanInput == nil {
		return nil, humaninput.ErrFormNotFound
	}
	f, err := s.humanInput.Form(ctx, app.ID, req.FormToken)
	if err != nil {
		return nil, err
	}
	// A page sees the forms of its own end user's runs only.
	if ok, err := s.passportMayRead(ctx, f.Stored.WorkflowRunID); err != nil {
		return nil, err
	} else if !ok {
		return nil, humaninput.ErrFormNotFound
	}
	d := f.Definition
	view := gen.GetHumanInputForm200JSONResponse{FormContent: d.Content, ExpirationTime: f.Stored.Expiration.Unix(),
		ResolvedDefaultValues: d.DefaultValues, Inputs: []gen.HumanInputField{}, UserActions: []gen.HumanInputAction{}}
	if view.ResolvedDefaultValues == nil {
		view.ResolvedDefaultValues = map[string]string{}
	}
	if raw, err := json.Marshal(d.Inputs); err == nil && d.Inputs != nil {
		if err := json.Unmarshal(raw, &view.Inputs); err != nil {
			return nil, err
		}
	}
	for _, a := range d.Actions {
		view.UserActions = append(view.UserActions, gen.HumanInputAction{Id: a.ID, Title: a.Title, ButtonStyle: a.ButtonStyle})
	}
	return view, nil
}

// SubmitHumanInputForm answers POST /form/human_input/{form_token}.
func (s *Server) SubmitHumanInputForm(ctx context.Context, req gen.SubmitHumanInputFormRequestObject) (gen.SubmitHumanInputFormResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if s.humanInput == nil {
		return nil, humaninput.ErrFormNotFound
	}
	if passportOf(ctx) != nil {
		f, err := s.humanInput.Form(ctx, app.ID, req.FormToken)
		if err != nil {
			return nil, err
		}
		if ok, err := s.passportMayRead(ctx, f.Stored.WorkflowRunID); err != nil {
			return nil, err
		} else if !ok {
			return nil, humaninput.ErrFormNotFound
		}
	}
	b := req.Body
	user := s.endUser(ctx, b.User)
	if strings.TrimSpace(user) == "" {
		return nil, errInvalidParam("user is required")
	}
	if err := s.humanInput.Submit(ctx, app.ID, req.FormToken, b.Action, b.Inputs, user); err != nil {
		return nil, err
	}
	return gen.SubmitHumanInputForm200JSONResponse{}, nil
}

// StreamWorkflowEvents answers GET /workflow/{workflow_run_id}/events.
func (s *Server) StreamWorkflowEvents(ctx context.Context, req gen.StreamWorkflowEventsRequestObject) (gen.StreamWorkflowEventsResponseObject, error) {
	app, err := s.graphApp(ctx)
	if err != nil {
		return nil, err
	}
	notFound := apiError(http.StatusNotFound, "not_found", msgWorkflowRunNotFound)
	if _, err := uuid.Parse(req.WorkflowRunId); err != nil || s.humanInput == nil {
		return nil, notFound
	}
	session := s.endUser(ctx, req.Params.User)
	user, err := s.runs.EndUser(ctx, app.ID, session)
	if err != nil {
		return nil, err
	}
	info, err := s.humanInput.Run(ctx, app.ID, user.ID, req.WorkflowRunId)
	if errors.Is(err, humaninput.ErrRunNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	truthy := func(p *string) bool { return p != nil && strings.EqualFold(strings.TrimSpace(*p), "true") }
	es := &eventsStream{ctx: ctx, srv: s, info: info, user: session,
		snapshot: truthy(req.Params.IncludeStateSnapshot), continueOnPause: truthy(req.Params.ContinueOnPause)}
	if err := es.catchUp(); err != nil {
		return nil, err
	}
	return es, nil
}

// eventsStream writes the events of a run from the event log: those of its current segment so
// far (the catch-up), then the log's new events as they come, whichever replica runs the run.
type eventsStream struct {
	ctx             context.Context
	srv             *Server
	info            humaninput.RunInfo
	user            string
	snapshot        bool
	continueOnPause bool
	// cur is where the stream follows the log from, after caught.
	cur    eventlog.Cursor
	caught []eventlog.Entry
}

// catchUp reads the run's latest segment so far. The run's first segment, up to its pause (its
// workflow_paused), is not replayed: its own stream delivered it, and the events
// stream waits for the next segment, the resumption, as Dify's does (the state of a paused run
// is what include_state_snapshot replays). A resumption is replayed, so that a client that
// connects after submitting a form sees it whole, wherever it ran.
func (es *eventsStream) catchUp() error {
	log, id := es.srv.events, es.info.Run.ID
	st, err := log.Start(es.ctx, id)
	if err != nil {
		return err
	}
	cur := st.Cursor
	if st.Found {
		for {
			evs, next, err := log.Next(es.ctx, id, cur, time.Millisecond)
			if err != nil {
				return err
			}
			if len(evs) == 0 && next == cur {
				break
			}
			es.caught, cur = append(es.caught, evs...), next
		}
		if st.Tag != segmentResumed {
			// What follows the first segment's pause (a resumption that began meanwhile) is new.
			for k, ev := range es.caught {
				if ev.Event == pausedEvent {
					es.caught = es.caught[k+1:]
					break
				}
			}
		}
	}
	es.cur = cur
	return nil
}

// envelope is a run.Run carrying the ids of the run's events (for the encoder only).
func (es *eventsStream) envelope(taskID string) *run.Run {
	i := es.info
	return &run.Run{TaskID: taskID, MessageID: i.Run.MessageID, ConversationID: i.Run.ConversationID,
		WorkflowRunID: i.Run.ID, CreatedAt: i.MessageCreated, Mode: i.Mode}
}

// VisitStreamWorkflowEventsResponse implements gen.StreamWorkflowEventsResponseObject.
func (es *eventsStream) VisitStreamWorkflowEventsResponse(w http.ResponseWriter) error {
	s, i := es.srv, es.info
	out := s.startStream(w)
	defer s.endStream(out)
	if i.Run.Status != workflow.StatusPaused && i.Run.Status != workflow.StatusRunning && len(es.caught) == 0 {
		// A finished run whose last segment the log no longer holds: its one workflow_finished.
		data, err := newEventEncoder(es.envelope(i.Run.ID)).encode(es.finished())
		if err != nil {
			return err
		}
		if err := out.Queue(data); err != nil {
			return nil
		}
		return out.Flush()
	}
	if err := out.Ping(); err != nil {
		return nil
	}
	if es.snapshot {
		if err := es.writeSnapshot(out); err != nil {
			return nil
		}
		if i.Run.Status == workflow.StatusPaused && !es.continueOnPause {
			// The replayed workflow_paused ends the stream, as a live one would.
			return nil
		}
	}
	pump(es.ctx, out, &logFrames{es: es, pending: es.caught, cur: es.cur, lastEvent: time.Now()}, s.pingInterval)
	return nil
}

// logFrames is the frameSource of an events stream: the entries caught up with, then the log's
// new entries as they come. The stream ends after the run's last event (workflow_finished or
// error, or workflow_paused unless the client asked to continue past it), or when no event came
// for idleClose.
type logFrames struct {
	es        *eventsStream
	pending   []eventlog.Entry
	cur       eventlog.Cursor
	lastEvent time.Time
}

func (f *logFrames) next(ctx context.Context, wait time.Duration, out *sse.Writer) (bool, error) {
	es := f.es
	evs := f.pending
	f.pending = nil
	if len(evs) == 0 {
		if idle := idleClose - time.Since(f.lastEvent); idle < wait {
			wait = idle
		}
		var err error
		evs, f.cur, err = es.srv.events.Next(ctx, es.info.Run.ID, f.cur, max(wait, time.Millisecond))
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			// The log is unreachable (Redis down): end the stream; the client reconnects.
			es.srv.log.Error("read workflow run events", "workflow_run_id", es.info.Run.ID, "error", err)
			return false, err
		}
		if len(evs) == 0 {
			return time.Since(f.lastEvent) >= idleClose, nil
		}
	}
	for _, ev := range evs {
		if err := out.Queue(ev.Data); err != nil {
			return false, err
		}
		f.lastEvent = time.Now()
		switch ev.Event {
		case finishedEvent, errorEvent:
			return true, nil
		case pausedEvent:
			if !es.continueOnPause {
				return true, nil
			}
		}
	}
	return false, nil
}

// The names of the events that end an events stream.
var (
	finishedEvent = run.EventWorkflowFinished.String()
	errorEvent    = run.EventError.String()
	pausedEvent   = run.EventWorkflowPaused.String()
)

// finished is the workflow_finished event of a stored run.
func (es *eventsStream) finished() run.Event {
	r := es.info.Run
	var outputs map[string]any
	_ = json.Unmarshal(r.Outputs, &outputs)
	if outputs == nil {
		outputs = map[string]any{}
	}
	var errText *string
	if r.Error != "" {
		e := r.Error
		errText = &e
	}
	finished := r.CreatedAt
	if r.FinishedAt != nil {
		finished = *r.FinishedAt
	}
	return run.Event{Kind: run.EventWorkflowFinished, Data: map[string]any{
		"id": r.ID, "workflow_id": r.WorkflowID, "status": r.Status, "outputs": outputs, "error": errText,
		"elapsed_time": r.Elapsed, "total_tokens": r.TotalTokens, "total_steps": r.TotalSteps,
		"created_by": map[string]any{"id": es.info.EndUserID, "user": es.user}, "created_at": r.CreatedAt.Unix(),
		"finished_at": finished.Unix(), "exceptions_count": r.ExceptionsCount, "files": []any{},
	}}
}

// writeSnapshot replays the run so far: workflow_started, the answer so far, each stored node
// execution, and for a paused run its waiting forms and workflow_paused.
func (es *eventsStream) writeSnapshot(out *sse.Writer) error {
	i := es.info
	enc := newEventEncoder(es.envelope(i.Run.ID))
	var inputs map[string]any
	_ = json.Unmarshal(i.Run.Inputs, &inputs)
	if inputs == nil {
		inputs = map[string]any{}
	}
	evs := []run.Event{{Kind: run.EventWorkflowStarted, Data: map[string]any{"id": i.Run.ID, "workflow_id": i.Run.WorkflowID,
		"inputs": inputs, "created_at": i.Run.CreatedAt.Unix(), "reason": "initial"}}}
	if i.Mode == apps.ModeAdvancedChat {
		evs = append(evs, run.Event{Kind: run.EventMessageReplace, Answer: i.Answer})
	}
	for _, n := range i.Nodes {
		evs = append(evs, run.Event{Kind: run.EventNodeStarted, Data: nodeSnapshot(n, false)})
		if n.Status != workflow.NodeRunning && n.Status != workflow.NodePaused {
			evs = append(evs, run.Event{Kind: run.EventNodeFinished, Data: nodeSnapshot(n, true)})
		}
	}
	if i.Run.Status == workflow.StatusPaused {
		reasons := []any{}
		var paused []string
		for _, f := range i.Forms {
			if f.Status != store.FormWaiting {
				continue
			}
			var def workflow.HumanInputForm
			if json.Unmarshal(f.Definition, &def) != nil {
				continue
			}
			p := humaninput.FormPayload(f, &def)
			evs = append(evs, run.Event{Kind: run.EventHumanInputRequired, Data: p})
			reasons = append(reasons, humaninput.Reason(p))
			paused = append(paused, f.NodeID)
		}
		if paused == nil {
			paused = []string{}
		}
		evs = append(evs, run.Event{Kind: run.EventWorkflowPaused, Data: humaninput.WorkflowPaused{WorkflowRunID: i.Run.ID,
			PausedNodes: paused, Outputs: map[string]any{}, Reasons: reasons, Status: workflow.StatusPaused,
			CreatedAt: i.Run.CreatedAt.Unix(), ElapsedTime: i.Run.Elapsed, TotalTokens: i.Run.TotalTokens,
			TotalSteps: i.Run.TotalSteps}})
	}
	for _, ev := range evs {
		data, err := enc.encode(ev)
		if err != nil {
			return err
		}
		if err := out.Queue(data); err != nil {
			return err
		}
	}
	return out.Flush()
}

// nodeSnapshot is node_started's (or node_finished's) data for a stored node execution.
func nodeSnapshot(n store.NodeExecution, finished bool) map[string]any {
	obj := func(raw json.RawMessage) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if m == nil {
			m = map[string]any{}
		}
		return m
	}
	var pred *string
	if n.PredecessorNodeID != "" {
		p := n.PredecessorNodeID
		pred = &p
	}
	d := map[string]any{"id": n.ID, "node_id": n.NodeID, "node_type": n.NodeType, "title": n.Title, "index": n.Index,
		"predecessor_node_id": pred, "inputs": obj(n.Inputs), "created_at": n.CreatedAt.Unix(), "extras": map[string]any{},
		"iteration_id": nil, "loop_id": nil}
	if !finished {
		return d
	}
	var errText *string
	if n.Error != "" {
		e := n.Error
		errText = &e
	}
	at := n.CreatedAt
	if n.FinishedAt != nil {
		at = *n.FinishedAt
	}
	d["process_data"], d["outputs"], d["status"], d["error"] = obj(n.ProcessData), obj(n.Outputs), n.Status, errText
	d["elapsed_time"], d["execution_metadata"], d["finished_at"], d["files"] = n.Elapsed, obj(n.Metadata), at.Unix(), []any{}
	return d
}
