package server

import (
	"context"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/annotations"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// maxAnnotationPage is the most annotations one page lists; a larger limit is taken as it, as
// Dify caps it.
const maxAnnotationPage = 100

// ListAnnotations answers GET /apps/annotations.
func (s *Server) ListAnnotations(ctx context.Context, req gen.ListAnnotationsRequestObject) (gen.ListAnnotationsResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	page, limit, keyword := 1, 20, ""
	if p := req.Params; p.Page != nil {
		page = *p.Page
	}
	if p := req.Params; p.Limit != nil {
		limit = min(*p.Limit, maxAnnotationPage)
	}
	if req.Params.Keyword != nil {
		keyword = *req.Params.Keyword
	}
	pg, err := s.annotations.List(ctx, app.ID, keyword, page, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAnnotations200JSONResponse{Data: make([]gen.Annotation, len(pg.Data)), HasMore: pg.HasMore,
		Limit: pg.Limit, Total: pg.Total, Page: pg.Page}
	for i, a := range pg.Data {
		out.Data[i] = genAnnotation(a)
	}
	return out, nil
}

// CreateAnnotation answers POST /apps/annotations.
func (s *Server) CreateAnnotation(ctx context.Context, req gen.CreateAnnotationRequestObject) (gen.CreateAnnotationResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.annotations.Create(ctx, app.ID, req.Body.Question, req.Body.Answer)
	if err != nil {
		return nil, err
	}
	return gen.CreateAnnotation201JSONResponse(genAnnotation(a)), nil
}

// UpdateAnnotation answers PUT /apps/annotations/{annotation_id}.
func (s *Server) UpdateAnnotation(ctx context.Context, req gen.UpdateAnnotationRequestObject) (gen.UpdateAnnotationResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.annotations.Update(ctx, app.ID, req.AnnotationId, req.Body.Question, req.Body.Answer)
	if err != nil {
		return nil, err
	}
	return gen.UpdateAnnotation200JSONResponse(genAnnotation(a)), nil
}

// DeleteAnnotation answers DELETE /apps/annotations/{annotation_id}.
func (s *Server) DeleteAnnotation(ctx context.Context, req gen.DeleteAnnotationRequestObject) (gen.DeleteAnnotationResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.annotations.Delete(ctx, app.ID, req.AnnotationId); err != nil {
		return nil, err
	}
	return gen.DeleteAnnotation204Response{}, nil
}

// SetAnnotationReply answers POST /apps/annotation-reply/{action}.
func (s *Server) SetAnnotationReply(ctx context.Context, req gen.SetAnnotationReplyRequestObject) (gen.SetAnnotationReplyResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	j, err := s.annotations.SetReply(ctx, app.ID, string(req.Action), annotations.ReplySettings{
		EmbeddingProvider: b.EmbeddingProviderName, EmbeddingModel: b.EmbeddingModelName, ScoreThreshold: b.ScoreThreshold})
	if err != nil {
		return nil, err
	}
	return gen.SetAnnotationReply200JSONResponse{JobId: j.ID, JobStatus: gen.AnnotationReplyJobJobStatus(j.Status)}, nil
}

// GetAnnotationReplyStatus answers GET /apps/annotation-reply/{action}/status/{job_id}.
func (s *Server) GetAnnotationReplyStatus(ctx context.Context, req gen.GetAnnotationReplyStatusRequestObject) (gen.GetAnnotationReplyStatusResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	j, err := s.annotations.JobStatus(ctx, app.ID, string(req.Action), req.JobId)
	if err != nil {
		return nil, err
	}
	return gen.GetAnnotationReplyStatus200JSONResponse{JobId: j.ID, JobStatus: gen.AnnotationReplyJobStatusJobStatus(j.Status), ErrorMsg: j.Error}, nil
}

func genAnnotation(a store.Annotation) gen.Annotation {
	return gen.Annotation{Id: a.ID, Question: a.Question, Answer: a.Answer, HitCount: a.HitCount, CreatedAt: a.CreatedAt.Unix()}
}

// genAnnotationReply is metadata's annotation_reply: the annotation an answer came from, nil for
// an answer of the model.
func genAnnotationReply(a *run.AnnotationReply) *gen.AnnotationReply {
	if a == nil {
		return nil
	}
	out := &gen.AnnotationReply{Id: a.ID}
	id, name := a.Account.ID, a.Account.Name
	out.Account = &struct {
		Id   *string `json:"id,omitempty"`
		Name *string `json:"name,omitempty"`
	}{Id: &id, Name: &name}
	return out
}

// audioAndAnnotationParameters fills the speech and annotation-reply switches of GET /parameters:
// speech from the app's features, annotation reply from whether it is on for the app.
func (s *Server) audioAndAnnotationParameters(ctx context.Context, appID string, a *apps.App, out *gen.GetAppParameters200JSONResponse) error {
	out.SpeechToText = gen.Enabled{Enabled: a.Features.SpeechToText.Enabled}
	tts := a.Features.TextToSpeech
	out.TextToSpeech.Enabled = tts.Enabled
	if tts.Voice != "" {
		out.TextToSpeech.Voice = &tts.Voice
	}
	if tts.Language != "" {
		out.TextToSpeech.Language = &tts.Language
	}
	if tts.AutoPlay == string(gen.AppParametersTextToSpeechAutoPlayEnabled) || tts.AutoPlay == string(gen.AppParametersTextToSpeechAutoPlayDisabled) {
		play := gen.AppParametersTextToSpeechAutoPlay(tts.AutoPlay)
		out.TextToSpeech.AutoPlay = &play
	}
	if s.annotations == nil {
		return nil
	}
	on, err := s.annotations.Enabled(ctx, appID)
	out.AnnotationReply = gen.Enabled{Enabled: on}
	return err
}
