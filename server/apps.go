package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
)

const msgAppUnavailable = "App unavailable, please check your app configurations."

// app returns the app the request's key belongs to. An app the config no longer declares, or
// has disabled, or that was deleted, is unavailable.
func (s *Server) app(ctx context.Context) (*apps.App, error) {
	p, ok := principalFrom(ctx)
	if !ok || p.AppID == "" {
		return nil, errUnauthorized(msgInvalidToken)
	}
	var a *apps.App
	var err error
	if ra := cachedApp(ctx, p.AppID); ra != nil {
		a, err = ra.app, ra.err
	} else {
		a, err = s.apps.Get(ctx, p.AppID)
	}
	if err == nil && !a.Enabled {
		return nil, apiError(http.StatusBadRequest, "app_unavailable", msgAppUnavailable)
	}
	return a, err
}

// chatApp is app for the chat routes: other modes get `not_chat_app`, as in Dify.
func (s *Server) chatApp(ctx context.Context) (*apps.App, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if !a.IsChat() {
		return nil, apiError(http.StatusBadRequest, "not_chat_app", "Please check if your app mode matches the right API route.")
	}
	return a, nil
}

// answering is the app as it answers, for the routes that call its model (suggested questions,
// generated names): for an Agent app, the published version of its bound Agent.
func answering(a *apps.App) (*apps.App, error) {
	if a.Mode != apps.ModeAgent {
		return a, nil
	}
	return a.PublishedAgent()
}

// GetAppParameters answers GET /parameters.
func (s *Server) GetAppParameters(ctx context.Context, _ gen.GetAppParametersRequestObject) (gen.GetAppParametersResponseObject, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	appID := a.ID
	if a.Mode == apps.ModeAgent {
		// An Agent app's parameters are its published agent's. Unlike POST /chat-messages, Dify
		// answers an app without a bound agent here as an unavailable app.
		if a, err = a.PublishedAgent(); errors.Is(err, apps.ErrNoBoundAgent) {
			return nil, apiError(http.StatusBadRequest, "app_unavailable", msgAppUnavailable).withCause(err)
		} else if err != nil {
			return nil, err
		}
	}
	p := a.Parameters(s.limits)
	out := gen.GetAppParameters200JSONResponse{
		OpeningStatement:              p.OpeningStatement,
		SuggestedQuestions:            p.SuggestedQuestions,
		SuggestedQuestionsAfterAnswer: gen.Enabled{Enabled: p.SuggestedQuestionsAfterAnswer},
		RetrieverResource:             gen.Enabled{Enabled: p.RetrieverResource},
		SensitiveWordAvoidance:        gen.Enabled{Enabled: a.Features.SensitiveWordAvoidance.Enabled},
		UserInputForm:                 make([]map[string]gen.InputFormItem, 0, len(p.UserInputForm)),
		// Features Parley does not offer yet are reported off, as Dify reports them for an app
		// that has not enabled them; file_upload has no enabled kinds.
		FileUpload: map[string]any{"image": map[string]any{
			"enabled": false, "number_limits": 3, "detail": "high", "transfer_methods": []string{"remote_url", "local_file"},
		}},
	}
	if fu := a.Features.FileUpload; fu.Enabled || fu.Image.Enabled {
		// An app that takes files says which, as Dify does, so a client (the app's page) offers
		// the upload.
		out.FileUpload = fileUploadParameters(fu)
	}
	if err := s.audioAndAnnotationParameters(ctx, appID, a, &out); err != nil {
		return nil, err
	}
	out.SystemParameters.FileSizeLimit = p.Limits.File
	out.SystemParameters.ImageFileSizeLimit = p.Limits.Image
	out.SystemParameters.AudioFileSizeLimit = p.Limits.Audio
	out.SystemParameters.VideoFileSizeLimit = p.Limits.Video
	out.SystemParameters.WorkflowFileUploadLimit = p.Limits.WorkflowFiles
	for _, f := range p.UserInputForm {
		// Dify always sends `default` ("" when the input has none) and newer Dify `hide`.
		item := gen.InputFormItem{Label: f.Label, Variable: f.Variable, Required: f.Required, Default: f.Default, Hide: f.Hide}
		if f.MaxLength > 0 && (f.Type == config.InputText || f.Type == config.InputParagraph) {
			item.MaxLength = &f.MaxLength
		}
		if f.Type == config.InputSelect {
			item.Options = &f.Options
		}
		out.UserInputForm = append(out.UserInputForm, map[string]gen.InputFormItem{f.Type: item})
	}
	return out, nil
}

// GetAppInfo answers GET /info.
func (s *Server) GetAppInfo(ctx context.Context, _ gen.GetAppInfoRequestObject) (gen.GetAppInfoResponseObject, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	return gen.GetAppInfo200JSONResponse{
		Name: a.Name, Description: a.Description, Tags: []string{},
		Mode: gen.AppInfoMode(a.Mode), AuthorName: s.workspaceName,
	}, nil
}

// GetAppMeta answers GET /meta. Parley's apps use no tools yet, so there are no tool icons.
func (s *Server) GetAppMeta(ctx context.Context, _ gen.GetAppMetaRequestObject) (gen.GetAppMetaResponseObject, error) {
	if _, err := s.app(ctx); err != nil {
		return nil, err
	}
	return gen.GetAppMeta200JSONResponse{ToolIcons: map[string]any{}}, nil
}

// dropEmptyQueryValues treats `?last_id=&limit=` (what the Python SDK sends for unset
// arguments) as absent, so the contract's types and defaults apply.
func dropEmptyQueryValues(r *http.Request) {
	if r.URL.RawQuery == "" {
		return
	}
	q := r.URL.Query()
	changed := false
	for k, vs := range q {
		kept := vs[:0]
		for _, v := range vs {
			if v != "" {
				kept = append(kept, v)
			}
		}
		if len(kept) != len(vs) {
			changed = true
			if len(kept) == 0 {
				q.Del(k)
			} else {
				q[k] = kept
			}
		}
	}
	if changed {
		r.URL.RawQuery = q.Encode()
	}
}

// fileUploadParameters is the file_upload member of an app's parameters, in Dify's shape, for
// an app that takes files.
func fileUploadParameters(fu apps.FileUpload) map[string]any {
	orEmpty := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	imgLimit, imgMethods := fu.Image.NumberLimits, fu.Image.TransferMethods
	if imgLimit == 0 {
		imgLimit = 3
	}
	if len(imgMethods) == 0 {
		imgMethods = []string{"remote_url", "local_file"}
	}
	detail := fu.Image.Detail
	if detail == "" {
		detail = "high"
	}
	return map[string]any{
		"enabled":                     fu.Enabled,
		"allowed_file_types":          orEmpty(fu.AllowedFileTypes),
		"allowed_file_extensions":     orEmpty(fu.AllowedFileExtensions),
		"allowed_file_upload_methods": orEmpty(fu.AllowedUploadMethods),
		"number_limits":               fu.NumberLimits,
		"image": map[string]any{
			"enabled": fu.Image.Enabled, "number_limits": imgLimit, "detail": detail, "transfer_methods": imgMethods,
		},
	}
}
