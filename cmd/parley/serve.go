package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/agent"
	"github.com/parleyhq/parley/internal/idlemem"
	"github.com/parleyhq/parley/internal/moderation"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
	"github.com/parleyhq/parley/internal/workflow/chatflow"
	"github.com/parleyhq/parley/internal/workflow/httpreq"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/annotations"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/audio"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/datadir"
	"github.com/parleyhq/parley/internal/debugsrv"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/health"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/knowledge/sandbox"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/triggers"
	"github.com/parleyhq/parley/internal/vectorindex"
	"github.com/parleyhq/parley/internal/version"
	"github.com/parleyhq/parley/server"
)

func newServeCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), getenv, f)
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", "", "listen address (overrides PARLEY_ADDR)")
	return cmd
}

// serve runs the server until ctx ends (SIGINT/SIGTERM), then shuts down: stop accepting, cancel
// the requests' base context so open streams end, wait up to the grace period, close the store.
func serve(ctx context.Context, getenv func(string) string, f *flags) error {
	e, err := open(ctx, getenv, f)
	if err != nil {
		return err
	}
	// The data directory's lock (below) is given up after the database is closed.
	var lock *datadir.Lock
	defer func() {
		e.store.Close()
		_ = lock.Release()
	}()
	cfg := e.cfg

	ws, err := e.store.Workspace(ctx)
	if err != nil {
		return err
	}
	mode, err := server.ParseValidationMode(string(cfg.ResponseValidation))
	if err != nil {
		return err
	}
	if len(e.nameClashes) > 0 {
		return fmt.Errorf("config apps %q have the names of imported apps: rename them in the config file, "+
			"or delete the imported apps (parley apps delete NAME)", e.nameClashes)
	}
	// On SQLite this server owns the data directory, so it knows that no other server is alive
	// on its database; the other commands of the CLI run beside it without the lock. A second
	// server fails here, before it changes anything but what those commands change too.
	sole := e.store.Dialect() == store.DialectSQLite
	if sole {
		if lock, err = datadir.Acquire(cfg.DataDir); err != nil {
			return err
		}
	}
	// Traces go to an OTLP endpoint when the OpenTelemetry variables name one; metrics are kept
	// when the admin listener, which serves them, is configured. Both are set up before anything
	// that observes requests, runs, model calls or jobs is built.
	stopTracing, err := tracing.Setup(ctx, getenv, tracing.Settings{CaptureContent: cfg.OTelCaptureContent,
		Version: version.String(), Logger: e.log})
	if err != nil {
		return err
	}
	defer func() {
		// The spans still buffered go out before the process ends.
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(flushCtx); err != nil {
			e.log.Warn("tracing: flushing the last spans failed", "error", err)
		}
	}()
	var meters *metrics.Metrics
	if cfg.DebugAddr != "" {
		meters = metrics.New()
		err := meters.Register(collectors.NewDBStatsCollector(e.store.DB(), e.store.Dialect()),
			metrics.JobQueue(func(ctx context.Context) ([]metrics.QueueCount, error) { return jobCounts(ctx, e.store) }))
		if err != nil {
			return err
		}
	}
	appRegistry := e.apps
	keys := auth.New(e.store, auth.WithLogger(e.log))
	defer keys.Close()
	catalog := models.NewCatalog(e.file.Providers, getenv)
	warnUnusableProviders(e.log, catalog)
	// Uploaded files and the key that signs links to them are the same on every replica.
	fileStore, err := openFileStorage(cfg, e.store)
	if err != nil {
		return err
	}
	fileStore.warnLegacyFiles(ctx, e.log)
	signingKey, err := files.SharedSigningKey(ctx, e.store, cfg.DataDir)
	if err != nil {
		return err
	}
	fileSvc := files.New(files.Options{Store: e.store, Blobs: fileStore.blobs, Limits: cfg.Upload,
		AllowPrivateNetworks: cfg.RemoteFilesAllowPrivate, Logger: e.log,
		SigningKey: signingKey, PublicURL: cfg.FilesURL, AccessTimeout: cfg.FilesAccessTimeout})
	providerSet := registry.New(catalog.APIKey).WithCallTimeout(cfg.ModelCallTimeout).WithMetrics(meters)
	// Background jobs are rows in the database, run by whichever replica claims them first and
	// held by a lease its worker renews; a dead replica's jobs are taken over when it expires.
	indexQueue := jobs.NewDurable(jobs.DurableOptions{Store: e.store, Workers: cfg.IndexingWorkers,
		Lease: cfg.JobLease, Poll: cfg.JobPoll, Logger: e.log, Metrics: meters})
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate the parley binary for document extraction: %w", err)
	}
	// Documents are parsed in a child process: a parser caught in a loop on a hostile file
	// is killed at its limits instead of holding a core and a worker for good.
	extractor := &sandbox.Extractor{Path: self, Args: []string{extractCmdName},
		CPU: cfg.ExtractCPULimit, Memory: int64(cfg.ExtractMemoryLimitMB) << 20, Logger: e.log}
	vectors := vectorindex.NewMemory(e.store, vectorindex.WithLogger(e.log))
	// External knowledge bases call their APIs through the network guard, reaching internal
	// addresses only within PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS.
	externalClient, err := netguard.ClientAllowing(nil, cfg.ExternalKnowledgeAllowedNetworks, nil)
	if err != nil {
		return err
	}
	knowledgeSvc := knowledge.New(knowledge.Options{
		Store: e.store, Files: fileSvc, Catalog: catalog, Models: providerSet,
		Vectors: vectors, Jobs: indexQueue, AccountID: ws.ID,
		AppsUsing: func(name string) int { return appsUsing(context.WithoutCancel(ctx), appRegistry, name, e.log) }, Logger: e.log,
		MaxSegmentLength: cfg.IndexingMaxSegmentationTokensLength,
		Extract:          extractor.Extract, IndexingTimeout: cfg.IndexingTimeout,
		ExternalClient: externalClient, ExternalTimeout: cfg.ExternalKnowledgeTimeout, Getenv: getenv,
	})
	indexQueue.Handle(knowledge.JobKind, knowledgeSvc.HandleJob)
	if err := knowledgeSvc.SeedConfigured(ctx, e.file.KnowledgeBases, e.file.ExternalKnowledgeAPIs); err != nil {
		return err
	}
	annotationSvc := annotations.New(annotations.Options{Store: e.store, Catalog: catalog, Models: providerSet,
		Jobs: indexQueue, AccountID: ws.ID, AccountName: e.file.Workspace.Name, Logger: e.log})
	indexQueue.Handle(annotations.JobKind, annotationSvc.HandleJob)
	audioSvc := audio.New(catalog, providerSet, e.store)
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	if err := annotationSvc.Resume(ctx); err != nil {
		return err
	}
	chatSvc := chat.New(chat.Options{
		Store: e.store, Models: catalog, Providers: providerSet,
		Files: fileSvc, Logger: e.log, Knowledge: knowledgeSvc, Jobs: indexQueue, App: appRegistry.Get,
	})
	indexQueue.Handle(chat.NameJobKind, chatSvc.HandleNameJob)
	// Workflow tools run on the engine, which is built further down with the runners that use
	// the tools.
	var engine *run.Engine
	toolReg, err := toolRegistry(e, &serverTools{runWorkflow: workflowToolRuns(&engine), audio: audioSvc})
	if err != nil {
		return err
	}
	defer toolReg.Close()
	agentRunner := agent.New(agent.Options{
		Store: e.store, Chat: chatSvc, Tools: toolReg.Find, Knowledge: knowledgeSvc, Logger: e.log,
		Files: fileSvc,
	})
	// http-request nodes reach internal addresses only within PARLEY_TOOLS_ALLOWED_NETWORKS,
	// as tools do; their connections are shared between runs and closed at shutdown.
	nodeClient, err := netguard.ClientAllowing(nil, cfg.ToolsAllowedNetworks, nil)
	if err != nil {
		return err
	}
	mcpClient, err := toolsClient(e)
	if err != nil {
		return err
	}
	nodeTransports := &httpreq.Transports{}
	defer nodeTransports.Close()
	var humanInput *humaninput.Service
	chatflowRunner := chatflow.New(chatflow.Options{
		OnPause:                 func() { humanInput.Created() },
		HumanInputGlobalTimeout: time.Duration(cfg.HumanInputGlobalTimeoutSeconds) * time.Second,
		Store:                   e.store, Logger: e.log, Files: chatSvc.MessageFiles,
		Nodes: nodes.Registry(nodes.Deps{Models: catalog, Providers: providerSet, Knowledge: knowledgeSvc, Tools: toolReg.Find,
			Code: lazyCodeSandbox(cfg.Code, e.log), Files: fileSvc, Extract: extractor.Extract,
			HTTP: nodes.HTTP{Client: nodeClient, Transports: nodeTransports}, MCPClient: mcpClient, Storage: e.store}),
		RefusePinnedVersions: cfg.WorkflowVersionExecution == config.WorkflowVersionExecutionNotAllowed,
		NodeTimeout:          cfg.WorkflowNodeTimeout,
	})
	coord, err := openCoordination(ctx, cfg, e.store, e.log)
	if err != nil {
		return err
	}
	defer coord.close()
	if meters != nil && len(coord.pools) > 0 {
		if err := meters.Register(metrics.RedisPools(coord.pools)); err != nil {
			return err
		}
	}
	stopSharing, err := shareVectors(ctx, coord, e.store, vectors, e.log)
	if err != nil {
		return err
	}
	defer stopSharing()
	engine = run.New(run.Options{
		Store: e.store, Limiter: coord.limiter, Tasks: coord.tasks, Logger: e.log,
		StaleAfter: cfg.RunStaleAfter, Moderation: moderation.New(catalog, providerSet), ModerationBuffer: cfg.ModerationBufferSize,
		Annotations: annotationSvc, Speech: audioSvc, Metrics: meters, Quota: server.RunQuota(coord.quota, e.log),
		Kinds: map[string]run.Kind{
			config.AppModeChat:       {Runner: chatSvc.Chatbot()},
			config.AppModeCompletion: {Runner: chatSvc.Completion(), OneShot: true},
			config.AppModeAgentChat:  {Runner: agentRunner},
			apps.ModeAgent:           {Runner: agentRunner.AgentApp()},
			apps.ModeAdvancedChat:    {Runner: chatflowRunner},
			apps.ModeWorkflow:        {Runner: chatflowRunner, Workflow: true},
		},
	})
	humanInput = humaninput.New(humaninput.Options{Store: e.store, Runs: engine, Logger: e.log,
		Resumers: map[string]humaninput.Resumer{apps.ModeAdvancedChat: chatflowRunner, apps.ModeWorkflow: chatflowRunner},
		App:      appRegistry.Get})
	// Answers a stopped server left running end before any client can read them. Alone on
	// SQLite, every running answer is a predecessor's and ends at once; with replicas, those of
	// live ones keep a fresh heartbeat and are left alone.
	endInterrupted := engine.EndInterrupted
	if sole {
		endInterrupted = engine.EndAllInterrupted
	}
	if n, err := endInterrupted(ctx); err != nil {
		return err
	} else if n > 0 {
		e.log.Warn("ended answers interrupted by a stopped server", "messages", n)
	}
	// Idempotency keys past their day are dropped; alone on the database, the requests a
	// stopped server was answering are forgotten, so that their retries run again.
	if _, err := e.store.DeleteIdempotentBefore(ctx, time.Now().Add(-server.IdempotencyTTL)); err != nil {
		return err
	}
	if sole {
		if _, err := e.store.ForgetRunningIdempotent(ctx); err != nil {
			return err
		}
	}
	// Every app has a web site; the config's `site` blocks are applied again at each start.
	siteSvc, err := ensureSites(ctx, e)
	if err != nil {
		return err
	}
	// Workflow apps that start from triggers: webhooks are served beside the API, schedules tick
	// on every replica (each tick claimed by one in the database), and both queue their runs as
	// durable jobs.
	triggerSvc := triggers.New(triggers.Options{Store: e.store, Apps: appRegistry, Runs: engine, Queue: indexQueue,
		Files: webhookFiles(engine, fileSvc), URL: cfg.TriggerBaseURL(), Poll: cfg.SchedulePoll,
		MaxBody: cfg.WebhookMaxBodyBytes, Logger: e.log})
	indexQueue.Handle(triggers.JobKind, triggerSvc.HandleRun)
	handler, _, err := server.New(server.Options{
		Sites:         siteSvc,
		Idempotency:   e.store,
		Quota:         coord.quota,
		Keys:          keys,
		EventLog:      coord.events,
		Catalog:       catalog,
		Runs:          engine,
		Conversations: conversations.New(e.store, chatSvc, engine),
		Files:         fileSvc,
		Knowledge:     knowledgeSvc,
		WorkflowRuns:  e.store,
		Annotations:   annotationSvc,
		Audio:         audioSvc,
		Apps:          appRegistry,
		TenantID:      ws.ID,
		WorkspaceName: e.file.Workspace.Name,
		Limits: apps.Limits{
			File: cfg.Upload.FileSizeLimitMB, Image: cfg.Upload.ImageFileSizeLimitMB,
			Audio: cfg.Upload.AudioFileSizeLimitMB, Video: cfg.Upload.VideoFileSizeLimitMB,
			WorkflowFiles: workflowFileUploadLimit,
		},
		HumanInput:   humanInput,
		MCP:          mcpserver.New(e.store),
		PublicURL:    cfg.FilesURL,
		Metrics:      meters,
		Logger:       e.log,
		Validation:   mode,
		MaxBodyBytes: cfg.MaxBodyBytes,
		BodyRate:     server.BodyRate{Timeout: cfg.BodyTimeout, MinRate: cfg.BodyMinRate},
		StreamStall:  cfg.StreamWriteTimeout,
		MaxUploadBytes: int64(max(cfg.Upload.FileSizeLimitMB, cfg.Upload.ImageFileSizeLimitMB,
			cfg.Upload.AudioFileSizeLimitMB, cfg.Upload.VideoFileSizeLimitMB)) << 20,
		Triggers:                 triggerSvc,
		WebhookRequestsPerMinute: cfg.WebhookRequestsPerMinute,
	})
	if err != nil {
		return err
	}

	// Timers of human-input forms are durable jobs, stored with their forms; decisions a
	// stopped server took without acting on them are acted on now.
	indexQueue.Handle(store.JobKindHumanInputTimer, humanInput.HandleTimer)
	if sole {
		// SQLite serves one process: the jobs its previous run held are free at once.
		if _, err := e.store.ReleaseAllJobLeases(ctx); err != nil {
			return err
		}
	}
	if err := indexQueue.Start(jobsCtx); err != nil {
		return err
	}
	go humanInput.ResumeDecided(jobsCtx)
	go triggerSvc.Run(jobsCtx)

	// The tokenizer (tens of megabytes of tables) loads in the background now rather than in
	// the first request that counts tokens, which would wait for it; the server's idle size
	// then includes it, as it will after that request anyway.
	go tokens.Warm()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	// Profiles and metrics are served on an address of their own, never on the API's listener.
	if cfg.DebugAddr != "" {
		dbg, err := debugsrv.Start(cfg.DebugAddr, e.log, meters.Handler())
		if err != nil {
			ln.Close()
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			_ = dbg.Shutdown(ctx)
		}()
	}
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	// Memory a burst of requests grew the heap by goes back to the system once the server is
	// quiet, instead of staying resident until the next burst.
	idle := idlemem.New()
	go idle.Run(base, time.Second)
	srv := &http.Server{
		// The probes (/health, /ready) sit in front of the API, outside /v1.
		Handler:           idle.Wrap(server.Identify(server.Assets(health.Handler(handler, e.log, coord.checks...)), cfg.DeployEnv)),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	logAppsServed(ctx, e.log, appRegistry)
	e.log.Info("listening", "addr", addr, "url", "http://"+addr+server.BasePath,
		"database", e.store.Dialect(), "files", fileStore.kind, "data_dir", cfg.DataDir, "config", configName(cfg.ConfigPath),
		"version", version.String())
	e.log.Debug("replica", "response_validation", string(mode), "shared_coordination", coord.shared,
		// The name this replica's jobs are leased under (the jobs table's lease_owner).
		"jobs_owner", indexQueue.Owner())

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	e.log.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	bg := context.WithoutCancel(ctx)
	// Stop accepting and let open requests, streams included, finish within the grace period.
	graceCtx, cancel := context.WithTimeout(bg, cfg.ShutdownGrace)
	defer cancel()
	err = srv.Shutdown(graceCtx)
	// Then end the runs still going: each persists what it has and its stream gets an error
	// event; wait briefly for those last frames to go out before closing connections.
	endCtx, cancelEnd := context.WithTimeout(bg, 5*time.Second)
	defer cancelEnd()
	if serr := engine.Shutdown(endCtx); serr != nil {
		e.log.Warn("runs did not end in time", "error", serr)
	}
	// Background jobs stop where they are and go back to the queue, for this replica's next
	// start or another replica.
	stopJobs()
	jobsEnd, cancelJobs := context.WithTimeout(bg, 2*time.Second)
	defer cancelJobs()
	if jerr := indexQueue.Stop(jobsEnd); jerr != nil {
		e.log.Info("background jobs interrupted; they run again from the queue", "detail", jerr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		e.log.Warn("grace period over; ended the remaining runs")
		if err = srv.Shutdown(endCtx); err != nil {
			err = srv.Close()
		}
	}
	cancelBase()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	e.log.Info("stopped")
	return err
}

// jobCounts is the job queue's depth for its metrics.
func jobCounts(ctx context.Context, st *store.Store) ([]metrics.QueueCount, error) {
	counts, err := st.JobCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.QueueCount, len(counts))
	for i, c := range counts {
		out[i] = metrics.QueueCount{Kind: c.Kind, State: c.State, Jobs: c.Jobs, OldestDue: c.OldestDue}
	}
	return out, nil
}

// bannerApps is how many apps the start-up banner names; `parley apps list` shows them all.
const bannerApps = 20

// logAppsServed tells who just started a server which apps it serves and how to make a key for
// one, the step before any API call.
func logAppsServed(ctx context.Context, log *slog.Logger, r *apps.Registry) {
	list, err := r.List(ctx)
	if err != nil {
		log.Warn("could not list the apps served", "error", err)
		return
	}
	if len(list) == 0 {
		log.Info("no apps yet: declare one in the config file, or import a Dify DSL file (parley apps import FILE --publish)")
		return
	}
	names := make([]string, 0, min(len(list), bannerApps)+1)
	for i, a := range list {
		if i == bannerApps {
			names = append(names, fmt.Sprintf("and %d more (parley apps list)", len(list)-bannerApps))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", a.Name, a.Mode))
	}
	log.Info("serving apps", "apps", strings.Join(names, ", "),
		"key", fmt.Sprintf("parley keys create --app %s", shellQuote(list[0].Name)))
}

// appsUsing counts the apps that use a knowledge base, config and imported ones. When the
// store cannot say, it counts one, so that a knowledge base in use is never deleted by mistake.
func appsUsing(ctx context.Context, r *apps.Registry, name string, log *slog.Logger) int {
	n, err := r.UsingKnowledgeBase(ctx, name)
	if err != nil {
		log.Warn("could not count the apps using a knowledge base", "knowledge_base", name, "error", err)
		return max(n, 1)
	}
	return n
}

// workflowFileUploadLimit is Dify's WORKFLOW_FILE_UPLOAD_LIMIT default, shown in app parameters.
const workflowFileUploadLimit = 10

func configName(path string) string {
	if path == "" {
		return "embedded sample (configs/parley.yaml)"
	}
	return path
}

// webhookFiles keeps the files of webhook requests (multipart file fields, binary bodies) as
// uploads of the app's anonymous end user, the one trigger runs belong to, and gives each as
// Dify's file dict for the run's variables. A file the upload limits refuse refuses the request.
func webhookFiles(engine *run.Engine, fileSvc *files.Service) func(*apps.App) triggers.SaveFile {
	return func(app *apps.App) triggers.SaveFile {
		return func(ctx context.Context, filename, contentType string, body io.Reader) (map[string]any, error) {
			user, err := engine.EndUser(ctx, app.ID, "")
			if err != nil {
				return nil, err
			}
			if filename == "" {
				filename = "webhook-body"
				if exts, _ := mime.ExtensionsByType(contentType); len(exts) > 0 {
					filename += exts[0]
				} else {
					filename += ".bin"
				}
			}
			up, err := fileSvc.Upload(ctx, files.Upload{AppID: app.ID, EndUserID: user.ID, Filename: filename,
				ContentType: contentType, Body: body})
			var tooLarge *files.TooLargeError
			var badExt *files.ExtensionNotAllowedError
			switch {
			case errors.As(err, &tooLarge):
				return nil, &triggers.RequestError{Status: http.StatusRequestEntityTooLarge,
					Message: fmt.Sprintf("File %q exceeds the %s upload limit of %d MB", filename, tooLarge.Category, tooLarge.Limit>>20)}
			case errors.As(err, &badExt):
				return nil, &triggers.RequestError{Status: http.StatusBadRequest,
					Message: fmt.Sprintf("File %q: files with the extension .%s are not allowed", filename, badExt.Extension)}
			case err != nil:
				return nil, err
			}
			f := &value.File{ID: up.ID, RelatedID: up.ID, Type: files.FileType(up.MimeType), TransferMethod: value.TransferLocalFile,
				Filename: up.Name, MimeType: up.MimeType, Size: up.Size}
			if up.Extension != "" {
				f.Extension = "." + up.Extension
			}
			raw, err := json.Marshal(f)
			if err != nil {
				return nil, err
			}
			var dict map[string]any
			return dict, json.Unmarshal(raw, &dict)
		}
	}
}
