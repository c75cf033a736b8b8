package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/parleyhq/parley/internal/quota"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/triggers"
)

// This file serves the webhooks of Workflow apps that start from trigger nodes
// (internal/triggers): /triggers/webhook/{webhook_id} at the root of the server, beside /v1, where
// Dify has it, and its debug variant /triggers/webhook-debug/{webhook_id}. They take no API key:
// the webhook id is the secret, as in Dify. Any method reaches them; the webhook's manifest
// decides what it accepts (method, content type, headers, query parameters, body), and a request
// it refuses gets a 4xx Error body whose message names what is wrong. An accepted request queues
// the run as a durable job and gets the reply the node declares; the debug URL checks the
// request the same way and replies the same, but starts no run (Dify's debug URL hands the
// request to its editor, which Parley does not have).
//
// The contract declares both paths (api/openapi.yaml, tag Triggers, with a server of their own
// at the root), but their bodies are whatever the manifest says, so they are served by an Echo
// of their own, mounted in front of the API's (New, through e.Pre), with the API's guards applied
// explicitly: the request id, the request's span and metrics, the access log (its route is the
// template: the webhook id never appears in a log line), panic recovery, and the body cap
// (WEBHOOK_REQUEST_BODY_MAX_SIZE) and timer.

// Triggers serves webhooks; *triggers.Service implements it.
type Triggers interface {
	Webhook(ctx context.Context, id string, debug bool) (*triggers.Hook, error)
	SaveFile(h *triggers.Hook) triggers.SaveFile
	Fire(ctx context.Context, h *triggers.Hook, data map[string]any) (string, error)
	MaxBody() int64
}

// triggersPathPrefix is what the paths the triggers' Echo serves start with.
const triggersPathPrefix = "/triggers/"

// newTriggersEcho builds the webhooks' Echo with the API's guards.
func (s *Server) newTriggersEcho(opts Options) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.triggersErrorHandler
	e.Use(requestID()...)
	if tracing.On() || s.metrics != nil {
		e.Use(s.observe)
	}
	e.Use(s.accessLog)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
		// The route, never the path: the path holds the webhook id.
		s.log.ErrorContext(c.Request().Context(), "panic", "error", err, "route", c.Path(), "stack", string(stack))
		return err
	}}))
	// The cap is the webhook's bound with room to spare: the webhook itself refuses a body over
	// its bound with Dify's message naming both sizes; the cap stops one far over it unread.
	limit := s.triggers.MaxBody()
	e.Use(guardBody(limit+64<<10, limit, opts.BodyRate))
	e.Any(strings.TrimSuffix(triggers.WebhookPath, "/")+"/:webhook_id", func(c echo.Context) error { return s.serveWebhook(c, false) })
	e.Any(strings.TrimSuffix(triggers.DebugWebhookPath, "/")+"/:webhook_id", func(c echo.Context) error { return s.serveWebhook(c, true) })
	return e
}

// triggersErrorHandler answers with the Error body, as the API's handler does, but logs a
// failure with the route rather than the path, which holds the webhook id.
func (s *Server) triggersErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := toAPIError(err, c.Request())
	c.Set(errorCodeEchoKey, e.Code)
	if e.Status >= 500 {
		s.log.ErrorContext(c.Request().Context(), "request failed", slog.Group("request",
			"method", c.Request().Method, "route", c.Path()), "status", e.Status, "code", e.Code, "error", err,
			"error_types", errorTypes(err))
	}
	writeAPIError(c, e)
}

// serveWebhook answers a request to a webhook's URL (or its debug URL).
func (s *Server) serveWebhook(c echo.Context, debug bool) error {
	r := c.Request()
	ctx := r.Context()
	id := c.Param("webhook_id")
	h, err := s.triggers.Webhook(ctx, id, debug)
	switch {
	case errors.Is(err, triggers.ErrWebhookNotFound):
		return apiError(http.StatusNotFound, "not_found", "Webhook not found: "+id)
	case errors.Is(err, triggers.ErrWebhookPaused):
		return apiError(http.StatusNotFound, "not_found", fmt.Sprintf("Webhook trigger is disabled for webhook %s.", id))
	case err != nil:
		return err
	}
	if err := s.webhookLimits(ctx, h, id, debug); err != nil {
		return err
	}
	var save triggers.SaveFile
	if !debug {
		save = s.triggers.SaveFile(h)
	}
	data, err := triggers.Read(ctx, r, h.Manifest, s.triggers.MaxBody(), save)
	if err != nil {
		// A refusal is a 4xx naming what is wrong (errmap.go); a body over the limit was not
		// read whole, so the connection must not carry another request.
		var refused *triggers.RequestError
		if errors.As(err, &refused) && refused.Status == http.StatusRequestEntityTooLarge {
			c.Response().Header().Set(echo.HeaderConnection, "close")
		}
		return err
	}
	if !debug {
		runID, err := s.triggers.Fire(ctx, h, data)
		if err != nil {
			return err
		}
		s.log.InfoContext(ctx, "webhook accepted", "app", h.App.Name, "node_id", h.Trigger.NodeID, "workflow_run_id", runID)
	}
	status, body := h.Manifest.Reply()
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(raw)
	}
	return nil
}

// webhookLimits counts the request against the webhook's requests per minute (its debug URL
// has a count of its own) and its app's, and refuses it once the app's workflow runs for the day
// are spent, all across replicas.
func (s *Server) webhookLimits(ctx context.Context, h *triggers.Hook, id string, debug bool) error {
	now := time.Now()
	if l := s.webhookRate; l > 0 {
		key := "webhook:" + id
		if debug {
			key = "webhook-debug:" + id
		}
		r, err := s.quota.Take(ctx, countRequests+key, quota.Minute, l, 1)
		if err != nil {
			return err
		}
		if !r.Allowed {
			return errRateLimited("This webhook's", "requests per minute", r, now)
		}
	}
	a := h.App
	if l := a.Limits.RequestsPerMinute; l > 0 {
		r, err := s.quota.Take(ctx, countRequests+"app:"+a.ID, quota.Minute, l, 1)
		if err != nil {
			return err
		}
		if !r.Allowed {
			return errRateLimited("This app's", "requests per minute", r, now)
		}
	}
	if l := a.Limits.WorkflowRunsPerDay; l > 0 && !debug {
		used, reset, err := s.quota.Used(ctx, countRuns+"app:"+a.ID, quota.Day)
		if err != nil {
			return err
		}
		if used >= l {
			return errRateLimited("This app's", "workflow runs per day", quota.Result{Limit: l, Reset: reset}, now)
		}
	}
	return nil
}
