package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	oapimw "github.com/oapi-codegen/echo-middleware"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/store"
)

// Security scheme names of api/openapi.yaml.
const (
	schemeAppKey       = "AppKey"
	schemeKnowledgeKey = "KnowledgeKey"
)

type principalKey struct{}

// Principal is who a request acts for, as established by its API key.
type Principal struct {
	Kind  auth.Kind
	KeyID string
	// AppID is set for app keys.
	AppID string
	// Limits are the key's rate limits.
	Limits store.Limits
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
	default:
		return &echo.HTTPError{Code: http.StatusUnauthorized, Internal: errUnauthorized(msgInvalidToken)}
	}
	req := c.Request()
	token, err := auth.ParseBearer(req.Header.Get(echo.HeaderAuthorization))
	if err != nil {
		return &echo.HTTPError{Code: http.StatusUnauthorized, Internal: err}
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
