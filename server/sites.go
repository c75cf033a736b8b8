package server

import (
	"context"
	"net"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/quota"
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
// keeps the end user (the contract cannot declare an Authorization parameter), and the client's
// address, which admitNewEndUser counts by (the connection's: a header naming another could be
// forged).
func passportBearer(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "GetPassport" {
		return f
	}
	return func(c echo.Context, req any) (any, error) {
		r := c.Request()
		ctx := r.Context()
		if h := r.Header.Get(echo.HeaderAuthorization); h != "" {
			ctx = context.WithValue(ctx, bearerKey{}, h)
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		c.SetRequest(r.WithContext(context.WithValue(ctx, clientAddrKey{}, host)))
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
	issued, err := s.sites.IssueAdmitting(ctx, req.Params.XAppCode, str(req.Params.XSitePasscode), previous, s.admitNewEndUser)
	if err != nil {
		return nil, err
	}
	return gen.GetPassport200JSONResponse{AccessToken: issued.Token, EndUserId: issued.EndUserID}, nil
}

// newEndUsersPerRequest is how many new end users a client address may make a page create per
// minute, for each request per minute the site gives an end user: ten times as many, so that a
// reverse proxy's address, which all its visitors share, leaves room for a busy page.
const newEndUsersPerRequest = 10

type clientAddrKey struct{}

// admitNewEndUser bounds the new end users one client address creates on a site per minute
// (sites.AdmitNew): passports are handed out without a key, and each new one is a stored end
// user. Over the bound: 429 rate_limit_error with the limit headers.
func (s *Server) admitNewEndUser(ctx context.Context, siteID string, requestsPerMinute int64) error {
	if s.quota == nil || requestsPerMinute <= 0 {
		return nil
	}
	addr, _ := ctx.Value(clientAddrKey{}).(string)
	limit := requestsPerMinute * newEndUsersPerRequest
	r, err := s.quota.Take(ctx, countNewEndUsers+siteID+":"+addr, quota.Minute, limit, 1)
	if err != nil {
		return err
	}
	if !r.Allowed {
		return errRateLimited("This address's", "new end users per minute", r, time.Now())
	}
	return nil
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
