// Package annotations keeps apps' annotations — curated answers to questions — and answers from
// them, as Dify's annotation reply does: switching reply on (an asynchronous job, recorded in the
// database) embeds every annotation's question with the chosen embedding model; from then on a
// chat question whose embedding is at least the score threshold close to an annotation's is
// answered with that annotation, without calling the app's model, and the hit is counted.
//
// Vectors are searched through the same in-process vector index as knowledge bases, with an
// app's annotations standing for a dataset.
package annotations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// JobKind is the kind of the background jobs that switch annotation reply on and off.
const JobKind = "annotation-reply"

// Errors of the service; server/ answers them with Dify's codes.
var (
	// ErrNotFound: no annotation of the app has this id (404 not_found).
	ErrNotFound = errors.New("Annotation not found")
	// ErrJobNotFound: no job of the app and action has this id (400 invalid_param).
	ErrJobNotFound = errors.New("The job does not exist.")
	// ErrUnsupportedAction: the action is neither enable nor disable (400 invalid_param).
	ErrUnsupportedAction = errors.New("Unsupported annotation reply action")
)

// Store is what the service needs from storage; *store.Store implements it.
type Store interface {
	CreateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error)
	Annotation(ctx context.Context, appID, id string) (store.Annotation, error)
	UpdateAnnotation(ctx context.Context, appID, id, question, answer string) (store.Annotation, error)
	DeleteAnnotation(ctx context.Context, appID, id string) error
	ListAnnotations(ctx context.Context, appID, keyword string, page, limit int) ([]store.Annotation, int64, error)
	AnnotationsWithoutVector(ctx context.Context, appID, model string, limit int) ([]store.Annotation, error)
	SetAnnotationVectors(ctx context.Context, appID, model string, vectors map[string][]float32, updatedAt map[string]time.Time) error
	AnnotationSetting(ctx context.Context, appID string) (store.AnnotationSetting, error)
	SaveAnnotationSetting(ctx context.Context, a store.AnnotationSetting) error
	AnnotationIndexVersion(ctx context.Context, appID string) (int64, error)
	AnnotationVectors(ctx context.Context, appID string) (int64, []store.SearchableNode, error)
	RecordAnnotationHit(ctx context.Context, h store.AnnotationHit) error
	StartAnnotationJob(ctx context.Context, j store.AnnotationJob) (store.AnnotationJob, bool, error)
	AnnotationJob(ctx context.Context, appID, action, id string) (store.AnnotationJob, error)
	AnnotationJobByID(ctx context.Context, id string) (store.AnnotationJob, error)
	SetAnnotationJobStatus(ctx context.Context, id, status, errText string) error
	UnfinishedAnnotationJobs(ctx context.Context) ([]store.AnnotationJob, error)
}

// Catalog looks configured models up; *models.Catalog implements it.
type Catalog interface {
	Lookup(t models.Type, provider, name string) (models.ModelSpec, error)
}

// Embedders gives embedding clients; registry.Set implements it.
type Embedders interface {
	Embedder(spec models.ModelSpec) (providers.Embedder, error)
}

// Options configure a Service.
type Options struct {
	Store   Store
	Catalog Catalog
	Models  Embedders
	Jobs    jobs.Queue
	// AccountID and AccountName are the workspace owner annotations are attributed to.
	AccountID, AccountName string
	Logger                 *slog.Logger
}

// Service is the annotation runtime. It is safe for concurrent use.
type Service struct {
	st      Store
	catalog Catalog
	models  Embedders
	jobs    jobs.Queue
	vectors *vectorindex.Memory
	account run.AnnotationReplyAccount
	log     *slog.Logger
}

var _ run.Annotations = (*Service)(nil)

// New returns a Service. Register HandleJob for JobKind on the queue.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{st: o.Store, catalog: o.Catalog, models: o.Models, jobs: o.Jobs, log: o.Logger,
		account: run.AnnotationReplyAccount{ID: o.AccountID, Name: o.AccountName}}
	s.vectors = vectorindex.NewMemory(vectorSource{o.Store}, vectorindex.WithLogger(o.Logger))
	return s
}

// vectorSource lets the vector index load an app's annotation vectors as a dataset's.
type vectorSource struct{ st Store }

func (v vectorSource) IndexVersion(ctx context.Context, appID string) (int64, error) {
	return v.st.AnnotationIndexVersion(ctx, appID)
}

func (v vectorSource) SearchableVectors(ctx context.Context, appID string) (int64, []store.SearchableNode, error) {
	return v.st.AnnotationVectors(ctx, appID)
}

// Page is one page of an app's annotations.
type Page struct {
	Data    []store.Annotation
	Total   int64
	Page    int
	Limit   int
	HasMore bool
}

// List returns page page (from 1) of the app's annotations, newest first; keyword keeps those
// whose question or answer contains it, whatever the case.
func (s *Service) List(ctx context.Context, appID, keyword string, page, limit int) (Page, error) {
	data, total, err := s.st.ListAnnotations(ctx, appID, strings.TrimSpace(keyword), page, limit)
	if err != nil {
		return Page{}, err
	}
	return Page{Data: data, Total: total, Page: page, Limit: limit, HasMore: int64(page)*int64(limit) < total}, nil
}

// Create adds an annotation. With reply on, its question is embedded at once, so that it answers
// from the next message; if that fails the next switch-on embeds it.
func (s *Service) Create(ctx context.Context, appID, question, answer string) (store.Annotation, error) {
	a, err := s.st.CreateAnnotation(ctx, store.Annotation{AppID: appID, Question: question, Answer: answer, AccountID: s.account.ID})
	if err != nil {
		return store.Annotation{}, err
	}
	s.indexQuietly(ctx, appID)
	return a, nil
}

// Update replaces an annotation's question and answer.
func (s *Service) Update(ctx context.Context, appID, id, question, answer string) (store.Annotation, error) {
	if !storableID(id) {
		return store.Annotation{}, fmt.Errorf("annotation %q: %w", id, ErrNotFound)
	}
	a, err := s.st.UpdateAnnotation(ctx, appID, id, question, answer)
	if errors.Is(err, store.ErrNotFound) {
		return store.Annotation{}, fmt.Errorf("annotation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return store.Annotation{}, err
	}
	s.indexQuietly(ctx, appID)
	return a, nil
}

// Delete removes an annotation and its hit history.
func (s *Service) Delete(ctx context.Context, appID, id string) error {
	if !storableID(id) {
		return fmt.Errorf("annotation %q: %w", id, ErrNotFound)
	}
	err := s.st.DeleteAnnotation(ctx, appID, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("annotation %s: %w", id, ErrNotFound)
	}
	return err
}

// indexQuietly embeds the app's annotations that lack a vector when reply is on; a failure is
// logged (the annotation stays unmatched until the next switch-on).
func (s *Service) indexQuietly(ctx context.Context, appID string) {
	set, err := s.st.AnnotationSetting(ctx, appID)
	if err != nil || !set.Enabled {
		return
	}
	if err := s.index(ctx, set); err != nil {
		s.log.Warn("embed annotations", "app_id", appID, "error", err)
	}
}

// embedBatch is how many questions go in one embeddings request when the model sets no limit.
const embedBatch = 32

// embedder is the embedding model of the setting and its client.
func (s *Service) embedder(set store.AnnotationSetting) (models.ModelSpec, providers.Embedder, error) {
	spec, err := s.catalog.Lookup(models.TypeTextEmbedding, set.Provider, set.Model)
	if err != nil {
		return models.ModelSpec{}, nil, err
	}
	emb, err := s.models.Embedder(spec)
	if err != nil {
		return models.ModelSpec{}, nil, err
	}
	return spec, emb, nil
}

// index embeds every annotation of the app that has no vector of the setting's model.
func (s *Service) index(ctx context.Context, set store.AnnotationSetting) error {
	spec, emb, err := s.embedder(set)
	if err != nil {
		return err
	}
	batch := embedBatch
	if spec.MaxChunks > 0 {
		batch = min(batch, spec.MaxChunks)
	}
	for {
		todo, err := s.st.AnnotationsWithoutVector(ctx, set.AppID, set.VectorModel(), batch)
		if err != nil || len(todo) == 0 {
			return err
		}
		texts := make([]string, len(todo))
		for i, a := range todo {
			texts[i] = a.Question
		}
		vecs, _, err := emb.Embed(ctx, spec.Name, texts)
		if err != nil {
			return err
		}
		byID := make(map[string][]float32, len(todo))
		at := make(map[string]time.Time, len(todo))
		for i, a := range todo {
			byID[a.ID], at[a.ID] = vecs[i], a.UpdatedAt
		}
		if err := s.st.SetAnnotationVectors(ctx, set.AppID, set.VectorModel(), byID, at); err != nil {
			return err
		}
		if len(todo) < batch {
			return nil
		}
	}
}

// storableID reports whether an id from a path can be looked up at all: ids are UUIDs, and a
// text that is not UTF-8 or holds NUL cannot even be compared in PostgreSQL; such an id names
// nothing.
func storableID(id string) bool {
	return utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// Job is an annotation-reply job as the API shows it.
type Job struct {
	ID     string
	Status string
	Error  string
}

// ReplySettings are what switching annotation reply on (or off: Dify requires them then too)
// names.
type ReplySettings struct {
	EmbeddingProvider string
	EmbeddingModel    string
	ScoreThreshold    float64
}

// SetReply starts switching the app's annotation reply on or off (action enable or disable). It
// returns the job, waiting; when a job of the same action is already under way, that job,
// processing, as Dify answers.
func (s *Service) SetReply(ctx context.Context, appID, action string, rs ReplySettings) (Job, error) {
	if action != store.AnnotationActionEnable && action != store.AnnotationActionDisable {
		return Job{}, ErrUnsupportedAction
	}
	j, started, err := s.st.StartAnnotationJob(ctx, store.AnnotationJob{AppID: appID, Action: action,
		Provider: rs.EmbeddingProvider, Model: rs.EmbeddingModel, ScoreThreshold: rs.ScoreThreshold})
	if err != nil {
		return Job{}, err
	}
	if !started {
		return Job{ID: j.ID, Status: store.AnnotationJobProcessing}, nil
	}
	if err := s.enqueue(ctx, j.ID); err != nil {
		// The job stays waiting in the database; the next start's Resume queues it.
		s.log.Warn("queue annotation job", "job_id", j.ID, "error", err)
	}
	return Job{ID: j.ID, Status: j.Status}, nil
}

type jobPayload struct {
	JobID string `json:"job_id"`
}

func (s *Service) enqueue(ctx context.Context, id string) error {
	payload, err := json.Marshal(jobPayload{JobID: id})
	if err != nil {
		return err
	}
	// The queued job is named after the annotation job, so that queuing it twice (Resume on a
	// replica while another holds it) stores it once.
	return s.jobs.Enqueue(ctx, jobs.Job{ID: JobKind + ":" + id, Kind: JobKind, Payload: payload})
}

// JobStatus returns the app's job of this action and id.
func (s *Service) JobStatus(ctx context.Context, appID, action, id string) (Job, error) {
	if action != store.AnnotationActionEnable && action != store.AnnotationActionDisable {
		return Job{}, ErrUnsupportedAction
	}
	if !storableID(id) {
		return Job{}, fmt.Errorf("annotation job %q: %w", id, ErrJobNotFound)
	}
	j, err := s.st.AnnotationJob(ctx, appID, action, id)
	if errors.Is(err, store.ErrNotFound) {
		return Job{}, fmt.Errorf("annotation job %s: %w", id, ErrJobNotFound)
	}
	if err != nil {
		return Job{}, err
	}
	return Job{ID: j.ID, Status: j.Status, Error: j.Error}, nil
}

// Resume queues the unfinished jobs that have no queued job: those of a database from before
// durable jobs, or whose queuing failed. A job still queued (or held by a replica) is left as
// it is; with a durable queue, an interrupted job is claimed again when its lease expires.
func (s *Service) Resume(ctx context.Context) error {
	js, err := s.st.UnfinishedAnnotationJobs(ctx)
	if err != nil {
		return err
	}
	for _, j := range js {
		if err := s.enqueue(ctx, j.ID); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("annotations: resume job %s: %w", j.ID, err)
		}
	}
	return nil
}

// HandleJob runs one annotation-reply job (jobs.Handler). Switching on embeds every annotation
// with the named model and then stores the setting; a model that is not configured, or an
// embedding that fails, ends the job in error with the reason, the setting unchanged.
// Switching off an app whose reply is off completes at once.
func (s *Service) HandleJob(ctx context.Context, job jobs.Job) error {
	var p jobPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return fmt.Errorf("annotations: job payload: %w", err)
	}
	j, err := s.st.AnnotationJobByID(ctx, p.JobID)
	if err != nil {
		return err
	}
	if j.Status == store.AnnotationJobCompleted || j.Status == store.AnnotationJobError {
		return nil
	}
	if err := s.st.SetAnnotationJobStatus(ctx, j.ID, store.AnnotationJobProcessing, ""); err != nil {
		return err
	}
	var runErr error
	switch j.Action {
	case store.AnnotationActionEnable:
		set := store.AnnotationSetting{AppID: j.AppID, Enabled: true, Provider: j.Provider, Model: j.Model, ScoreThreshold: j.ScoreThreshold}
		if runErr = s.index(ctx, set); runErr == nil {
			runErr = s.st.SaveAnnotationSetting(ctx, set)
		}
	case store.AnnotationActionDisable:
		set, err := s.st.AnnotationSetting(ctx, j.AppID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			runErr = err
		case set.Enabled:
			set.Enabled = false
			runErr = s.st.SaveAnnotationSetting(ctx, set)
		}
	}
	if ctx.Err() != nil {
		// Shutdown: the job stays processing and runs again from the queue.
		return ctx.Err()
	}
	status, msg := store.AnnotationJobCompleted, ""
	if runErr != nil {
		status, msg = store.AnnotationJobError, jobError(runErr)
		s.log.Warn("annotation reply job failed", "job_id", j.ID, "app_id", j.AppID, "action", j.Action, "error", runErr)
	}
	return s.st.SetAnnotationJobStatus(context.WithoutCancel(ctx), j.ID, status, msg)
}

// jobError is what a failed job's error_msg says: what the client can fix, never an upstream's
// body.
func jobError(err error) string {
	var perr *providers.Error
	switch {
	case errors.Is(err, models.ErrProviderNotFound), errors.Is(err, models.ErrProviderNotConfigured):
		return "The embedding model provider is not configured: " + err.Error()
	case errors.Is(err, models.ErrModelNotFound):
		return "The embedding model is not available: " + err.Error()
	case errors.As(err, &perr):
		return "Embedding the annotations failed: " + perr.SafeMessage()
	}
	return "Embedding the annotations failed."
}

// Enabled reports whether the app answers from its annotations (GET /parameters).
func (s *Service) Enabled(ctx context.Context, appID string) (bool, error) {
	set, err := s.st.AnnotationSetting(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return set.Enabled, err
}

// Match implements run.Annotations: the app's annotation whose question is closest to query,
// if reply is on and it scores at least the threshold.
func (s *Service) Match(ctx context.Context, app *apps.App, query string) (run.AnnotationHit, bool, error) {
	set, err := s.st.AnnotationSetting(ctx, app.ID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !set.Enabled) {
		return run.AnnotationHit{}, false, nil
	}
	if err != nil || strings.TrimSpace(query) == "" {
		return run.AnnotationHit{}, false, err
	}
	spec, emb, err := s.embedder(set)
	if err != nil {
		return run.AnnotationHit{}, false, err
	}
	vecs, _, err := emb.Embed(ctx, spec.Name, []string{query})
	if err != nil {
		return run.AnnotationHit{}, false, err
	}
	hits, err := s.vectors.Search(ctx, []string{app.ID}, vecs[0], 1, set.ScoreThreshold)
	if err != nil || len(hits) == 0 {
		return run.AnnotationHit{}, false, err
	}
	a, err := s.st.Annotation(ctx, app.ID, hits[0].NodeID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted since the index was loaded.
		return run.AnnotationHit{}, false, nil
	}
	if err != nil {
		return run.AnnotationHit{}, false, err
	}
	return run.AnnotationHit{ID: a.ID, Answer: a.Answer, Score: hits[0].Score,
		AccountID: s.account.ID, AccountName: s.account.Name}, true, nil
}

// HitSource is how a hit through the Service API is recorded, as Dify records it.
const HitSource = "service-api"

// RecordHit implements run.Annotations.
func (s *Service) RecordHit(ctx context.Context, app *apps.App, hit run.AnnotationHit, messageID, query string) error {
	return s.st.RecordAnnotationHit(ctx, store.AnnotationHit{AnnotationID: hit.ID, AppID: app.ID, MessageID: messageID,
		Question: query, Score: hit.Score, Source: HitSource})
}
