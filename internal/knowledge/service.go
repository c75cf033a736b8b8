// Package knowledge runs knowledge bases the way Dify's knowledge Service API does: datasets
// and their documents, background indexing (extract, clean, split, keywords or embeddings) with
// crash resume, chunk editing, and retrieval by keyword, semantic, full-text and hybrid search
// with optional reranking. Persistence is the Store interface; vectors are searched through a
// vectorindex.Index.
package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// Kind classifies a knowledge failure by what went wrong, not by how it is answered: server/
// gives each kind its HTTP status and error code (Dify's), this package gives the message.
type Kind string

// Failure kinds. The comment on each names the Dify code server/ answers it with.
const (
	// KindInvalid: the request breaks one of the service's rules (invalid_param).
	KindInvalid Kind = "invalid"
	// KindNotFound: the dataset, document, chunk, tag or metadata field does not exist (not_found).
	KindNotFound Kind = "not_found"
	// KindAPIDisabled: the dataset's API access is switched off (forbidden).
	KindAPIDisabled Kind = "api_disabled"
	// KindNameDuplicate: another dataset has the name (dataset_name_duplicate).
	KindNameDuplicate Kind = "name_duplicate"
	// KindInUse: apps use the dataset, so it cannot be deleted (dataset_in_use).
	KindInUse Kind = "in_use"
	// KindArchived: the document is archived and cannot be changed (archived_document_immutable).
	KindArchived Kind = "archived"
	// KindNotInitialized: the dataset has nothing indexed to search yet (dataset_not_initialized).
	KindNotInitialized Kind = "not_initialized"
	// KindNoEmbeddingModel: no usable embedding model is configured (provider_not_initialize).
	KindNoEmbeddingModel Kind = "no_embedding_model"
	// KindInvalidAction: the action does not apply to the document (invalid_action).
	KindInvalidAction Kind = "invalid_action"
	// KindExternalRequest: the external knowledge API of an external knowledge base failed:
	// no key, no connection, a timeout, an error or a reply that is not the API's
	// (external_knowledge_request_error).
	KindExternalRequest Kind = "external_request"
)

// Error is a knowledge failure. Message is Dify's text for it and safe to show to a client; the
// cause, if any, is for errors.Is/As and the log. An *Error matches (errors.Is) any *Error of
// the same kind and message, so the sentinels below match the copies that carry a cause.
type Error struct {
	Kind    Kind
	Message string
	cause   error
}

// Error is for logs: the kind, the message and the cause.
func (e *Error) Error() string {
	if e.cause != nil {
		return "knowledge: " + string(e.Kind) + ": " + e.Message + ": " + e.cause.Error()
	}
	return "knowledge: " + string(e.Kind) + ": " + e.Message
}

// SafeMessage implements safeerr.Error.
func (e *Error) SafeMessage() string { return e.Message }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error of the same kind and message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && t.Message == e.Message
}

func newError(kind Kind, msg string) *Error { return &Error{Kind: kind, Message: msg} }

func invalidParam(msg string) *Error { return newError(KindInvalid, msg) }

func notFound(msg string) *Error { return newError(KindNotFound, msg) }

// Errors shared by several operations, with Dify's messages.
var (
	ErrDatasetNotFound   = notFound("Dataset not found.")
	ErrAPIDisabled       = newError(KindAPIDisabled, "Dataset api access is not enabled.")
	ErrDocumentNotFound  = notFound("Document not found.")
	ErrSegmentNotFound   = notFound("Segment not found.")
	ErrChildNotFound     = notFound("Child chunk not found.")
	ErrNameDuplicate     = newError(KindNameDuplicate, "The dataset name already exists. Please modify your dataset name.")
	ErrDatasetInUse      = newError(KindInUse, "The dataset is being used by some apps. Please remove the dataset from the apps before deleting it.")
	ErrArchived          = newError(KindArchived, "The archived document is not editable.")
	ErrNotAvailable      = invalidParam("Document is not available")
	ErrNotInitialized    = newError(KindNotInitialized, "The dataset is still being initialized or indexing. Please wait a moment.")
	ErrNoEmbeddingModel  = newError(KindNoEmbeddingModel, "No Embedding Model available. Please configure a valid provider in the Settings -> Model Provider.")
	ErrInvalidAction     = newError(KindInvalidAction, "Invalid action.")
	ErrTechniqueRequired = invalidParam("indexing_technique is required.")
	ErrProcessRuleNeeded = invalidParam("process_rule is required.")
	ErrInvalidDocForm    = invalidParam("Invalid doc_form.")
	// ErrExternalDataset: the operation reads or changes documents, chunks or metadata fields,
	// which an external knowledge base does not have.
	ErrExternalDataset = invalidParam("This is an external knowledge base: its documents and chunks live in the service " +
		"behind its external knowledge API, and Parley has none to show or change.")
	// ErrKnowledgeNotFound: Parley's External Knowledge API has no knowledge base with the id asked
	// for, or it is an external one (which Parley does not serve in turn).
	ErrKnowledgeNotFound = notFound("The knowledge does not exist.")
)

// Models gives clients for configured models; registry.Set implements it.
type Models interface {
	Embedder(spec models.ModelSpec) (providers.Embedder, error)
	Reranker(spec models.ModelSpec) (providers.Reranker, error)
}

// Catalog looks configured models up; *models.Catalog implements it.
type Catalog interface {
	Lookup(t models.Type, provider, name string) (models.ModelSpec, error)
	ByType(t models.Type) []models.ProviderModels
}

// Files stores and opens document sources; *files.Service implements it.
type Files interface {
	UploadDocument(ctx context.Context, u files.DocumentUpload) (store.UploadFile, error)
	// Lookup returns the upload row with this id, whoever made it.
	Lookup(ctx context.Context, id string) (store.UploadFile, error)
	Open(ctx context.Context, f store.UploadFile) (io.ReadCloser, error)
}

// Options configure a Service.
type Options struct {
	Store   Store
	Files   Files
	Catalog Catalog
	Models  Models
	Vectors vectorindex.Index
	Jobs    jobs.Queue
	// AccountID is the workspace owner the requests run as (created_by).
	AccountID string
	// AppsUsing reports how many apps use the named knowledge base.
	AppsUsing func(name string) int
	// MaxSegmentLength is INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH (default 4000).
	MaxSegmentLength int
	// Extract extracts the text of a document's file; extract.Extract, in this process, when
	// nil. A server passes one that runs in a child process under resource limits
	// (sandbox.Extractor), which a runaway parser cannot escape.
	Extract ExtractFunc
	// IndexingTimeout bounds the indexing of one document, from extraction to the last chunk
	// written (DefaultIndexingTimeout when 0); past it the document ends in error.
	IndexingTimeout time.Duration
	// MaxZipBytes bounds the files one ZIP download may hold together (DefaultMaxZipBytes when 0).
	MaxZipBytes int64
	Logger      *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// ExternalClient calls the external knowledge APIs of external knowledge bases; nil is a
	// client behind the network guard (no internal addresses). The server's lets
	// PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS through.
	ExternalClient *http.Client
	// ExternalTimeout bounds one call to an external knowledge API, its reply read in full
	// (DefaultExternalTimeout when 0).
	ExternalTimeout time.Duration
	// Getenv reads the environment variables that hold the keys of external knowledge APIs
	// (os.Getenv when nil).
	Getenv func(string) string
}

// Service is the knowledge-base runtime. It is safe for concurrent use.
type Service struct {
	st        Store
	files     Files
	catalog   Catalog
	models    Models
	vectors   vectorindex.Index
	jobs      jobs.Queue
	account   string
	appsUsing func(string) int
	maxSeg    int
	extract   ExtractFunc
	timeout   time.Duration
	maxZip    int64
	log       *slog.Logger
	now       func() time.Time
	// extClient, extTimeout and getenv call external knowledge APIs (external.go).
	extClient  *http.Client
	extTimeout time.Duration
	getenv     func(string) string
	// runs holds the indexing runs queued or running in this process and the document locks
	// (see runs.go).
	runs runs
}

// ExtractFunc extracts the text of a file; extract.Extract is one.
type ExtractFunc func(ctx context.Context, filename string, r io.Reader, size int64) (extract.Document, error)

// New returns a Service.
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxSegmentLength <= 0 {
		opts.MaxSegmentLength = 4000
	}
	if opts.AppsUsing == nil {
		opts.AppsUsing = func(string) int { return 0 }
	}
	if opts.Extract == nil {
		opts.Extract = extract.Extract
	}
	if opts.IndexingTimeout <= 0 {
		opts.IndexingTimeout = DefaultIndexingTimeout
	}
	if opts.MaxZipBytes <= 0 {
		opts.MaxZipBytes = DefaultMaxZipBytes
	}
	if opts.ExternalClient == nil {
		// A client without a transport of its own gets the guard on http.DefaultTransport's
		// clone, which never fails.
		opts.ExternalClient, _ = netguard.Client(nil, false, nil)
	}
	if opts.ExternalTimeout <= 0 {
		opts.ExternalTimeout = DefaultExternalTimeout
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	return &Service{st: opts.Store, files: opts.Files, catalog: opts.Catalog, models: opts.Models,
		vectors: opts.Vectors, jobs: opts.Jobs, account: opts.AccountID, appsUsing: opts.AppsUsing,
		maxSeg: opts.MaxSegmentLength, extract: opts.Extract, timeout: opts.IndexingTimeout, maxZip: opts.MaxZipBytes,
		log: opts.Logger, now: opts.Now, extClient: opts.ExternalClient, extTimeout: opts.ExternalTimeout, getenv: opts.Getenv}
}

func (s *Service) nowUTC() time.Time { return s.now().UTC().Truncate(time.Second) }

// storeErr turns a store not-found into nf and wraps anything else.
func storeErr(err error, nf *Error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return nf
	}
	return fmt.Errorf("knowledge: %s: %w", what, err)
}

// isUUID reports whether s looks like a canonical UUID (Dify's path converter rejects others
// with a plain 404).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// providerName accepts Dify's "org/plugin/provider" spelling as well as the bare provider name.
func providerName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// SeedConfigured makes sure the config file's external knowledge APIs are registered as
// declared (created, or updated when they changed), and that every knowledge base it declares
// exists as a dataset: a missing one is created (high_quality with the declared embedding
// model, economy when none is declared, or external, bound to its declared API). Existing
// datasets are left as they are.
func (s *Service) SeedConfigured(ctx context.Context, kbs []config.KnowledgeBase, apis []config.ExternalKnowledgeAPI) error {
	apiIDs, err := s.seedExternalAPIs(ctx, apis)
	if err != nil {
		return err
	}
	for _, kb := range kbs {
		if _, err := s.st.DatasetByName(ctx, kb.Name); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("knowledge: seed %q: %w", kb.Name, err)
		}
		in := CreateDatasetInput{Name: kb.Name, Description: kb.Description, IndexingTechnique: store.TechniqueEconomy}
		if kb.External != nil {
			in = configuredExternal(kb, apiIDs[kb.External.API])
		} else if kb.Embedding.Provider != "" {
			in.IndexingTechnique = store.TechniqueHighQuality
			in.EmbeddingModelProvider = kb.Embedding.Provider
			in.EmbeddingModel = kb.Embedding.Model
		}
		if _, err := s.CreateDataset(ctx, in); err != nil && !errors.Is(err, ErrNameDuplicate) {
			return fmt.Errorf("knowledge: seed %q: %w", kb.Name, err)
		}
	}
	return nil
}
