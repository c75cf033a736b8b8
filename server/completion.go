package server

import (
	"context"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/run"
)

// completionApp is app for the completion routes. Dify's Service API answers them for apps of
// another mode with `app_unavailable` (not `not_completion_app`, which it defines but does not
// use there).
func (s *Server) completionApp(ctx context.Context) (*apps.App, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if a.Mode != config.AppModeCompletion {
		return nil, apiError(http.StatusBadRequest, "app_unavailable", msgAppUnavailable)
	}
	return a, nil
}

// SendCompletionMessage answers POST /completion-messages, blocking or streaming.
func (s *Server) SendCompletionMessage(ctx context.Context, req gen.SendCompletionMessageRequestObject) (gen.SendCompletionMessageResponseObject, error) {
	app, err := s.completionApp(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	streaming := b.ResponseMode != nil && *b.ResponseMode == gen.CompletionStreaming
	rreq := run.Request{App: app, User: s.endUser(ctx, b.User), Inputs: b.Inputs, Streaming: streaming, Files: runFiles(b.Files)}
	if b.Query != nil {
		rreq.Query = *b.Query
	}
	r, err := s.runs.Start(ctx, rreq)
	if err != nil {
		return nil, err
	}
	if streaming {
		return s.stream(ctx, r), nil
	}
	rep, err := collect(ctx, r)
	if err != nil {
		return nil, err
	}
	return gen.SendCompletionMessage200JSONResponse{
		Event: gen.CompletionResponseEventMessage, Id: mustUUID(r.MessageID), MessageId: mustUUID(r.MessageID),
		TaskId: mustUUID(r.TaskID), Mode: gen.CompletionResponseModeCompletion, Answer: rep.answer,
		CreatedAt: r.CreatedAt.Unix(), Metadata: responseMetadata(rep.end),
	}, nil
}

// StopCompletionMessage answers POST /completion-messages/{task_id}/stop. As in Dify it answers
// success whether or not the task exists or belongs to this user.
func (s *Server) StopCompletionMessage(ctx context.Context, req gen.StopCompletionMessageRequestObject) (gen.StopCompletionMessageResponseObject, error) {
	app, err := s.completionApp(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.runs.Stop(ctx, req.TaskId, app.ID, s.endUser(ctx, req.Body.User)); err != nil {
		return nil, err
	}
	return gen.StopCompletionMessage200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}
