package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Cross-origin requests. Dify answers the Service API to any origin, so a browser app calling it
// with an app key (Dify's JS SDK in a page) works from anywhere; Parley does the same for the API
// and for the apps' MCP endpoints. Nothing is read from cookies, so no credentials are allowed and
// `*` is safe: a request is only as strong as the key it carries.
const (
	corsAllowMethods = "GET, PUT, POST, DELETE, OPTIONS, PATCH"
	// Dify's three, and the headers Parley reads beside them.
	corsAllowHeaders = "Content-Type, Authorization, X-App-Code, X-Site-Passcode, Idempotency-Key, X-Request-Id, " +
		"traceparent, tracestate, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version"
	// What a script may read of a response: the limits, a replay, the request id for support,
	// the version, and the MCP session.
	corsExposeHeaders = "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Idempotent-Replayed, " +
		"X-Request-Id, X-Version, X-Env, Mcp-Session-Id"
	// corsMaxAge lets a browser keep a preflight's answer for 10 minutes (Chromium's cap is 2 hours).
	corsMaxAge = "600"
)

// beside is what the server answers beside the API, outside its contract: the apps' MCP
// endpoints and the triggers' webhooks, each served by an Echo of its own with the same
// guards, and the app pages with their assets (nil: not served).
type beside struct {
	mcp, triggers *echo.Echo
	pages         *pages
}

// prepare is the one middleware that runs before routing (Echo builds its chain anew for every
// request, so one rather than several): a cross-origin request's headers, a preflight answered
// here; the MCP endpoints and the webhooks, which take their query as it came; then empty query
// values dropped; then the pages.
func prepare(b beside) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if crossOrigin(c) {
				return c.NoContent(http.StatusNoContent)
			}
			r := c.Request()
			switch {
			case b.mcp != nil && strings.HasPrefix(r.URL.Path, mcpPathPrefix):
				b.mcp.ServeHTTP(c.Response().Writer, r)
				return nil
			case b.triggers != nil && strings.HasPrefix(r.URL.Path, triggersPathPrefix):
				b.triggers.ServeHTTP(c.Response().Writer, r)
				return nil
			}
			dropEmptyQueryValues(r)
			if b.pages != nil && b.pages.serve(c.Response(), r) {
				return nil
			}
			return next(c)
		}
	}
}

// crossOrigin marks responses readable cross-origin on the API and the MCP endpoints, and says
// whether the request is a preflight, answered at once; the rest (the pages, the probes) is
// left to its own rules. It runs first, before the MCP endpoints and the contract's
// validation, which know nothing of OPTIONS.
func crossOrigin(c echo.Context) (preflight bool) {
	r := c.Request()
	if r.Header.Get(echo.HeaderOrigin) == "" || !crossOriginPath(r.URL.Path) {
		return false
	}
	h := c.Response().Header()
	h.Set(echo.HeaderAccessControlAllowOrigin, "*")
	if r.Method == http.MethodOptions && r.Header.Get(echo.HeaderAccessControlRequestMethod) != "" {
		h.Set(echo.HeaderAccessControlAllowMethods, corsAllowMethods)
		h.Set(echo.HeaderAccessControlAllowHeaders, corsAllowHeaders)
		h.Set(echo.HeaderAccessControlMaxAge, corsMaxAge)
		return true
	}
	h.Set(echo.HeaderAccessControlExposeHeaders, corsExposeHeaders)
	return false
}

func crossOriginPath(p string) bool {
	return p == BasePath || strings.HasPrefix(p, BasePath+"/") || strings.HasPrefix(p, mcpPathPrefix)
}
