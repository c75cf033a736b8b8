package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	oapimw "github.com/oapi-codegen/echo-middleware"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/internal/store"
)

// Security scheme names of api/openapi.yaml.
const (
	schemeAppKey       = "AppKey"
	schemeKnowledgeKey = "KnowledgeKey"
	schemeWebPassport  = "WebPassport"
)

type principalKey struct{}

// Principal is who a request acts for, as established by its API key.
type Principal struct {
	Kind  auth.Kind
	KeyID string
	// AppID is set for app keys.
	AppID string
	// Limits are the key's rate limits; a passport's are its site's requests per minute of
	// each end user.
	Limits store.Limits
	// Passport is set for a request made with a passport of an app's web page (WebPassport):
	// the request acts for its end user alone (Server.endUser). KeyID is then
	// "passport:" and the end user's id, so that limits and idempotency keys are the end
	// user's.
	Passport *sites.Passport
}

// principalFrom returns the request's authenticated principal.
func principalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// authenticate is kin-openapi's AuthenticationFunc. kin-openapi checks security before
// parameters and body, so a request without a valid key gets 401 before any validation or mode
// error. The principal is left on the Echo context; principalToRequest moves it to the request
// context the strict handlers receive once validation is over. (Replacing the request here
// would hide from the handlers the validated body that kin-openapi then leaves on the request
// it was given.)
func (s *Server) authenticate(ctx context.Context, in *openapi3filter.AuthenticationInput) error {
	c := oapimw.GetEchoContext(ctx)
	if c == nil {
		// echo-middleware puts the Echo context on the validation context, not the request's.
		return errors.New("authenticate: no echo context")
	}
	var want auth.Kind
	switch in.SecuritySchemeName {
	case schemeAppKey:
		want = auth.KindApp
	case schemeKnowledgeKey:
		want = auth.KindKnowledge
	case schemeWebPassport:
	default:
		return &echo.HTTPError{Code: http.StatusUnauthorized, Internal: errUnauthorized(msgInvalidToken)}
	}
	req := c.Request()
	token, err := auth.ParseBearer(req.Header.Get(echo.HeaderAuthorization))
	if err != nil {
		return &echo.HTTPError{Code: http.StatusUnauthorized, Internal: err}
	}
	// A passport and an API key are told apart by their prefix. When the operation takes
	// either, the scheme the token is not for fails with a plain error, so that the error of
	// the other one (an *echo.HTTPError, which the request validator prefers) is the answer.
	passport := sites.IsPassport(token)
	if in.SecuritySchemeName == schemeWebPassport {
		if !passport {
			return errOtherScheme
		}
		return s.authenticatePassport(c, token)
	}
	if passport {
		if acceptsPassport(in) {
			return errOtherScheme
		}
		return &echo.HTTPError{Code: http.StatusUnauthorized, Internal: auth.ErrInvalidKey}
	}
	key, err := s.keys.Authenticate(req.Context(), token, want)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, auth.ErrInvalidKey) {
			code = http.StatusUnauthorized
		}
		// The error handler maps auth's errors (errmap.go); anything else is a 500.
		return &echo.HTTPError{Code: code, Internal: err}
	}
	c.Set(principalEchoKey, Principal{Kind: want, KeyID: key.ID, AppID: key.AppID, Limits: key.Limits})
	return nil
}

// errOtherScheme is the failure of a security scheme the token is not meant for.
var errOtherScheme = errors.New("the token is for the operation's other security scheme")

// acceptsPassport reports whether the operation being authenticated takes a passport.
func acceptsPassport(in *openapi3filter.AuthenticationInput) bool {
	if in.RequestValidationInput == nil || in.RequestValidationInput.Route == nil || in.RequestValidationInput.Route.Operation == nil {
		return false
	}
	sec := in.RequestValidationInput.Route.Operation.Security
	if sec == nil {
		return false
	}
	for _, req := range *sec {
		if _, ok := req[schemeWebPassport]; ok {
			return true
		}
	}
	return false
}

// authenticatePassport checks a passport of an app's web page (one signature and one read of
// its site) and leaves its principal: the app, the end user, and the site's requests per minute
// as the limit of that end user.
func (s *Server) authenticatePassport(c echo.Context, token string) error {
	if s.sites == nil {
		return &echo.HTTPError{Code: http.StatusUnauthorized, Internal: sites.ErrInvalidPassport}
	}
	pp, err := s.sites.Verify(c.Request().Context(), token)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, sites.ErrInvalidPassport) {
			code = http.StatusUnauthorized
		}
		return &echo.HTTPError{Code: code, Internal: err}
	}
	c.Set(principalEchoKey, Principal{Kind: auth.KindApp, KeyID: "passport:" + pp.EndUserID, AppID: pp.AppID,
		Limits: store.Limits{RequestsPerMinute: pp.RequestsPerMinute}, Passport: &pp})
	return nil
}

// endUser is the end user a request acts for: the passport's, whatever the request says, for a
// request made with a passport; the `user` the request gives otherwise. Every handler that
// reads a `user` goes through it, so that a page cannot act as another end user.
func (s *Server) endUser(ctx context.Context, given string) string {
	if p, ok := principalFrom(ctx); ok && p.Passport != nil {
		return p.Passport.SessionID
	}
	return given
}

// endUserPtr is endUser for an optional `user`.
func (s *Server) endUserPtr(ctx context.Context, given *string) *string {
	if p, ok := principalFrom(ctx); ok && p.Passport != nil {
		u := p.Passport.SessionID
		return &u
	}
	return given
}

// passportOf is the passport of a request made with one, nil otherwise.
func passportOf(ctx context.Context) *sites.Passport {
	if p, ok := principalFrom(ctx); ok {
		return p.Passport
	}
	return nil
}

// principalEchoKey is where authenticate leaves the principal on the Echo context.
const principalEchoKey = "parley.principal"

// principalToRequest puts the principal authenticate found on the request context. It runs
// after the request validator.
func principalToRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p, ok := c.Get(principalEchoKey).(Principal); ok {
			req := c.Request()
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), principalKey{}, p)))
		}
		return next(c)
	}
}
