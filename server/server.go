// Package server fills the strict-server interface generated from api/openapi.yaml: it wires
// Echo, authentication, request and response validation, and maps between the generated types
// and the domain packages under internal/. It holds no business rules.
package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	oapimw "github.com/oapi-codegen/echo-middleware"

	"github.com/parleyhq/parley/api"
	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/annotations"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/audio"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/logctx"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/quota"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/internal/sse"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
)

// BasePath is where the API is mounted, as in Dify (`…/v1`).
const BasePath = "/v1"

// KeyAuthenticator checks API keys; *auth.Service implements it.
type KeyAuthenticator interface {
	Authenticate(ctx context.Context, secret string, want auth.Kind) (auth.Key, error)
}

// ModelCatalog lists configured models; *models.Catalog implements it.
type ModelCatalog interface {
	ByType(t models.Type) []models.ProviderModels
}

// Options configure a Server.
type Options struct {
	// Idempotency keeps the records of Idempotency-Key headers (nil: the header is ignored).
	Idempotency IdempotencyStore
	// Quota counts requests against the rate limits of keys and apps (nil: the limits are
	// counted in the process).
	Quota quota.Counter
	// EventLog keeps the events of workflow runs for the events operation, shared by the
	// replicas with Redis; nil keeps them in the process.
	EventLog eventlog.Log
	Keys     KeyAuthenticator
	Catalog  ModelCatalog
	Apps     *apps.Registry
	TenantID string
	// WorkspaceName is shown as the apps' author.
	WorkspaceName string
	// Limits are the upload limits shown in app parameters.
	Limits apps.Limits
	// Runs starts and stops the runs of every app kind.
	Runs          *run.Engine
	Conversations *conversations.Service
	Files         *files.Service
	// Knowledge serves the knowledge-base operations.
	Knowledge *knowledge.Service
	// WorkflowRuns reads workflow runs and Workflow app logs.
	WorkflowRuns WorkflowRunStore
	// Annotations serves the annotation operations; Audio speech to text and text to speech.
	Annotations *annotations.Service
	Audio       *audio.Service
	// PingInterval is how long a stream may stay quiet before a keep-alive (default 10 s).
	PingInterval time.Duration
	Logger       *slog.Logger
	// Validation is what the response validator does with a contract violation.
	Validation ValidationMode
	// MaxBodyBytes caps JSON request bodies; MaxUploadBytes caps multipart bodies (the largest
	// size any kind of upload may have).
	MaxBodyBytes   int64
	MaxUploadBytes int64
	// BodyRate bounds how slowly a request body may arrive; the zero value means the defaults.
	BodyRate BodyRate
	// StreamStall bounds each write of an event stream to a client that stopped reading
	// (sse.DefaultStallTimeout when 0): the stream then ends and its run goes on without it.
	StreamStall time.Duration
	// HumanInput serves the forms of paused runs and the events of resumed ones.
	HumanInput *humaninput.Service
	// MCP serves the apps published as MCP servers (server/mcp.go); nil: no MCP endpoint.
	MCP *mcpserver.Service
	// PublicURL is the scheme and host (and any path prefix) clients reach the server at
	// (PARLEY_FILES_URL); empty: the origin of each request. Links to the server's own
	// resources, such as the default provider icon, start with it.
	PublicURL string
	// Metrics records requests and open streams; nil: no metrics.
	Metrics *metrics.Metrics
	// Sites keeps the web sites of apps and their passports (GET /passport, the WebPassport
	// scheme); nil: every passport is refused.
	Sites *sites.Service
	// PageSites finds the sites of the app pages (pages.go); nil: the sites of Sites, and with
	// neither every page answers 404.
	PageSites SiteFinder
	// Triggers serves the webhooks of Workflow apps (server/triggers.go); nil: none.
	Triggers Triggers
	// WebhookRequestsPerMinute is how many requests one webhook takes per minute; 0: no limit.
	WebhookRequestsPerMinute int64
}

// Server implements gen.StrictServerInterface.
type Server struct {
	keys          KeyAuthenticator
	catalog       ModelCatalog
	apps          *apps.Registry
	tenantID      string
	workspaceName string
	limits        apps.Limits
	runs          *run.Engine
	conversations *conversations.Service
	files         *files.Service
	knowledge     *knowledge.Service
	workflowRuns  WorkflowRunStore
	annotations   *annotations.Service
	audio         *audio.Service
	// maxUploadBytes is the largest upload any category allows.
	maxUploadBytes int64
	pingInterval   time.Duration
	streamStall    time.Duration
	log            *slog.Logger
	publicURL      string

	validator   *ResponseValidator
	quota       quota.Counter
	idempotency IdempotencyStore
	// documentConfig is the contract's schema of the `data` part of the document file routes.
	docConfigSchema *openapi3.Schema
	humanInput      *humaninput.Service
	// events keeps the events of workflow runs for the events operation (eventstream.go).
	events eventlog.Log
	// mcp finds the MCP servers of apps (mcp.go).
	mcp *mcpserver.Service
	// metrics records requests and open streams (observe.go); nil when off.
	metrics *metrics.Metrics
	// sites keeps the web sites of apps and checks their passports (sites.go).
	sites *sites.Service
	// triggers serves webhooks (triggers.go), nil when none; webhookRate is
	// Options.WebhookRequestsPerMinute.
	triggers    Triggers
	webhookRate int64
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New builds the HTTP handler: Echo with, in order, the request's span and metrics (when tracing
// or metrics are on: observe.go), the body cap and timer, the response
// validator, the request validator (which authenticates first, and scans JSON bodies before it
// decodes them: jsonbody.go), the refusal of text that cannot be stored, and the strict handlers
// under BasePath. With Options.MCP, the MCP endpoint of published apps is served beside them,
// behind the same guards (mcp.go).
func New(opts Options) (*echo.Echo, *Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// Every line logged with a request's context carries its id (see requestID).
	opts.Logger = slog.New(logctx.NewHandler(opts.Logger.Handler()))
	if opts.Validation == "" {
		opts.Validation = ValidationLog
	}
	if opts.BodyRate == (BodyRate{}) {
		opts.BodyRate = BodyRate{Timeout: DefaultBodyTimeout, MinRate: DefaultBodyMinRate}
	}
	s := &Server{keys: opts.Keys, catalog: opts.Catalog, apps: opts.Apps, tenantID: opts.TenantID,
		workspaceName: opts.WorkspaceName, limits: opts.Limits, runs: opts.Runs,
		conversations: opts.Conversations, files: opts.Files, knowledge: opts.Knowledge,
		workflowRuns: opts.WorkflowRuns,
		annotations:  opts.Annotations, audio: opts.Audio,
		maxUploadBytes: opts.MaxUploadBytes,
		pingInterval:   opts.PingInterval, streamStall: opts.StreamStall, log: opts.Logger,
		humanInput: opts.HumanInput, events: opts.EventLog, publicURL: strings.TrimRight(opts.PublicURL, "/"),
		mcp: opts.MCP, metrics: opts.Metrics, sites: opts.Sites, triggers: opts.Triggers, webhookRate: opts.WebhookRequestsPerMinute}
	if s.pingInterval <= 0 {
		s.pingInterval = sse.DefaultPingInterval
	}
	s.idempotency = opts.Idempotency
	if s.quota = opts.Quota; s.quota == nil {
		s.quota = quota.NewLocal()
	}
	s.tapEvents()

	doc, err := api.Load()
	if err != nil {
		return nil, nil, err
	}
	// Validate paths relative to where we mount the API, whatever host the client used.
	doc.Servers = openapi3.Servers{{URL: BasePath}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("route contract: %w", err)
	}
	registerRequestSchemas(doc)
	s.validator, err = NewResponseValidator(doc, router, opts.Validation, opts.Logger)
	if err != nil {
		return nil, nil, err
	}
	if ref := doc.Components.Schemas["DocumentProcessConfig"]; ref != nil && ref.Value != nil {
		s.docConfigSchema = ref.Value
	} else {
		return nil, nil, fmt.Errorf("the contract has no DocumentProcessConfig schema")
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	b := beside{}
	if s.mcp != nil {
		// The MCP endpoint is JSON-RPC outside the contract (mcp.go).
		b.mcp = s.newMCP(opts).echo
	}
	// The app pages, their assets and the chat bubble's script are served beside the API, outside
	// its base path and its contract (pages.go).
	finder := opts.PageSites
	if finder == nil && opts.Sites != nil {
		finder = serviceSites{opts.Sites}
	}
	if b.pages, err = newPages(finder); err != nil {
		return nil, nil, err
	}
	if s.triggers != nil {
		// The webhooks of Workflow apps (triggers.go).
		b.triggers = s.newTriggersEcho(opts)
	}
	e.Pre(prepare(b))
	e.Use(requestID()...)
	if tracing.On() || s.metrics != nil {
		e.Use(s.observe)
	}
	e.Use(s.accessLog)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
		s.log.ErrorContext(c.Request().Context(), "panic", "error", err, "path", c.Request().URL.Path, "stack", string(stack))
		return err
	}}))
	e.Use(guardBody(opts.MaxBodyBytes, opts.MaxUploadBytes, opts.BodyRate))
	e.Use(s.validator.Middleware())
	requestValidator := func(excludeBody bool) echo.MiddlewareFunc {
		return oapimw.OapiRequestValidatorWithOptions(doc, &oapimw.Options{
			SilenceServersWarning: true,
			Options: openapi3filter.Options{
				AuthenticationFunc: s.authenticate,
				// Dify's clients send undeclared members and form fields; the contract says which
				// ones matter, the rest are ignored.
				MultiError:         false,
				ExcludeRequestBody: excludeBody,
				// The handlers bind the value that was validated, not a second decode of the
				// body (which would match member names case-insensitively).
				KeepValidatedValue: true,
			},
			ErrorHandler: func(c echo.Context, err *echo.HTTPError) error {
				if err.Code == http.StatusMethodNotAllowed {
					c.Response().Header().Set(echo.HeaderAllow, allowedMethods(router, c.Request()))
				}
				return err
			},
		})
	}
	// kin-openapi decodes a multipart body whole, in memory; multipart requests are checked
	// without their body (key, path and query still are) and their handlers validate the parts
	// while streaming them (see multipart.go).
	e.Use(byContentType(router, requestValidator(false), requestValidator(true)))
	e.Use(principalToRequest, s.rateLimit, storableText(doc, BasePath), s.idempotent)
	gen.RegisterHandlersWithBaseURL(e, gen.NewStrictHandler(s, []gen.StrictMiddlewareFunc{recordOperation, linksOrigin, passportBearer}), BasePath)
	return e, s, nil
}

// Violations counts contract violations seen by the response validator.
func (s *Server) Violations() int64 { return s.validator.Violations() }

// allowedMethods lists the methods the contract declares for the request's path, for the Allow
// header of a 405.
func allowedMethods(router routers.Router, r *http.Request) string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, _, err := router.FindRoute(probe); err == nil {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

// byContentType runs multipart for multipart/form-data requests to operations that take such a
// body, and other for the rest (so a form sent to a JSON operation still gets its 415).
//
// The multipart validator is shown an empty body: kin-openapi reads the whole body into memory
// for its security check even when told to leave the body alone, which would buffer every
// upload before its handler could refuse it at the size limit. The body is given back to the
// request just before the handler.
func byContentType(router routers.Router, other, multipart echo.MiddlewareFunc) echo.MiddlewareFunc {
	const heldBody = "parley.multipart-body"
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		o := other(next)
		m := multipart(func(c echo.Context) error {
			if b, ok := c.Get(heldBody).(io.ReadCloser); ok {
				c.Request().Body = b
			}
			return next(c)
		})
		return func(c echo.Context) error {
			if takesMultipart(router, c.Request()) {
				r := c.Request()
				c.Set(heldBody, r.Body)
				r.Body = http.NoBody
				return m(c)
			}
			return o(c)
		}
	}
}

func takesMultipart(router routers.Router, r *http.Request) bool {
	if !strings.HasPrefix(strings.ToLower(r.Header.Get(echo.HeaderContentType)), echo.MIMEMultipartForm) {
		return false
	}
	route, _, err := router.FindRoute(r)
	if err != nil || route.Operation == nil || route.Operation.RequestBody == nil || route.Operation.RequestBody.Value == nil {
		return false
	}
	return route.Operation.RequestBody.Value.Content.Get(echo.MIMEMultipartForm) != nil
}

// ListAvailableModels answers GET /workspaces/current/models/model-types/{model_type}.
func (s *Server) ListAvailableModels(ctx context.Context, req gen.ListAvailableModelsRequestObject) (gen.ListAvailableModelsResponseObject, error) {
	t, err := models.ParseType(string(req.ModelType))
	if err != nil {
		// Unreachable behind the request validator; kept so the handler is safe on its own.
		return nil, err
	}
	providers := s.catalog.ByType(t)
	out := gen.ListAvailableModels200JSONResponse{Data: make([]gen.ModelProvider, 0, len(providers))}
	for _, p := range providers {
		out.Data = append(out.Data, s.modelProvider(ctx, p))
	}
	return out, nil
}

func (s *Server) modelProvider(ctx context.Context, p models.ProviderModels) gen.ModelProvider {
	mp := gen.ModelProvider{
		Provider: p.Provider,
		Label:    gen.I18nObject(p.Label),
		Status:   p.Status,
		TenantId: s.tenantID,
		Models:   make([]gen.Model, 0, len(p.Models)),
	}
	// A provider without icons gets the server's own default icon: the contract's icon_small
	// is always a locale map.
	if len(p.IconSmall) > 0 {
		mp.IconSmall = maps.Clone(p.IconSmall)
	} else {
		icon := s.publicBase(ctx) + ProviderIconPath
		mp.IconSmall = map[string]string{config.LocaleEnUS: icon, config.LocaleZhHans: icon}
	}
	if p.IconSmallDark != nil {
		dark := maps.Clone(p.IconSmallDark)
		mp.IconSmallDark = &dark
	}
	for _, m := range p.Models {
		gm := gen.Model{
			Model:                          m.Name,
			Label:                          gen.I18nObject(m.Label),
			ModelType:                      gen.ModelType(m.Type),
			FetchFrom:                      gen.ModelFetchFrom(m.FetchFrom),
			Status:                         m.Status,
			Deprecated:                     m.Deprecated,
			LoadBalancingEnabled:           m.LoadBalancingEnabled,
			HasInvalidLoadBalancingConfigs: m.HasInvalidLoadBalancingConfigs,
			ModelProperties:                modelProperties(m.Properties),
		}
		if m.Features != nil {
			f := append([]string(nil), m.Features...)
			gm.Features = &f
		}
		mp.Models = append(mp.Models, gm)
	}
	return mp
}

func modelProperties(props map[string]any) gen.Model_ModelProperties {
	var out gen.Model_ModelProperties
	for k, v := range props {
		if k == "context_size" {
			if n, ok := v.(int); ok {
				out.ContextSize = &n
				continue
			}
		}
		if out.AdditionalProperties == nil {
			out.AdditionalProperties = map[string]any{}
		}
		out.AdditionalProperties[k] = v
	}
	return out
}
