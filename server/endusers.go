package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// GetEndUser answers GET /end-users/{end_user_id}: an end user of the key's app. Someone else's
// end user, an unknown id and a malformed one are the same 404.
func (s *Server) GetEndUser(ctx context.Context, req gen.GetEndUserRequestObject) (gen.GetEndUserResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	notFound := gen.GetEndUser404JSONResponse{NotFoundJSONResponse: gen.NotFoundJSONResponse{
		Code: "end_user_not_found", Message: "End user not found.", Status: http.StatusNotFound}}
	if !validID(req.EndUserId) {
		return notFound, nil
	}
	u, err := s.runs.EndUserByID(ctx, app.ID, req.EndUserId)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound, nil
	case err != nil:
		return nil, err
	}
	// Dify keeps the client's `user` both as the session id and as the external user id of an
	// end user the Service API created; the shared end user of requests without one is anonymous.
	external := u.SessionID
	return gen.GetEndUser200JSONResponse{
		Id: mustUUID(u.ID), TenantId: s.tenantID, AppId: mustUUID(u.AppID), Type: "service-api",
		ExternalUserId: &external, IsAnonymous: u.SessionID == run.AnonymousUser, SessionId: u.SessionID,
		CreatedAt: u.CreatedAt.UTC(), UpdatedAt: u.UpdatedAt.UTC(),
	}, nil
}

// GetSite answers GET /site. Parley has no web app: the site is the app's title, description
// and icon, with the settings Dify gives a new site.
func (s *Server) GetSite(ctx context.Context, _ gen.GetSiteRequestObject) (gen.GetSiteResponseObject, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	out := gen.GetSite200JSONResponse{
		Title: a.Name, CustomDisclaimer: "", DefaultLanguage: "en-US", ShowWorkflowSteps: true,
		UseIconAsAnswerIcon: a.Icon.UseAsAnswerIcon,
	}
	if a.Description != "" {
		out.Description = &a.Description
	}
	if a.Icon.Type != "" {
		out.IconType = &a.Icon.Type
	}
	if a.Icon.Icon != "" {
		out.Icon = &a.Icon.Icon
		if a.Icon.Type == "link" {
			out.IconUrl = &a.Icon.Icon
		}
	}
	if a.Icon.Background != "" {
		out.IconBackground = &a.Icon.Background
	}
	return out, nil
}
