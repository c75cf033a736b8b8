package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/codes"

	"github.com/parleyhq/parley/internal/tracing"
)

// unmatchedRoute is the route of a request no route matched (a 404), in spans and metrics: the
// path itself could hold anything a client sent.
const unmatchedRoute = "unmatched"

// observe gives each request a span (continuing the client's trace when it sent a traceparent)
// and records it in the metrics, both by route template, never by path: paths hold ids, and the
// MCP endpoint's holds a secret. It sits outside the access log, which turns errors into the
// response, so it sees the status the client got. New installs it only when tracing or metrics
// are on.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		r := c.Request()
		ctx, span := tracing.StartRequest(r)
		if span.SpanContext().IsValid() {
			// Sampled out or not, the request's children follow its sampling decision.
			c.SetRequest(r.WithContext(ctx))
		}
		err := next(c)
		status := c.Response().Status
		if !c.Response().Committed && err == nil {
			status = http.StatusOK
		}
		route := c.Path()
		if route == "" {
			route = unmatchedRoute
		}
		method := knownMethod(r.Method)
		if span.IsRecording() {
			span.SetName(method + " " + route)
			span.SetAttributes(tracing.HTTPMethod.String(method), tracing.HTTPRoute.String(route), tracing.HTTPStatus.Int(status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
		}
		span.End()
		s.metrics.Request(method, route, status, time.Since(start))
		return err
	}
}

// otherMethod stands for a method HTTP does not define, which a client may send anything as:
// the name OpenTelemetry's HTTP conventions give it.
const otherMethod = "_OTHER"

// knownMethod is method when HTTP defines it, else otherMethod.
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return otherMethod
}
