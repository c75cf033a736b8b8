package server

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/sites"
)

// This file serves what an app's web page needs besides the operations it shares with the
// Service API: its passports (GET /passport) and the pinning of conversations. The WebPassport
// scheme itself is checked in auth.go; docs/web-pages.md describes the whole.

// Fixed texts of the site errors.
const (
	msgSiteNotFound     = "Site not found."
	msgPasscodeRequired = "This page needs its passcode."
)

type bearerKey struct{}

// passportBearer gives GetPassport the request's Authorization header, whose previous passport
// keeps the end user (the contract cannot declare an Authorization parameter).
func passportBearer(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "GetPassport" {
		return f
	}
	return func(c echo.Context, req any) (any, error) {
		r := c.Request()
		if h := r.Header.Get(echo.HeaderAuthorization); h != "" {
			c.SetRequest(r.WithContext(context.WithValue(r.Context(), bearerKey{}, h)))
		}
		return f(c, req)
	}
}

// GetPassport answers GET /passport: a passport of the site whose code is X-App-Code.
func (s *Server) GetPassport(ctx context.Context, req gen.GetPassportRequestObject) (gen.GetPassportResponseObject, error) {
	if s.sites == nil {
		return nil, sites.ErrNotFound
	}
	previous := ""
	if h, ok := ctx.Value(bearerKey{}).(string); ok {
		if token, err := auth.ParseBearer(h); err == nil && sites.IsPassport(token) {
			previous = token
		}
	}
	issued, err := s.sites.Issue(ctx, req.Params.XAppCode, str(req.Params.XSitePasscode), previous)
	if err != nil {
		return nil, err
	}
	return gen.GetPassport200JSONResponse{AccessToken: issued.Token, EndUserId: issued.EndUserID}, nil
}

// PinConversation answers PATCH /conversations/{conversation_id}/pin.
func (s *Server) PinConversation(ctx context.Context, req gen.PinConversationRequestObject) (gen.PinConversationResponseObject, error) {
	if err := s.pin(ctx, req.ConversationId, req.Params.User, true); err != nil {
		return nil, err
	}
	return gen.PinConversation200JSONResponse{Result: gen.ResultResultSuccess}, nil
}

// UnpinConversation answers PATCH /conversations/{conversation_id}/unpin.
func (s *Server) UnpinConversation(ctx context.Context, req gen.UnpinConversationRequestObject) (gen.UnpinConversationResponseObject, error) {
	if err := s.pin(ctx, req.ConversationId, req.Params.User, false); err != nil {
		return nil, err
	}
	return gen.UnpinConversation200JSONResponse{Result: gen.ResultResultSuccess}, nil
}

func (s *Server) pin(ctx context.Context, id string, user *string, pinned bool) error {
	app, err := s.chatApp(ctx)
	if err != nil {
		return err
	}
	if !validID(id) {
		return conversations.ErrConversationNotFound
	}
	return s.conversations.Pin(ctx, app, str(s.endUserPtr(ctx, user)), id, pinned)
}
