package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
)

// This file serves the Workflow Runs group: running a Workflow app (mode workflow), its runs,
// their stop and logs. Dify checks the app's mode first on each of these routes.

// WorkflowRunStore reads workflow runs and the logs of Workflow apps; *store.Store implements it.
type WorkflowRunStore interface {
	WorkflowRunByID(ctx context.Context, id string) (store.WorkflowRun, error)
	WorkflowLogs(ctx context.Context, f store.WorkflowLogFilter) ([]store.WorkflowLog, int, error)
	// WorkflowRunOwner is the end user who started a run ("" if none).
	WorkflowRunOwner(ctx context.Context, runID string) (string, error)
}

// passportMayRead reports whether the request may see the workflow run: always with an app
// key; with a passport, only a run its own end user started.
func (s *Server) passportMayRead(ctx context.Context, runID string) (bool, error) {
	pp := passportOf(ctx)
	if pp == nil {
		return true, nil
	}
	owner, err := s.workflowRuns.WorkflowRunOwner(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return owner != "" && owner == pp.EndUserID, nil
}

func errNotWorkflowApp() *APIError {
	return apiError(http.StatusBadRequest, "not_workflow_app", "Please check if your app mode matches the right API route.")
}

// workflowApp is the app for the routes that run a Workflow app.
func (s *Server) workflowApp(ctx context.Context) (*apps.App, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if a.Mode != apps.ModeWorkflow {
		return nil, errNotWorkflowApp()
	}
	return a, nil
}

// graphApp is the app for the routes that read workflow runs, which Dify serves for Chatflow
// apps too.
func (s *Server) graphApp(ctx context.Context) (*apps.App, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if a.Mode != apps.ModeWorkflow && a.Mode != apps.ModeAdvancedChat {
		return nil, errNotWorkflowApp()
	}
	return a, nil
}

// RunWorkflow answers POST /workflows/run.
func (s *Server) RunWorkflow(ctx context.Context, req gen.RunWorkflowRequestObject) (gen.RunWorkflowResponseObject, error) {
	stream, res, err := s.runWorkflow(ctx, req.Body, "")
	if err != nil {
		return nil, err
	}
	if stream != nil {
		return stream, nil
	}
	return gen.RunWorkflow200JSONResponse{WorkflowRunJSONResponse: gen.WorkflowRunJSONResponse(*res)}, nil
}

// RunWorkflowVersion answers POST /workflows/{workflow_id}/run.
func (s *Server) RunWorkflowVersion(ctx context.Context, req gen.RunWorkflowVersionRequestObject) (gen.RunWorkflowVersionResponseObject, error) {
	id := req.WorkflowId
	if strings.TrimSpace(id) == "" {
		return nil, apiError(http.StatusBadRequest, "bad_request", "Invalid workflow_id format: expected a UUID.")
	}
	stream, res, err := s.runWorkflow(ctx, req.Body, id)
	if err != nil {
		return nil, err
	}
	if stream != nil {
		return stream, nil
	}
	return gen.RunWorkflowVersion200JSONResponse{WorkflowRunJSONResponse: gen.WorkflowRunJSONResponse(*res)}, nil
}

// runWorkflow starts a run of the app's version workflowID ("" for the latest published) and
// returns its stream, or waits for its end in blocking mode.
func (s *Server) runWorkflow(ctx context.Context, b *gen.WorkflowRunRequest, workflowID string) (*runStream, *gen.WorkflowRunResponse, error) {
	app, err := s.workflowApp(ctx)
	if err != nil {
		return nil, nil, err
	}
	streaming := b.ResponseMode != nil && *b.ResponseMode == gen.WorkflowStreaming
	r, err := s.runs.Start(ctx, run.Request{App: app, User: s.endUser(ctx, b.User), Inputs: b.Inputs, Streaming: streaming,
		Files: runFiles(b.Files), WorkflowID: workflowID})
	if err != nil {
		return nil, nil, err
	}
	if streaming {
		return s.stream(ctx, r), nil, nil
	}
	res, err := collectWorkflow(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	return nil, &gen.WorkflowRunResponse{TaskId: mustUUID(r.TaskID), WorkflowRunId: mustUUID(r.WorkflowRunID), Data: res}, nil
}

// collectWorkflow waits for a Workflow app's run to end, for a blocking request: its
// workflow_finished, whatever the status, is the reply; an error event (shutdown) is the
// request's error.
func collectWorkflow(ctx context.Context, r *run.Run) (gen.WorkflowRunResult, error) {
	started, end, err := r.WaitWorkflow(ctx)
	switch {
	case errors.Is(err, run.ErrNoEnd):
		return gen.WorkflowRunResult{}, errInternal(err)
	case err != nil:
		return gen.WorkflowRunResult{}, err
	}
	var version string // workflow_started's workflow_id
	var d struct {
		WorkflowID string `json:"workflow_id"`
	}
	if raw, err := json.Marshal(started.Data); err == nil && json.Unmarshal(raw, &d) == nil {
		version = d.WorkflowID
	}
	if end.Kind == run.EventWorkflowPaused {
		// Paused at a human-input form: the reply is the run so far, status paused; it resumes
		// through the form and events operations.
		res, err := decodeWorkflowResult(end)
		res.WorkflowId = version
		return res, err
	}
	res, err := decodeWorkflowResult(end)
	if err != nil {
		return gen.WorkflowRunResult{}, errInternal(err)
	}
	return res, nil
}

// decodeWorkflowResult reads the data of a workflow_finished event (or a workflow_paused one's
// run so far) as a run's result: workflow_finished's data is the blocking reply's data, with
// members the reply leaves out.
func decodeWorkflowResult(end run.Event) (gen.WorkflowRunResult, error) {
	if p, ok := end.Data.(humaninput.WorkflowPaused); ok {
		return gen.WorkflowRunResult{Id: mustUUID(p.WorkflowRunID), Status: gen.WorkflowRunStatusPaused,
			Outputs: &p.Outputs, ElapsedTime: p.ElapsedTime, TotalTokens: int(p.TotalTokens), TotalSteps: p.TotalSteps,
			CreatedAt: p.CreatedAt}, nil
	}
	raw, err := json.Marshal(end.Data)
	if err != nil {
		return gen.WorkflowRunResult{}, err
	}
	var res gen.WorkflowRunResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return gen.WorkflowRunResult{}, err
	}
	return res, nil
}

// VisitRunWorkflowResponse implements gen.RunWorkflowResponseObject.
func (rs *runStream) VisitRunWorkflowResponse(w http.ResponseWriter) error { return rs.write(w) }

// VisitRunWorkflowVersionResponse implements gen.RunWorkflowVersionResponseObject.
func (rs *runStream) VisitRunWorkflowVersionResponse(w http.ResponseWriter) error {
	return rs.write(w)
}

// GetWorkflowRun answers GET /workflows/run/{workflow_run_id}.
func (s *Server) GetWorkflowRun(ctx context.Context, req gen.GetWorkflowRunRequestObject) (gen.GetWorkflowRunResponseObject, error) {
	app, err := s.graphApp(ctx)
	if err != nil {
		return nil, err
	}
	notFound := apiError(http.StatusNotFound, "not_found", "Workflow run not found.")
	if _, err := uuid.Parse(req.WorkflowRunId); err != nil {
		return nil, notFound
	}
	r, err := s.workflowRuns.WorkflowRunByID(ctx, req.WorkflowRunId)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.AppID != app.ID {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if ok, err := s.passportMayRead(ctx, r.ID); err != nil {
		return nil, err
	} else if !ok {
		return nil, notFound
	}
	outputs := map[string]any{}
	if len(r.Outputs) > 0 {
		if err := json.Unmarshal(r.Outputs, &outputs); err != nil || outputs == nil {
			outputs = map[string]any{}
		}
	}
	inputs := string(r.Inputs)
	if inputs == "" {
		inputs = "{}"
	}
	out := gen.GetWorkflowRun200JSONResponse{Id: mustUUID(r.ID), WorkflowId: r.WorkflowID,
		Status: gen.WorkflowRunDetailStatus(r.Status), Inputs: inputs, Outputs: outputs, Error: nullableText(r.Error),
		TotalSteps: r.TotalSteps, TotalTokens: int(r.TotalTokens), CreatedAt: r.CreatedAt.Unix(), ElapsedTime: r.Elapsed,
		TriggeredFrom: gen.WorkflowRunDetailTriggeredFrom(triggeredFrom(r))}
	if r.FinishedAt != nil {
		f := r.FinishedAt.Unix()
		out.FinishedAt = &f
	}
	return out, nil
}

// StopWorkflowTask answers POST /workflows/tasks/{task_id}/stop.
func (s *Server) StopWorkflowTask(ctx context.Context, req gen.StopWorkflowTaskRequestObject) (gen.StopWorkflowTaskResponseObject, error) {
	app, err := s.workflowApp(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.runs.StopWorkflow(ctx, req.TaskId, app.ID); err != nil {
		return nil, err
	}
	return gen.StopWorkflowTask200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}

// ListWorkflowLogs answers GET /workflows/logs.
func (s *Server) ListWorkflowLogs(ctx context.Context, req gen.ListWorkflowLogsRequestObject) (gen.ListWorkflowLogsResponseObject, error) {
	app, err := s.graphApp(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	page, limit := 1, 20
	if p.Page != nil {
		page = *p.Page
	}
	if p.Limit != nil {
		limit = *p.Limit
	}
	if p.CreatedByAccount != nil && *p.CreatedByAccount != "" {
		// Runs through the API are started by end users; Parley has no console accounts, so
		// no email names one, and Dify refuses an unknown account so.
		return nil, errInvalidParam("Account not found: " + *p.CreatedByAccount)
	}
	f := store.WorkflowLogFilter{AppID: app.ID, Offset: (page - 1) * limit, Limit: limit}
	if p.Keyword != nil {
		f.Keyword = *p.Keyword
	}
	if p.Status != nil {
		f.Status = string(*p.Status)
	}
	if p.CreatedAtBefore != nil {
		f.Before = *p.CreatedAtBefore
	}
	if p.CreatedAtAfter != nil {
		f.After = *p.CreatedAtAfter
	}
	if p.CreatedByEndUserSessionId != nil {
		f.SessionID = *p.CreatedByEndUserSessionId
	}
	logs, total, err := s.workflowRuns.WorkflowLogs(ctx, f)
	if err != nil {
		return nil, err
	}
	out := gen.ListWorkflowLogs200JSONResponse{Page: page, Limit: limit, Total: total, HasMore: page*limit < total,
		Data: make([]gen.WorkflowLog, 0, len(logs))}
	for _, l := range logs {
		r := l.Run
		item := gen.WorkflowLog{Id: mustUUID(l.ID), CreatedAt: r.CreatedAt.Unix(), CreatedFrom: "service-api",
			CreatedByRole: "end_user"}
		item.CreatedByEndUser.Id = mustUUID(l.EndUserID)
		item.CreatedByEndUser.Type = "service_api"
		item.CreatedByEndUser.SessionId = l.EndUserSessionID
		item.CreatedByEndUser.IsAnonymous = l.EndUserSessionID == run.AnonymousUser
		wr := &item.WorkflowRun
		wr.Id, wr.Version, wr.Status = mustUUID(r.ID), strconv.FormatInt(l.Version, 10), gen.WorkflowLogWorkflowRunStatus(r.Status)
		wr.Error, wr.ElapsedTime, wr.TotalTokens, wr.TotalSteps = nullableText(r.Error), r.Elapsed, int(r.TotalTokens), r.TotalSteps
		wr.CreatedAt, wr.ExceptionsCount = r.CreatedAt.Unix(), r.ExceptionsCount
		wr.TriggeredFrom = gen.WorkflowLogWorkflowRunTriggeredFrom(triggeredFrom(r))
		if r.FinishedAt != nil {
			f := r.FinishedAt.Unix()
			wr.FinishedAt = &f
		}
		out.Data = append(out.Data, item)
	}
	return out, nil
}

// nullableText is s, or nil when empty.
func nullableText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// triggeredFrom is how a run was started, as Dify's logs say it: app-run through the API, webhook
// or schedule by a trigger.
func triggeredFrom(r store.WorkflowRun) string {
	if r.TriggeredFrom == "" {
		return store.TriggeredFromAppRun
	}
	return r.TriggeredFrom
}
