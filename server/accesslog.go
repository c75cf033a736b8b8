package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/parleyhq/parley/internal/logctx"
)

// maxRequestIDLen bounds the X-Request-Id a client may choose.
const maxRequestIDLen = 128

// requestID gives every request an id, in its context (so that every log line of the request
// carries it, see internal/logctx) and in the X-Request-Id response header: the client's own
// X-Request-Id when it is sane (1 to 128 letters, digits and . _ : -), a new UUID otherwise.
func requestID() []echo.MiddlewareFunc {
	return []echo.MiddlewareFunc{
		func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if h := c.Request().Header; !saneRequestID(h.Get(echo.HeaderXRequestID)) {
					h.Del(echo.HeaderXRequestID)
				}
				return next(c)
			}
		},
		middleware.RequestIDWithConfig(middleware.RequestIDConfig{
			Generator: uuid.NewString,
			RequestIDHandler: func(c echo.Context, id string) {
				r := c.Request()
				c.SetRequest(r.WithContext(logctx.WithRequestID(r.Context(), id)))
			},
		}),
	}
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// accessLog writes one line per request once it is answered: method, route (the route's
// template, never its ids or query), status and duration, and the request id through the
// request's context. An error is handed to the error handler here, so the line has the status
// the client got.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		if !c.Response().Committed {
			status = http.StatusOK
		}
		route := c.Path()
		if route == "" {
			route = "-"
		}
		method, elapsed := slog.String("method", c.Request().Method), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
		// An MCP request names its JSON-RPC method (mcp.go).
		rpc := mcpAttr(c)
		if status < 400 && rpc.Key == "" {
			s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request",
				method, slog.String("route", route), slog.Int("status", status), elapsed)
			return nil
		}
		attrs := []slog.Attr{method, slog.String("route", route), slog.Int("status", status), elapsed}
		if rpc.Key != "" {
			attrs = append(attrs, rpc)
		}
		if status < 400 {
			s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", attrs...)
			return nil
		}
		// A refused request says why (the error code the client got) and, for an app key, whose
		// app it was: the first things to look at when a client reports an error.
		if code, ok := c.Get(errorCodeEchoKey).(string); ok {
			attrs = append(attrs, slog.String("code", code))
		}
		if name := s.appName(c); name != "" {
			attrs = append(attrs, slog.String("app", name))
		}
		s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", attrs...)
		return nil
	}
}

// errorCodeEchoKey holds the code of the Error body a request was answered with.
const errorCodeEchoKey = "parley.error_code"

// appName is the name of the app whose key the request carried, as the registry last loaded it
// (no store query); "" for other keys, no key, or an app not loaded.
func (s *Server) appName(c echo.Context) string {
	p, ok := c.Get(principalEchoKey).(Principal)
	if !ok || p.AppID == "" || s.apps == nil {
		return ""
	}
	if a, ok := s.apps.ByID(p.AppID); ok {
		return a.Name
	}
	return ""
}
