// Package config turns the process environment and the YAML configuration
// file into typed values.
//
// There are two layers:
//
//   - [Config]: process settings from environment variables (listen address,
//     data directory, database URL, upload limits, logging, …). [Load] reads
//     them through an injected getenv function; every variable, its default
//     and its parser live in one table (options.go). The CLI may override
//     fields afterwards and then call [Config.Validate] again.
//   - [File]: the declarative workspace (model providers, apps, knowledge
//     bases) read from the YAML file named by PARLEY_CONFIG, or from the
//     sample embedded in the binary when that variable is empty. [LoadFile]
//     and [ParseFile] can be re-run at any time; they never touch global
//     state.
//
// Secrets never live in either struct: the file names the environment
// variable that holds a provider key ([Provider.APIKeyEnv]) and the key is
// read on demand with [Provider.APIKey], so printing a Config or a File
// cannot leak it.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config holds the process settings read from the environment. Fields are
// exported so that the CLI can override Addr, DataDir, ConfigPath and
// DatabaseURL from flags after [Load]; call [Config.Validate] after doing so.
type Config struct {
	// DebugAddr is where the admin listener (profiles and metrics) listens (PARLEY_DEBUG_ADDR);
	// empty: off.
	DebugAddr string
	// OTelCaptureContent puts prompts, answers, tool arguments and results and retrieval
	// queries on spans (PARLEY_OTEL_CAPTURE_CONTENT); off, spans carry no content.
	OTelCaptureContent bool
	// Addr is the TCP listen address (PARLEY_ADDR).
	Addr string
	// DataDir holds the SQLite database and uploaded files (PARLEY_DATA_DIR).
	DataDir string
	// ConfigPath is the YAML config file (PARLEY_CONFIG); empty means the
	// sample embedded from configs/parley.yaml.
	ConfigPath string
	// DatabaseURL selects the database (PARLEY_DATABASE_URL); empty means
	// SQLite inside DataDir, postgres:// or postgresql:// means PostgreSQL.
	DatabaseURL string
	// RedisURL names the Redis server that replicas share (PARLEY_REDIS_URL, redis:// or
	// rediss://); empty means one process with in-process coordination. It needs PostgreSQL.
	RedisURL string
	// RedisKeyPrefix starts every Redis key and channel Parley uses (PARLEY_REDIS_KEY_PREFIX),
	// so that several deployments can share one Redis.
	RedisKeyPrefix string
	// SlotLease is how long a concurrency slot held in Redis outlives the replica holding it
	// if that replica dies (PARLEY_SLOT_LEASE); a live run renews its slot every third of it.
	SlotLease time.Duration

	// Upload holds the file upload limits (UPLOAD_* variables, as in Dify).
	Upload UploadLimits

	// AppMaxActiveRequests is the global ceiling on concurrent requests per
	// app (APP_MAX_ACTIVE_REQUESTS); 0 means unlimited.
	AppMaxActiveRequests int
	// AppDefaultActiveRequests is the per-app limit used when an app sets
	// none (APP_DEFAULT_ACTIVE_REQUESTS); 0 means unlimited.
	AppDefaultActiveRequests int

	// ResponseValidation controls validation of responses against the
	// OpenAPI contract (PARLEY_RESPONSE_VALIDATION).
	ResponseValidation ValidationMode
	// LogLevel is the minimum slog level (PARLEY_LOG_LEVEL).
	LogLevel slog.Level
	// DeployEnv names the deployment (DEPLOY_ENV) in every response's X-Env header.
	DeployEnv string
	// LogFormat selects the slog handler (PARLEY_LOG_FORMAT).
	LogFormat LogFormat
	// ShutdownGrace bounds graceful shutdown (PARLEY_SHUTDOWN_GRACE).
	ShutdownGrace time.Duration
	// ModelCallTimeout caps the whole of one model call, a stream included, from the request
	// to the end of the response (PARLEY_MODEL_CALL_TIMEOUT); a provider's call_timeout
	// overrides it.
	ModelCallTimeout time.Duration
	// RunStaleAfter is how long a message may stay running without its process writing it
	// (its heartbeat) before it is taken as interrupted by a dead process (PARLEY_RUN_STALE_AFTER).
	RunStaleAfter time.Duration
	// ModerationBufferSize is how many characters an answer grows by between two output
	// moderation checks while it streams (MODERATION_BUFFER_SIZE, as in Dify).
	ModerationBufferSize int
	// MaxBodyBytes caps JSON request bodies (PARLEY_MAX_BODY_BYTES).
	MaxBodyBytes int64
	// BodyTimeout is how long a request body may take to arrive (PARLEY_BODY_TIMEOUT), extended
	// by a second for every BodyMinRate bytes received (PARLEY_BODY_MIN_RATE, bytes per second).
	BodyTimeout time.Duration
	BodyMinRate int64
	// StreamWriteTimeout bounds each write of an event stream to a client that stopped
	// reading (PARLEY_STREAM_WRITE_TIMEOUT); the run goes on without the stream.
	StreamWriteTimeout time.Duration
	// IndexingMaxSegmentationTokensLength is the largest custom chunk length, in characters
	// (INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH, Dify's name).
	IndexingMaxSegmentationTokensLength int
	// IndexingWorkers is how many documents are indexed at once (PARLEY_INDEXING_WORKERS).
	IndexingWorkers int
	// IndexingTimeout bounds the indexing of one document, from extraction to the last chunk
	// written (PARLEY_INDEXING_TIMEOUT); past it the document ends in error.
	IndexingTimeout time.Duration
	// JobLease is how long a replica holds a background job (indexing, annotation reply,
	// conversation naming, a human-input deadline) without renewing it (PARLEY_JOB_LEASE): the
	// jobs of a replica that dies are taken over by the others once it has passed.
	JobLease time.Duration
	// JobPoll bounds how long an idle replica waits before looking for jobs queued by others
	// or come due (PARLEY_JOB_POLL); a job queued on a replica starts there at once.
	JobPoll time.Duration
	// ExtractCPULimit is the CPU time a document's text extraction may use, rounded up to whole
	// seconds (PARLEY_EXTRACT_CPU_LIMIT).
	ExtractCPULimit time.Duration
	// ExtractMemoryLimitMB is the memory a document's text extraction may use, in megabytes
	// (PARLEY_EXTRACT_MEMORY_LIMIT_MB).
	ExtractMemoryLimitMB int
	// SQLiteSynchronous is SQLite's synchronous mode, normal or full
	// (PARLEY_SQLITE_SYNCHRONOUS): full survives power loss at the cost of an fsync per commit.
	SQLiteSynchronous string
	// RemoteFilesAllowPrivate lets remote_url files be fetched from loopback and private
	// networks (PARLEY_REMOTE_FILES_ALLOW_PRIVATE); off by default, against SSRF.
	RemoteFilesAllowPrivate bool
	// FilesURL is the public base URL (scheme, host, any path prefix) that links to tool files
	// start with (PARLEY_FILES_URL, as Dify's FILES_URL); empty makes them paths from the
	// server's root.
	FilesURL string
	// FilesAccessTimeout is how long a signed link to a tool file stays valid
	// (PARLEY_FILES_ACCESS_TIMEOUT, as Dify's FILES_ACCESS_TIMEOUT).
	FilesAccessTimeout time.Duration
	// FilesDir is a directory every replica shares (a network file system) to keep uploaded
	// files in (PARLEY_FILES_DIR). Empty: on PostgreSQL files are kept in the database, on
	// SQLite in DataDir/files.
	FilesDir string
	// ToolsAllowedNetworks are the internal addresses the tools of agents (custom API tools, MCP
	// servers) may reach despite the network guard (PARLEY_TOOLS_ALLOWED_NETWORKS, comma-separated
	// CIDR prefixes or addresses); empty by default, so a registered tool cannot reach loopback or
	// private networks.
	ToolsAllowedNetworks []netip.Prefix
	// ExternalKnowledgeTimeout bounds one call to the external knowledge API of an external
	// knowledge base, its reply read in full (PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT).
	ExternalKnowledgeTimeout time.Duration
	// ExternalKnowledgeAllowedNetworks are the internal addresses external knowledge APIs may be
	// reached at despite the network guard (PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS,
	// comma-separated CIDR prefixes or addresses); empty by default.
	ExternalKnowledgeAllowedNetworks []netip.Prefix
	// Code holds the sandbox of workflow code nodes and Dify's checks on their outputs.
	Code CodeSettings
	// WorkflowVersionExecution says whether a Chatflow message may pin a published version with
	// workflow_id (PARLEY_WORKFLOW_VERSION_EXECUTION): allowed (the default; empty means it too),
	// or not_allowed,
	// which answers such a message 403 workflow_version_execution_not_allowed, as Dify's hosted
	// free (Sandbox) plan does.
	WorkflowVersionExecution string
	// HumanInputGlobalTimeoutSeconds is how long a run waits for a human-input form at most,
	// from the form's creation, before it is stopped (Dify's HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS,
	// 7 days).
	HumanInputGlobalTimeoutSeconds int
	// WorkflowNodeTimeout bounds one attempt of one workflow node (PARLEY_WORKFLOW_NODE_TIMEOUT);
	// an iteration's or a loop's body nodes are bounded each, not the container.
	WorkflowNodeTimeout time.Duration
	// TriggerURL is the public base URL (scheme, host, any path prefix) of webhook URLs
	// (PARLEY_TRIGGER_URL, as Dify's TRIGGER_URL); empty: http:// and the listen address.
	TriggerURL string
	// WebhookMaxBodyBytes bounds a webhook request's body (WEBHOOK_REQUEST_BODY_MAX_SIZE, Dify's
	// name and default, 10 MiB).
	WebhookMaxBodyBytes int64
	// WebhookRequestsPerMinute is how many requests one webhook takes per minute, across
	// replicas (PARLEY_WEBHOOK_REQUESTS_PER_MINUTE); 0: no limit.
	WebhookRequestsPerMinute int64
	// SchedulePoll is how often each replica looks for schedules whose tick has come
	// (PARLEY_SCHEDULE_POLL); a tick is claimed once across replicas whatever it is.
	SchedulePoll time.Duration
}

// Values of WorkflowVersionExecution.
const (
	WorkflowVersionExecutionAllowed    = "allowed"
	WorkflowVersionExecutionNotAllowed = "not_allowed"
)

// CodeSettings configure the sandbox that runs code nodes (PARLEY_CODE_*) and the limits Dify
// puts on their outputs (Dify's CODE_* names).
type CodeSettings struct {
	// Network lets code reach the network (PARLEY_CODE_NETWORK); off by default, and code that
	// fails on a network call then names the setting.
	Network bool
	// Timeout is the wall-clock limit of one run (PARLEY_CODE_TIMEOUT).
	Timeout time.Duration
	// CPULimit is the CPU time of one run, whole seconds (PARLEY_CODE_CPU_LIMIT).
	CPULimit time.Duration
	// MemoryLimitMB is the memory of one run, in megabytes (PARLEY_CODE_MEMORY_LIMIT_MB).
	MemoryLimitMB int
	// Python is the python3 interpreter (PARLEY_CODE_PYTHON): the system's, or the python of
	// a virtual environment, which the sandbox then mounts.
	Python string
	// MaxStringLength (CODE_MAX_STRING_LENGTH), MaxNumber and MinNumber (CODE_MAX_NUMBER,
	// CODE_MIN_NUMBER), MaxPrecision (CODE_MAX_PRECISION), MaxDepth (CODE_MAX_DEPTH) and the
	// array lengths (CODE_MAX_STRING_ARRAY_LENGTH, CODE_MAX_OBJECT_ARRAY_LENGTH,
	// CODE_MAX_NUMBER_ARRAY_LENGTH) bound what a code node may output.
	MaxStringLength                                                  int
	MaxNumber, MinNumber                                             int64
	MaxPrecision, MaxDepth                                           int
	MaxStringArrayLength, MaxObjectArrayLength, MaxNumberArrayLength int
}

// MinCodeMemoryLimitMB is the smallest memory limit of a code run: the Python interpreter
// alone needs about 20 MB of address space, the JavaScript worker more.
const MinCodeMemoryLimitMB = 64

// UploadLimits are the file upload limits. Sizes are in megabytes, as in
// Dify's environment variables of the same names.
type UploadLimits struct {
	// FileSizeLimitMB applies to documents and any other file
	// (UPLOAD_FILE_SIZE_LIMIT).
	FileSizeLimitMB int
	// ImageFileSizeLimitMB applies to images (UPLOAD_IMAGE_FILE_SIZE_LIMIT).
	ImageFileSizeLimitMB int
	// AudioFileSizeLimitMB applies to audio (UPLOAD_AUDIO_FILE_SIZE_LIMIT).
	AudioFileSizeLimitMB int
	// VideoFileSizeLimitMB applies to video (UPLOAD_VIDEO_FILE_SIZE_LIMIT).
	VideoFileSizeLimitMB int
	// ExtensionBlacklist lists rejected extensions, lower case and without
	// the leading dot (UPLOAD_FILE_EXTENSION_BLACKLIST).
	ExtensionBlacklist []string
}

// ValidationMode says what happens when a response does not match the
// OpenAPI contract.
type ValidationMode string

// Response validation modes.
const (
	// ValidationEnforce replaces an invalid response with a 500.
	ValidationEnforce ValidationMode = "enforce"
	// ValidationLog logs the mismatch and sends the response unchanged.
	ValidationLog ValidationMode = "log"
	// ValidationOff skips response validation.
	ValidationOff ValidationMode = "off"
)

// LogFormat selects the slog handler.
type LogFormat string

// Log formats.
const (
	// LogFormatText selects slog.TextHandler.
	LogFormatText LogFormat = "text"
	// LogFormatJSON selects slog.JSONHandler.
	LogFormatJSON LogFormat = "json"
)

// DatabaseDriver names the database implementation chosen by DatabaseURL.
type DatabaseDriver string

// Database drivers.
const (
	// DriverSQLite is the embedded default: a file inside DataDir.
	DriverSQLite DatabaseDriver = "sqlite"
	// DriverPostgres is selected by a postgres:// or postgresql:// URL.
	DriverPostgres DatabaseDriver = "postgres"
)

// MinSlotLease is the smallest PARLEY_SLOT_LEASE: a slot is renewed every third of its lease,
// and a renewal must fit well within that.
const MinSlotLease = time.Second

// MinRunStaleAfter is the smallest PARLEY_RUN_STALE_AFTER.
const MinRunStaleAfter = 2 * time.Second

// MinExtractMemoryLimitMB is the smallest extraction memory limit: below it the extraction
// process cannot even start its runtime and read a small file.
const MinExtractMemoryLimitMB = 64

// Load reads every setting through getenv (os.Getenv in production, a map
// lookup in tests), applies defaults for unset or empty variables and
// validates the result. The error names each offending variable; all
// problems are reported at once. Load does not read the YAML file: call
// [LoadFile] with the (possibly overridden) ConfigPath for that.
func Load(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := &Config{}
	var errs []error
	for _, o := range options() {
		v := strings.TrimSpace(getenv(o.name))
		if v == "" {
			v = o.def
		}
		if err := o.parse(c, v); err != nil {
			if o.secret {
				errs = append(errs, fmt.Errorf("%s: %w", o.name, err))
			} else {
				errs = append(errs, fmt.Errorf("%s=%q: %w", o.name, v, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks ranges, enumerations and cross-field rules. [Load] calls
// it; call it again after overriding fields. Errors name the environment
// variable that feeds the offending field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	if err := checkAddr(c.Addr); err != nil {
		bad("PARLEY_ADDR", "%v", err)
	}
	// Port 0 asks for any free port, which is never the API's (tests give both one).
	if c.DebugAddr != "" && c.DebugAddr == c.Addr && !strings.HasSuffix(c.Addr, ":0") {
		bad("PARLEY_DEBUG_ADDR", "must differ from PARLEY_ADDR (%s): profiles are never served on the API's listener", c.Addr)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("PARLEY_DATA_DIR", "must not be empty")
	}
	driver, err := ParseDatabaseURL(c.DatabaseURL)
	if err != nil {
		bad("PARLEY_DATABASE_URL", "%v", err)
	}
	if err := checkRedisURL(c.RedisURL); err != nil {
		bad("PARLEY_REDIS_URL", "%v", err)
	} else if c.RedisURL != "" && driver == DriverSQLite {
		// SQLite is one process's database: replicas cannot share it, so Redis would only add a
		// way to fail.
		bad("PARLEY_REDIS_URL", "Redis coordinates replicas that share a PostgreSQL database; with SQLite "+
			"(no PARLEY_DATABASE_URL) Parley runs as one process: set PARLEY_DATABASE_URL=postgres://… or unset PARLEY_REDIS_URL")
	}
	if c.RedisURL != "" && strings.TrimSpace(c.RedisKeyPrefix) == "" {
		bad("PARLEY_REDIS_KEY_PREFIX", "must not be empty")
	}
	if c.SlotLease < MinSlotLease {
		bad("PARLEY_SLOT_LEASE", "must be at least %v, got %v", MinSlotLease, c.SlotLease)
	}
	for _, l := range []struct {
		name string
		v    int
	}{
		{"UPLOAD_FILE_SIZE_LIMIT", c.Upload.FileSizeLimitMB},
		{"UPLOAD_IMAGE_FILE_SIZE_LIMIT", c.Upload.ImageFileSizeLimitMB},
		{"UPLOAD_AUDIO_FILE_SIZE_LIMIT", c.Upload.AudioFileSizeLimitMB},
		{"UPLOAD_VIDEO_FILE_SIZE_LIMIT", c.Upload.VideoFileSizeLimitMB},
	} {
		if l.v <= 0 {
			bad(l.name, "must be a positive number of megabytes, got %d", l.v)
		}
	}
	if c.AppMaxActiveRequests < 0 {
		bad("APP_MAX_ACTIVE_REQUESTS", "must be >= 0, got %d", c.AppMaxActiveRequests)
	}
	if c.AppDefaultActiveRequests < 0 {
		bad("APP_DEFAULT_ACTIVE_REQUESTS", "must be >= 0, got %d", c.AppDefaultActiveRequests)
	}
	switch c.WorkflowVersionExecution {
	case "", WorkflowVersionExecutionAllowed, WorkflowVersionExecutionNotAllowed:
	default:
		bad("PARLEY_WORKFLOW_VERSION_EXECUTION", "must be allowed or not_allowed, got %q", c.WorkflowVersionExecution)
	}
	switch c.ResponseValidation {
	case ValidationEnforce, ValidationLog, ValidationOff:
	default:
		bad("PARLEY_RESPONSE_VALIDATION", "must be enforce, log or off, got %q", c.ResponseValidation)
	}
	switch c.LogLevel {
	case slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError:
	default:
		bad("PARLEY_LOG_LEVEL", "must be debug, info, warn or error, got %v", c.LogLevel)
	}
	switch c.LogFormat {
	case LogFormatText, LogFormatJSON:
	default:
		bad("PARLEY_LOG_FORMAT", "must be json or text, got %q", c.LogFormat)
	}
	if c.ShutdownGrace < 0 {
		bad("PARLEY_SHUTDOWN_GRACE", "must not be negative, got %v", c.ShutdownGrace)
	}
	if err := checkFilesURL(c.FilesURL); err != nil {
		bad("PARLEY_FILES_URL", "%v", err)
	}
	if c.FilesAccessTimeout <= 0 {
		bad("PARLEY_FILES_ACCESS_TIMEOUT", "must be positive, got %v", c.FilesAccessTimeout)
	}
	if c.ModelCallTimeout <= 0 {
		bad("PARLEY_MODEL_CALL_TIMEOUT", "must be positive, got %v", c.ModelCallTimeout)
	}
	// The heartbeat is stored in whole seconds and refreshed several times per period: under
	// two seconds a live run could look stale.
	if c.HumanInputGlobalTimeoutSeconds <= 0 {
		bad("HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS", "must be a positive number of seconds, got %d", c.HumanInputGlobalTimeoutSeconds)
	}
	if c.RunStaleAfter < MinRunStaleAfter {
		bad("PARLEY_RUN_STALE_AFTER", "must be at least %v, got %v", MinRunStaleAfter, c.RunStaleAfter)
	}
	if c.IndexingMaxSegmentationTokensLength < 50 {
		bad("INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH", "must be at least 50, got %d", c.IndexingMaxSegmentationTokensLength)
	}
	if c.ModerationBufferSize <= 0 {
		bad("MODERATION_BUFFER_SIZE", "must be positive, got %d", c.ModerationBufferSize)
	}
	if c.IndexingWorkers <= 0 {
		bad("PARLEY_INDEXING_WORKERS", "must be positive, got %d", c.IndexingWorkers)
	}
	if c.WorkflowNodeTimeout <= 0 {
		bad("PARLEY_WORKFLOW_NODE_TIMEOUT", "must be positive, got %v", c.WorkflowNodeTimeout)
	}
	if c.ExternalKnowledgeTimeout <= 0 {
		bad("PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT", "must be positive, got %v", c.ExternalKnowledgeTimeout)
	}
	if err := checkFilesURL(c.TriggerURL); err != nil {
		bad("PARLEY_TRIGGER_URL", "%v", err)
	}
	if c.WebhookMaxBodyBytes <= 0 {
		bad("WEBHOOK_REQUEST_BODY_MAX_SIZE", "must be a positive number of bytes, got %d", c.WebhookMaxBodyBytes)
	}
	if c.WebhookRequestsPerMinute < 0 {
		bad("PARLEY_WEBHOOK_REQUESTS_PER_MINUTE", "must not be negative, got %d", c.WebhookRequestsPerMinute)
	}
	if c.SchedulePoll < 10*time.Millisecond || c.SchedulePoll > time.Minute {
		bad("PARLEY_SCHEDULE_POLL", "must be from 10ms to 1m, got %v", c.SchedulePoll)
	}
	if c.JobLease < time.Second {
		bad("PARLEY_JOB_LEASE", "must be at least 1s, got %v", c.JobLease)
	}
	if c.JobPoll <= 0 {
		bad("PARLEY_JOB_POLL", "must be positive, got %v", c.JobPoll)
	}
	if c.IndexingTimeout <= 0 {
		bad("PARLEY_INDEXING_TIMEOUT", "must be positive, got %v", c.IndexingTimeout)
	}
	if c.ExtractCPULimit < time.Second {
		bad("PARLEY_EXTRACT_CPU_LIMIT", "must be at least 1s, got %v", c.ExtractCPULimit)
	}
	if c.ExtractMemoryLimitMB < MinExtractMemoryLimitMB {
		bad("PARLEY_EXTRACT_MEMORY_LIMIT_MB", "must be at least %d, got %d", MinExtractMemoryLimitMB, c.ExtractMemoryLimitMB)
	}
	if c.Code.Timeout <= 0 {
		bad("PARLEY_CODE_TIMEOUT", "must be positive, got %v", c.Code.Timeout)
	}
	if c.Code.CPULimit < time.Second {
		bad("PARLEY_CODE_CPU_LIMIT", "must be at least 1s, got %v", c.Code.CPULimit)
	}
	if c.Code.MemoryLimitMB < MinCodeMemoryLimitMB {
		bad("PARLEY_CODE_MEMORY_LIMIT_MB", "must be at least %d, got %d", MinCodeMemoryLimitMB, c.Code.MemoryLimitMB)
	}
	if c.Code.MaxNumber < c.Code.MinNumber {
		bad("CODE_MAX_NUMBER", "must not be below CODE_MIN_NUMBER, got %d < %d", c.Code.MaxNumber, c.Code.MinNumber)
	}
	for name, v := range map[string]int{"CODE_MAX_STRING_LENGTH": c.Code.MaxStringLength, "CODE_MAX_PRECISION": c.Code.MaxPrecision,
		"CODE_MAX_DEPTH": c.Code.MaxDepth, "CODE_MAX_STRING_ARRAY_LENGTH": c.Code.MaxStringArrayLength,
		"CODE_MAX_OBJECT_ARRAY_LENGTH": c.Code.MaxObjectArrayLength, "CODE_MAX_NUMBER_ARRAY_LENGTH": c.Code.MaxNumberArrayLength} {
		if v < 0 {
			bad(name, "must not be negative, got %d", v)
		}
	}
	if c.MaxBodyBytes <= 0 {
		bad("PARLEY_MAX_BODY_BYTES", "must be a positive number of bytes, got %d", c.MaxBodyBytes)
	}
	if c.BodyTimeout <= 0 {
		bad("PARLEY_BODY_TIMEOUT", "must be positive, got %v", c.BodyTimeout)
	}
	if c.StreamWriteTimeout <= 0 {
		bad("PARLEY_STREAM_WRITE_TIMEOUT", "must be positive, got %v", c.StreamWriteTimeout)
	}
	if c.BodyMinRate < 0 {
		bad("PARLEY_BODY_MIN_RATE", "must not be negative, got %d", c.BodyMinRate)
	}
	return errors.Join(errs...)
}

// MaxActiveRequests returns the effective concurrency limit for an app
// whose own limit is appLimit (0 = not set). As in Dify, an unset app limit
// falls back to AppDefaultActiveRequests, and the result is the smaller of
// that and AppMaxActiveRequests, ignoring zeros; 0 means unlimited.
func (c *Config) MaxActiveRequests(appLimit int) int {
	if appLimit <= 0 {
		appLimit = c.AppDefaultActiveRequests
	}
	ceiling := c.AppMaxActiveRequests
	switch {
	case appLimit <= 0 && ceiling <= 0:
		return 0
	case appLimit <= 0:
		return ceiling
	case ceiling <= 0:
		return appLimit
	default:
		return min(appLimit, ceiling)
	}
}

// ParseDatabaseURL classifies a PARLEY_DATABASE_URL value: empty selects
// SQLite, a postgres:// or postgresql:// URL selects PostgreSQL, anything
// else is an error. The error never repeats the URL, which may hold a
// password.
func ParseDatabaseURL(raw string) (DatabaseDriver, error) {
	if raw == "" {
		return DriverSQLite, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not a valid URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql":
		return DriverPostgres, nil
	case "":
		return "", errors.New("missing scheme: want postgres:// or postgresql:// (leave empty for SQLite)")
	default:
		return "", fmt.Errorf("unsupported scheme %q: want postgres:// or postgresql:// (leave empty for SQLite)", u.Scheme)
	}
}

// checkRedisURL accepts an empty value or a redis:// or rediss:// URL. The error never repeats
// the URL, which may hold a password.
func checkRedisURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "redis", "rediss":
		if u.Host == "" {
			return errors.New("missing host: want redis://host:port[/db]")
		}
		return nil
	case "":
		return errors.New("missing scheme: want redis:// or rediss:// (leave empty for one process)")
	default:
		return fmt.Errorf("unsupported scheme %q: want redis:// or rediss:// (leave empty for one process)", u.Scheme)
	}
}

func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q: %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("invalid port %q in listen address", port)
	}
	return nil
}

// checkFilesURL accepts an empty value or an absolute http(s) URL with no query or fragment.
func checkFilesURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("must be an http or https URL such as https://parley.example.com, got %q", v)
	}
	return nil
}

// TriggerBaseURL is the base of webhook URLs: TriggerURL, or http:// and the listen address
// (a loopback address in place of one that listens on every interface).
func (c *Config) TriggerBaseURL() string {
	if c.TriggerURL != "" {
		return strings.TrimRight(c.TriggerURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "http://" + c.Addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
