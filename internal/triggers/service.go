package triggers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// JobKind is the durable job that starts a trigger's run: the payload names the app, the
// trigger node, how it was triggered, the run's inputs and the id its workflow run gets.
const JobKind = "trigger.run"

// WebhookPath is where webhooks are served, at the server's root beside /v1 as in Dify; a
// webhook's URL is WebhookPath + its id, and its debug URL DebugWebhookPath + its id.
const (
	WebhookPath      = "/triggers/webhook/"
	DebugWebhookPath = "/triggers/webhook-debug/"
)

// DefaultPoll is how often a replica looks for schedules whose tick has come.
const DefaultPoll = time.Second

// Errors of a webhook's lookup.
var (
	// ErrWebhookNotFound is an id that names no webhook of a live, published app (404).
	ErrWebhookNotFound = errors.New("webhook not found")
	// ErrWebhookPaused is a webhook whose trigger is paused (404, as Dify answers a disabled
	// trigger).
	ErrWebhookPaused = errors.New("webhook trigger is disabled")
	// ErrTriggerNotFound is a node id that names no trigger of the app (the CLI).
	ErrTriggerNotFound = errors.New("no such trigger")
)

// Store is what the service needs from the database; *store.Store implements it.
type Store interface {
	SyncAppTriggers(ctx context.Context, appID, versionID string, want []store.AppTrigger) ([]store.AppTrigger, error)
	AppTriggers(ctx context.Context, appID string) ([]store.AppTrigger, error)
	TriggerVersions(ctx context.Context) (map[string]string, error)
	TriggerByWebhookID(ctx context.Context, webhookID string) (store.AppTrigger, error)
	SetTriggerStatus(ctx context.Context, appID, nodeID, status string, next *time.Time) error
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]store.AppTrigger, error)
	ClaimScheduleTick(ctx context.Context, appID, nodeID string, tick, next time.Time, owner string, job store.JobRow) error
	AppVersion(ctx context.Context, id string) (store.AppVersion, error)
	WorkflowRunByID(ctx context.Context, id string) (store.WorkflowRun, error)
	AppsRevision(ctx context.Context) (int64, error)
}

// Apps are the apps served; *apps.Registry implements it.
type Apps interface {
	Get(ctx context.Context, id string) (*apps.App, error)
	List(ctx context.Context) ([]*apps.App, error)
}

// Runs start runs; *run.Engine implements it.
type Runs interface {
	Start(ctx context.Context, req run.Request) (*run.Run, error)
}

// Queue queues the durable jobs that start runs; *jobs.Durable implements it.
type Queue interface {
	Enqueue(ctx context.Context, job jobs.Job) error
	Owner() string
	Wake()
}

// Options configure a Service. Store and Apps are enough to sync, list, pause and resume
// triggers (the CLI); serving webhooks and ticking schedules needs Runs and Queue too.
type Options struct {
	Store Store
	Apps  Apps
	Runs  Runs
	Queue Queue
	// Files keeps the files of an app's webhook requests (nil: they are dropped).
	Files func(app *apps.App) SaveFile
	// URL is the public base URL of webhook URLs (scheme, host, any path prefix).
	URL string
	// Poll is how often schedules are looked at (DefaultPoll if <= 0).
	Poll time.Duration
	// MaxBody bounds a webhook request's body (DefaultMaxBody if <= 0).
	MaxBody int64
	// Now is the clock (time.Now if nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// Service syncs the triggers of Workflow apps with their published graphs, serves webhooks,
// ticks schedules and starts the runs they ask for.
type Service struct {
	o Options
	// graphs caches parsed versions by id (a version never changes); schedules parsed cron
	// expressions by expression and time zone.
	graphs    sync.Map
	schedules sync.Map
	// synced holds, by app id, the version this process last synced the app's triggers from:
	// an app without triggers has no rows that say so.
	synced sync.Map
}

// New returns a Service.
func New(o Options) *Service {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.URL = strings.TrimRight(o.URL, "/")
	return &Service{o: o}
}

// MaxBody is the bound of a webhook request's body.
func (s *Service) MaxBody() int64 { return s.o.MaxBody }

// graph is the parsed graph of an app version.
func (s *Service) graph(ctx context.Context, versionID string) (*workflow.Graph, error) {
	if g, ok := s.graphs.Load(versionID); ok {
		return g.(*workflow.Graph), nil
	}
	v, err := s.o.Store.AppVersion(ctx, versionID)
	if err != nil {
		return nil, err
	}
	a, err := apps.DecodeVersion(v.Definition)
	if err != nil {
		return nil, fmt.Errorf("triggers: version %s: %w", versionID, err)
	}
	if a.Workflow == nil {
		return nil, fmt.Errorf("triggers: version %s has no workflow", versionID)
	}
	g, err := workflow.Parse(a.Workflow.Graph)
	if err != nil {
		return nil, fmt.Errorf("triggers: version %s: %w", versionID, err)
	}
	s.graphs.Store(versionID, g)
	return g, nil
}

// schedule is a parsed schedule (cached).
func (s *Service) schedule(nodeID, cron, tz string) (*Schedule, error) {
	key := cron + "\x00" + tz
	if sc, ok := s.schedules.Load(key); ok {
		return sc.(*Schedule), nil
	}
	sc, err := NewSchedule(nodeID, cron, tz)
	if err != nil {
		return nil, err
	}
	s.schedules.Store(key, sc)
	return sc, nil
}

// NewWebhookID is a new webhook id: 24 random URL-safe characters, as Dify's
// secrets.token_urlsafe(18)[:24].
func NewWebhookID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Sync makes the triggers stored for app agree with the trigger nodes of its published
// version: new webhooks get their id, new schedules their first tick; a webhook keeps its id as
// long as its node stays, a schedule its status. An app that is not a published Workflow app
// has none.
func (s *Service) Sync(ctx context.Context, app *apps.App) ([]store.AppTrigger, error) {
	var want []store.AppTrigger
	version := app.PublishedVersion
	if app.Mode == apps.ModeWorkflow && version != "" {
		g, err := s.graph(ctx, version)
		if err != nil {
			return nil, err
		}
		now := s.o.Now()
		for _, id := range g.Triggers {
			n := g.Nodes[id]
			switch n.Type {
			case workflow.TypeTriggerWebhook:
				want = append(want, store.AppTrigger{NodeID: id, Kind: store.TriggerWebhook, WebhookID: NewWebhookID()})
			case workflow.TypeTriggerSchedule:
				sc, err := ParseSchedule(id, n.Data)
				if err != nil {
					// The import refuses such a schedule; a version stored otherwise keeps it
					// without ticks.
					s.o.Logger.WarnContext(ctx, "triggers: a schedule that cannot tick", "app", app.Name, "node_id", id, "error", err)
					continue
				}
				t := store.AppTrigger{NodeID: id, Kind: store.TriggerSchedule, Cron: sc.Cron, Timezone: sc.Timezone}
				if next := sc.Next(now); !next.IsZero() {
					t.NextRunAt = &next
				}
				want = append(want, t)
			}
		}
	}
	out, err := s.o.Store.SyncAppTriggers(ctx, app.ID, version, want)
	if err == nil {
		s.synced.Store(app.ID, version)
	}
	return out, err
}

// SyncAll syncs the triggers of every Workflow app whose published version is not the one its
// triggers were synced from.
func (s *Service) SyncAll(ctx context.Context) error {
	list, err := s.o.Apps.List(ctx)
	if err != nil {
		return err
	}
	have, err := s.o.Store.TriggerVersions(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range list {
		if a.Mode != apps.ModeWorkflow {
			continue
		}
		v, ok := have[a.ID]
		if !ok {
			// No triggers stored: none to sync unless the version changed since this process
			// looked.
			last, _ := s.synced.Load(a.ID)
			v, _ = last.(string)
		}
		if v == a.PublishedVersion {
			continue
		}
		if _, err := s.Sync(ctx, a); err != nil && !errors.Is(err, store.ErrConflict) {
			// A conflict is another replica syncing the same app at the same moment.
			errs = append(errs, fmt.Errorf("app %s: %w", a.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Listed is a trigger as `parley apps triggers` shows it.
type Listed struct {
	store.AppTrigger
	// URL is a webhook's full URL.
	URL string
	// Next is a schedule's next tick in its time zone (nil when paused or never).
	Next *time.Time
}

// List syncs app's triggers and returns them, by node id.
func (s *Service) List(ctx context.Context, app *apps.App) ([]Listed, error) {
	ts, err := s.Sync(ctx, app)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(ts))
	for _, t := range ts {
		l := Listed{AppTrigger: t}
		switch t.Kind {
		case store.TriggerWebhook:
			l.URL = s.WebhookURL(t.WebhookID)
		case store.TriggerSchedule:
			if t.Status == store.TriggerEnabled && t.NextRunAt != nil {
				next := *t.NextRunAt
				if sc, err := s.schedule(t.NodeID, t.Cron, t.Timezone); err == nil {
					next = sc.In(next)
				}
				l.Next = &next
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// WebhookURL is a webhook's full URL.
func (s *Service) WebhookURL(id string) string { return s.o.URL + WebhookPath + id }

// SetPaused pauses or resumes the trigger of app's node nodeID. A resumed schedule ticks next at
// its first tick from now: the ticks it missed while paused are not run.
func (s *Service) SetPaused(ctx context.Context, app *apps.App, nodeID string, paused bool) (store.AppTrigger, error) {
	ts, err := s.Sync(ctx, app)
	if err != nil {
		return store.AppTrigger{}, err
	}
	for _, t := range ts {
		if t.NodeID != nodeID {
			continue
		}
		status, next := store.TriggerEnabled, (*time.Time)(nil)
		if paused {
			status = store.TriggerPaused
		} else if t.Kind == store.TriggerSchedule {
			sc, err := s.schedule(t.NodeID, t.Cron, t.Timezone)
			if err != nil {
				return store.AppTrigger{}, err
			}
			n := sc.Next(s.o.Now())
			next = &n
		}
		if err := s.o.Store.SetTriggerStatus(ctx, app.ID, nodeID, status, next); err != nil {
			return store.AppTrigger{}, err
		}
		t.Status = status
		if next != nil {
			t.NextRunAt = next
		}
		return t, nil
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.NodeID
	}
	if len(ids) == 0 {
		return store.AppTrigger{}, fmt.Errorf("%w: app %q has no triggers", ErrTriggerNotFound, app.Name)
	}
	return store.AppTrigger{}, fmt.Errorf("%w: app %q has no trigger %q (its triggers: %s)", ErrTriggerNotFound, app.Name, nodeID,
		strings.Join(ids, ", "))
}

// validWebhookID reports whether id could be a webhook's: 1 to 64 URL-safe base64 characters.
func validWebhookID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Hook is a webhook found by its id: its app, its stored trigger and its manifest.
type Hook struct {
	App      *apps.App
	Trigger  store.AppTrigger
	Manifest *Webhook
}

// Webhook finds the webhook with id. An unknown id, or one of an app deleted or published
// without the node since, gives ErrWebhookNotFound; a paused webhook ErrWebhookPaused (debug
// skips that check, as Dify's debug URL does).
func (s *Service) Webhook(ctx context.Context, id string, debug bool) (*Hook, error) {
	if !validWebhookID(id) {
		// Not an id this server hands out (URL-safe base64): nothing to look up.
		return nil, fmt.Errorf("%w: %q", ErrWebhookNotFound, id)
	}
	notFound := fmt.Errorf("%w: %s", ErrWebhookNotFound, id)
	t, err := s.o.Store.TriggerByWebhookID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	app, err := s.o.Apps.Get(ctx, t.AppID)
	if errors.Is(err, apps.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if app.PublishedVersion != t.VersionID {
		// Published again since the triggers were synced: they are now.
		ts, err := s.Sync(ctx, app)
		if err != nil {
			return nil, err
		}
		found := false
		for _, nt := range ts {
			if nt.WebhookID == id {
				t, found = nt, true
			}
		}
		if !found {
			return nil, notFound
		}
	}
	if t.Status != store.TriggerEnabled && !debug {
		return nil, fmt.Errorf("%w for webhook %s", ErrWebhookPaused, id)
	}
	g, err := s.graph(ctx, t.VersionID)
	if err != nil {
		return nil, err
	}
	n := g.Nodes[t.NodeID]
	if n == nil || n.Type != workflow.TypeTriggerWebhook {
		return nil, notFound
	}
	m, err := ParseWebhook(t.NodeID, n.Data)
	if err != nil {
		return nil, fmt.Errorf("triggers: webhook %s of app %s: %w", id, app.Name, err)
	}
	return &Hook{App: app, Trigger: t, Manifest: m}, nil
}

// SaveFile is what keeps the files of the hook's requests, nil when nothing does.
func (s *Service) SaveFile(h *Hook) SaveFile {
	if s.o.Files == nil {
		return nil
	}
	return s.o.Files(h.App)
}

// payload is a trigger.run job's.
type payload struct {
	AppID  string `json:"app_id"`
	NodeID string `json:"node_id"`
	// Kind is store.TriggerWebhook or store.TriggerSchedule.
	Kind   string         `json:"kind"`
	RunID  string         `json:"workflow_run_id"`
	Inputs map[string]any `json:"inputs"`
}

// Fire queues the run of a webhook's accepted request, whose webhook_data is data, and returns
// the id its workflow run will have.
func (s *Service) Fire(ctx context.Context, h *Hook, data map[string]any) (string, error) {
	p := payload{AppID: h.App.ID, NodeID: h.Trigger.NodeID, Kind: store.TriggerWebhook, RunID: uuid.NewString(),
		Inputs: map[string]any{nodes.WebhookData: data, nodes.WebhookHeaders: data["headers"],
			nodes.WebhookQueryParams: data["query_params"], nodes.WebhookBody: data["body"]}}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	if err := s.o.Queue.Enqueue(ctx, jobs.Job{ID: JobKind + ":" + p.RunID, Kind: JobKind, Payload: raw}); err != nil {
		return "", fmt.Errorf("triggers: queue the run: %w", err)
	}
	return p.RunID, nil
}

// HandleRun is the handler of JobKind: it starts the trigger's run, once. A retry after a crash
// finds the workflow run the first attempt started and does nothing more; a run refused for a
// passing reason (the app's concurrency limit, a shutdown) is retried, one refused for good (the
// app gone, its quota for the day spent) is dropped with a warning.
func (s *Service) HandleRun(ctx context.Context, job jobs.Job) error {
	var p payload
	// Numbers stay what the request had: an integer is not read back as a float.
	dec := json.NewDecoder(bytes.NewReader(job.Payload))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		s.o.Logger.ErrorContext(ctx, "triggers: a run job that cannot be read; dropped", "job_id", job.ID, "error", err)
		return nil
	}
	if p.Inputs == nil {
		p.Inputs = map[string]any{}
	}
	plainNumbers(p.Inputs)
	log := s.o.Logger.With("app_id", p.AppID, "node_id", p.NodeID, "triggered_from", p.Kind, "workflow_run_id", p.RunID)
	if _, err := s.o.Store.WorkflowRunByID(ctx, p.RunID); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	app, err := s.o.Apps.Get(ctx, p.AppID)
	if errors.Is(err, apps.ErrNotFound) {
		log.WarnContext(ctx, "triggers: the app is gone; its trigger's run is dropped")
		return nil
	}
	if err != nil {
		return err
	}
	// A trigger's run belongs to the app's anonymous end user, as Dify's belong to its default
	// end user of trigger runs.
	r, err := s.o.Runs.Start(ctx, run.Request{App: app, User: run.AnonymousUser, Inputs: p.Inputs, WorkflowRunID: p.RunID,
		Trigger: &run.Trigger{Kind: p.Kind, NodeID: p.NodeID}})
	if err != nil {
		if retryable(err) {
			return err
		}
		log.WarnContext(ctx, "triggers: the run was refused; dropped", "error", err)
		return nil
	}
	// The job is done once the run is recorded (workflow_started); the run goes on in the
	// engine, and a crash from now on leaves it to the engine's reconciliation, as any run.
	defer r.Detach()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case ev, ok := <-r.Events():
			switch {
			case !ok:
				return nil
			case ev.Kind == run.EventWorkflowStarted, ev.Kind == run.EventWorkflowFinished:
				log.InfoContext(ctx, "triggers: run started")
				return nil
			case ev.Kind == run.EventError:
				return ev.Err
			}
		}
	}
}

// retryable reports whether a run refused with err may be admitted later.
func retryable(err error) bool {
	var limit *run.LimitError
	return errors.As(err, &limit) || errors.Is(err, limiter.ErrLimitExceeded) || errors.Is(err, run.ErrShuttingDown) ||
		store.IsUnavailable(err)
}

// DueBatch bounds the schedules one look fires.
const DueBatch = 100

// Run ticks the schedules until ctx ends: every Poll it syncs the triggers of apps published
// since, then claims each due tick (exactly one replica wins a tick, in the database) and queues
// its run. The next tick of a schedule is its first after now, as in Dify: after an outage, a
// schedule that missed ticks runs once, for the earliest it missed, and then keeps its times.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	synced, syncedAt := int64(-1), time.Time{}
	for {
		// The apps are synced when one changed (a publish, a deletion), and once a minute
		// whatever happens, which also retries a sync that failed.
		if rev, err := s.o.Store.AppsRevision(ctx); err != nil {
			if ctx.Err() == nil {
				s.o.Logger.WarnContext(ctx, "triggers: apps revision", "error", err)
			}
		} else if rev != synced || time.Since(syncedAt) > time.Minute {
			if err := s.SyncAll(ctx); err != nil {
				if ctx.Err() == nil {
					s.o.Logger.WarnContext(ctx, "triggers: sync", "error", err)
				}
			} else {
				synced, syncedAt = rev, time.Now()
			}
		}
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.o.Logger.WarnContext(ctx, "triggers: schedules", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick fires the schedules due now.
func (s *Service) Tick(ctx context.Context) error {
	now := s.o.Now()
	due, err := s.o.Store.DueSchedules(ctx, now, DueBatch)
	if err != nil {
		return err
	}
	fired := 0
	for _, t := range due {
		ok, err := s.fire(ctx, t, now)
		if err != nil {
			s.o.Logger.WarnContext(ctx, "triggers: fire a schedule", "app_id", t.AppID, "node_id", t.NodeID, "error", err)
			continue
		}
		if ok {
			fired++
		}
	}
	if fired > 0 {
		s.o.Queue.Wake()
	}
	return nil
}

// CurrentTimeLayout is how a schedule's run gets its current_time, as Python's isoformat.
const CurrentTimeLayout = "2006-01-02T15:04:05-07:00"

// fire claims the tick t is due at and queues its run; false when another replica had it.
func (s *Service) fire(ctx context.Context, t store.AppTrigger, now time.Time) (bool, error) {
	sc, err := s.schedule(t.NodeID, t.Cron, t.Timezone)
	if err != nil {
		return false, err
	}
	tick := *t.NextRunAt
	next := sc.Next(now)
	p := payload{AppID: t.AppID, NodeID: t.NodeID, Kind: store.TriggerSchedule, RunID: uuid.NewString(),
		Inputs: map[string]any{"current_time": sc.In(tick).Format(CurrentTimeLayout)}}
	raw, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	job := store.JobRow{ID: JobKind + ":" + p.RunID, Kind: JobKind, Payload: raw, MaxAttempts: jobs.DefaultMaxAttempts,
		TraceParent: tracing.TraceParent(ctx)}
	err = s.o.Store.ClaimScheduleTick(ctx, t.AppID, t.NodeID, tick, next, s.o.Queue.Owner(), job)
	if errors.Is(err, store.ErrTickTaken) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.o.Logger.DebugContext(ctx, "triggers: tick claimed", "app_id", t.AppID, "node_id", t.NodeID, "tick", tick, "next", next)
	return true, nil
}
