package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/quota"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// This file enforces the rate limits of keys and apps (docs/limits.md): requests per minute
// here, before a handler runs; tokens and workflow runs per day when a run is admitted
// (RunQuota). Over a limit the request gets 429 rate_limit_error with Retry-After; a limited
// request also gets X-RateLimit-Limit, -Remaining and -Reset (Unix seconds) for its tightest
// requests-per-minute limit.

// Keys of the counts, by what they count and whose they are.
const (
	countRequests = "rpm:"
	countTokens   = "tpd:"
	countRuns     = "wrpd:"
)

// errRateLimited is a limit that is reached: 429 rate_limit_error, saying which, and when to
// try again.
func errRateLimited(whose, what string, r quota.Result, now time.Time) *APIError {
	wait := max(1, int64(r.Reset.Sub(now).Round(time.Second)/time.Second))
	e := apiError(http.StatusTooManyRequests, "rate_limit_error",
		fmt.Sprintf("%s limit of %d %s is reached; try again in %d seconds.", whose, r.Limit, what, wait))
	e.header = http.Header{}
	e.header.Set("Retry-After", strconv.FormatInt(wait, 10))
	setRateHeaders(e.header, r)
	return e
}

// setRateHeaders sets the X-RateLimit headers of a count.
func setRateHeaders(h http.Header, r quota.Result) {
	h.Set("X-RateLimit-Limit", strconv.FormatInt(r.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(r.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(r.Reset.Unix(), 10))
}

type requestAppKey struct{}

// requestApp is the app of an app key, looked up once per request (the rate limits need it
// before the handler, which then finds it here).
type requestApp struct {
	app *apps.App
	err error
}

// rateLimit counts the request against the requests-per-minute limits of its key and of its
// key's app, and refuses it when either is reached. It runs after principalToRequest.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := req.Context()
		p, ok := principalFrom(ctx)
		if !ok || s.quota == nil {
			return next(c)
		}
		var appLimit int64
		if p.AppID != "" {
			a, err := s.apps.Get(ctx, p.AppID)
			if err != nil || a.Source == apps.SourceImport {
				// An imported app's lookup reads the store: the handler finds it here instead
				// of reading it again. A config app's is a map lookup, cheaper than keeping it.
				ctx = context.WithValue(ctx, requestAppKey{}, &requestApp{app: a, err: err})
				c.SetRequest(req.WithContext(ctx))
			}
			if err == nil {
				appLimit = a.Limits.RequestsPerMinute
			}
		}
		if p.Limits.RequestsPerMinute <= 0 && appLimit <= 0 {
			return next(c)
		}
		var tightest *quota.Result
		for i, limit := range [2]int64{p.Limits.RequestsPerMinute, appLimit} {
			if limit <= 0 {
				continue
			}
			whose, key := "This key's", "key:"+p.KeyID
			if p.Passport != nil {
				// A passport's limit is its site's, for each end user of the page.
				whose = "This end user's"
			}
			if i == 1 {
				whose, key = "This app's", "app:"+p.AppID
			}
			r, err := s.quota.Take(ctx, countRequests+key, quota.Minute, limit, 1)
			if err != nil {
				return err
			}
			if !r.Allowed {
				return errRateLimited(whose, "requests per minute", r, time.Now())
			}
			if tightest == nil || r.Remaining < tightest.Remaining {
				tightest = &r
			}
		}
		setRateHeaders(c.Response().Header(), *tightest)
		return next(c)
	}
}

// cachedApp is the lookup of the app rateLimit made for the request, nil if it made none.
func cachedApp(ctx context.Context, id string) *requestApp {
	ra, ok := ctx.Value(requestAppKey{}).(*requestApp)
	if !ok || ra.err == nil && ra.app.ID != id {
		return nil
	}
	return ra
}

// RunQuota is the run engine's quota (run.Quota): a run is admitted while its key and its app
// are under their tokens-per-day limit, and while a workflow run (a Chatflow's or a Workflow
// app's) is left of their workflow-runs-per-day limit, which the run takes. What the run spent
// is counted when it ends: tokens are known only then, so the runs under way when a day's
// tokens run out may pass the limit by what they spend.
func RunQuota(c quota.Counter, log *slog.Logger) run.Quota { return &runQuota{c: c, log: log} }

type runQuota struct {
	c   quota.Counter
	log *slog.Logger
}

// quotaOwner is one whose daily limits a run counts against: its app, and the key it came with.
type quotaOwner struct {
	whose, key string
	limits     store.Limits
}

// quotaOwners are the owners of a run of app asked for with ctx's key (none: an app's MCP
// server, a human-input timer).
func quotaOwners(ctx context.Context, app *apps.App) []quotaOwner {
	owners := []quotaOwner{{"This app's", "app:" + app.ID, app.Limits}}
	if p, ok := principalFrom(ctx); ok {
		owners = append(owners, quotaOwner{"This key's", "key:" + p.KeyID, p.Limits})
	}
	return owners
}

// Admit implements run.Quota. A request made without a key (an app's MCP server) has the app's
// limits alone.
func (q *runQuota) Admit(ctx context.Context, app *apps.App) (func(int64), error) {
	if p, ok := principalFrom(ctx); !hasDaily(app.Limits) && (!ok || !hasDaily(p.Limits)) {
		return nil, nil // nothing to admit or count: most runs, without an allocation
	}
	owners := quotaOwners(ctx, app)
	now := time.Now()
	for _, o := range owners {
		if l := o.limits.TokensPerDay; l > 0 {
			used, reset, err := q.c.Used(ctx, countTokens+o.key, quota.Day)
			if err != nil {
				return nil, err
			}
			if used >= l {
				return nil, errRateLimited(o.whose, "tokens per day", quota.Result{Limit: l, Reset: reset}, now)
			}
		}
		if l := o.limits.WorkflowRunsPerDay; l > 0 && (app.Mode == apps.ModeWorkflow || app.Mode == apps.ModeAdvancedChat) {
			r, err := q.c.Take(ctx, countRuns+o.key, quota.Day, l, 1)
			if err != nil {
				return nil, err
			}
			if !r.Allowed {
				return nil, errRateLimited(o.whose, "workflow runs per day", r, now)
			}
		}
	}
	return q.counter(ctx, owners), nil
}

// Charge implements run.Quota: a resumed segment is not admitted again (its run was), but what
// it spends counts against its app. A segment resumes in the background, whoever decided its
// form, so there is no key to count it against.
func (q *runQuota) Charge(ctx context.Context, app *apps.App) func(int64) {
	if app.Limits.TokensPerDay <= 0 {
		if p, ok := principalFrom(ctx); !ok || p.Limits.TokensPerDay <= 0 {
			return nil
		}
	}
	return q.counter(ctx, quotaOwners(ctx, app))
}

// hasDaily says l has a daily limit, one a run is admitted against.
func hasDaily(l store.Limits) bool { return l.TokensPerDay > 0 || l.WorkflowRunsPerDay > 0 }

// counter is the function told the tokens a run spent, counting them against the owners with a
// tokens-per-day limit; nil when none has one.
func (q *runQuota) counter(ctx context.Context, owners []quotaOwner) func(int64) {
	var counted []string
	for _, o := range owners {
		if o.limits.TokensPerDay > 0 {
			counted = append(counted, countTokens+o.key)
		}
	}
	if len(counted) == 0 {
		return nil
	}
	return func(tokens int64) {
		if tokens <= 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, k := range counted {
			if err := q.c.Add(ctx, k, quota.Day, tokens); err != nil {
				q.log.WarnContext(ctx, "count the tokens of a run", "count", k, "tokens", tokens, "error", err)
			}
		}
	}
}
