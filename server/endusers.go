package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
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

// GetSite answers GET /site: the settings of the app's web page (docs/web-pages.md), with the
// app's title, description and icon where the site sets none. Nothing secret is in it: a site's
// passcode shows nowhere.
func (s *Server) GetSite(ctx context.Context, _ gen.GetSiteRequestObject) (gen.GetSiteResponseObject, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if s.sites == nil {
		return defaultSite(a), nil
	}
	site, err := s.sites.ByApp(ctx, a)
	if err != nil {
		return nil, err
	}
	out := gen.GetSite200JSONResponse{
		Title: site.Title, CustomDisclaimer: site.CustomDisclaimer, DefaultLanguage: site.DefaultLanguage,
		ShowWorkflowSteps: site.ShowWorkflowSteps, UseIconAsAnswerIcon: site.UseIconAsAnswerIcon,
		Description: optText(site.Description), IconType: optText(site.IconType), Icon: optText(site.Icon),
		IconUrl: optText(site.IconURL), IconBackground: optText(site.IconBackground), Copyright: optText(site.Copyright),
		PrivacyPolicy: optText(site.PrivacyPolicy), InputPlaceholder: optText(site.InputPlaceholder),
		ChatColorTheme: optText(site.ChatColorTheme),
	}
	return out, nil
}

// optText is nil for "", else a pointer to s.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// defaultSite is the site of a server without sites: the app's title, description and icon,
// with the settings Dify gives a new site.
func defaultSite(a *apps.App) gen.GetSite200JSONResponse {
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
	return out
}
