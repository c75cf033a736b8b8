package config

import (
	"log/slog"
	"net/netip"
	"time"
)

// option is one environment variable: its public name (a contract, never
// rename), its default as the text a user would write, and the parser that
// stores the value in a Config. Secret options never echo their value in
// errors.
type option struct {
	name   string
	def    string
	secret bool
	parse  func(c *Config, v string) error
}

// options is the single table of environment settings. Keep it the only
// place where names and defaults appear; the tests check every default.
func options() []option {
	return []option{
		{name: "PARLEY_ADDR", def: "127.0.0.1:5001",
			parse: set(parseString, func(c *Config) *string { return &c.Addr })},
		// The admin listener (profiles); off unless set, loopback unless a host is given.
		{name: "PARLEY_DEBUG_ADDR", def: "",
			parse: set(parseDebugAddr, func(c *Config) *string { return &c.DebugAddr })},
		// Prompts, answers, tool arguments and results, and retrieval queries on spans; traces
		// themselves are set by the OpenTelemetry variables (OTEL_EXPORTER_OTLP_ENDPOINT, …).
		{name: "PARLEY_OTEL_CAPTURE_CONTENT", def: "false",
			parse: set(parseBool, func(c *Config) *bool { return &c.OTelCaptureContent })},
		{name: "PARLEY_DATA_DIR", def: "./data",
			parse: set(parseString, func(c *Config) *string { return &c.DataDir })},
		{name: "PARLEY_CONFIG", def: "",
			parse: set(parseString, func(c *Config) *string { return &c.ConfigPath })},
		{name: "PARLEY_DATABASE_URL", def: "", secret: true,
			parse: set(parseString, func(c *Config) *string { return &c.DatabaseURL })},
		{name: "PARLEY_REDIS_URL", def: "", secret: true,
			parse: set(parseString, func(c *Config) *string { return &c.RedisURL })},
		{name: "PARLEY_REDIS_KEY_PREFIX", def: "parley:",
			parse: set(parseString, func(c *Config) *string { return &c.RedisKeyPrefix })},
		{name: "PARLEY_SLOT_LEASE", def: "30s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.SlotLease })},

		// Dify's upload limits, in megabytes (docs/dify-compat.md, "File uploads").
		{name: "UPLOAD_FILE_SIZE_LIMIT", def: "15",
			parse: set(parseInt, func(c *Config) *int { return &c.Upload.FileSizeLimitMB })},
		{name: "UPLOAD_IMAGE_FILE_SIZE_LIMIT", def: "10",
			parse: set(parseInt, func(c *Config) *int { return &c.Upload.ImageFileSizeLimitMB })},
		{name: "UPLOAD_AUDIO_FILE_SIZE_LIMIT", def: "50",
			parse: set(parseInt, func(c *Config) *int { return &c.Upload.AudioFileSizeLimitMB })},
		{name: "UPLOAD_VIDEO_FILE_SIZE_LIMIT", def: "100",
			parse: set(parseInt, func(c *Config) *int { return &c.Upload.VideoFileSizeLimitMB })},
		{name: "UPLOAD_FILE_EXTENSION_BLACKLIST", def: "",
			parse: set(parseExtensionList, func(c *Config) *[]string { return &c.Upload.ExtensionBlacklist })},
		{name: "APP_MAX_ACTIVE_REQUESTS", def: "0",
			parse: set(parseInt, func(c *Config) *int { return &c.AppMaxActiveRequests })},
		{name: "APP_DEFAULT_ACTIVE_REQUESTS", def: "0",
			parse: set(parseInt, func(c *Config) *int { return &c.AppDefaultActiveRequests })},

		{name: "INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH", def: "4000",
			parse: set(parseInt, func(c *Config) *int { return &c.IndexingMaxSegmentationTokensLength })},
		{name: "PARLEY_INDEXING_WORKERS", def: "2",
			parse: set(parseInt, func(c *Config) *int { return &c.IndexingWorkers })},
		{name: "PARLEY_INDEXING_TIMEOUT", def: "10m",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.IndexingTimeout })},
		{name: "PARLEY_JOB_LEASE", def: "30s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.JobLease })},
		{name: "PARLEY_JOB_POLL", def: "1s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.JobPoll })},
		{name: "PARLEY_EXTRACT_CPU_LIMIT", def: "2m",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.ExtractCPULimit })},
		{name: "PARLEY_EXTRACT_MEMORY_LIMIT_MB", def: "1024",
			parse: set(parseInt, func(c *Config) *int { return &c.ExtractMemoryLimitMB })},

		{name: "PARLEY_RESPONSE_VALIDATION", def: "log",
			parse: set(parseValidationMode, func(c *Config) *ValidationMode { return &c.ResponseValidation })},
		// Sent in every response's X-Env header, as Dify sends its DEPLOY_ENV.
		{name: "DEPLOY_ENV", def: "PRODUCTION",
			parse: set(parseString, func(c *Config) *string { return &c.DeployEnv })},
		{name: "PARLEY_LOG_LEVEL", def: "info",
			parse: set(parseLogLevel, func(c *Config) *slog.Level { return &c.LogLevel })},
		{name: "PARLEY_LOG_FORMAT", def: "text",
			parse: set(parseLogFormat, func(c *Config) *LogFormat { return &c.LogFormat })},
		{name: "PARLEY_SHUTDOWN_GRACE", def: "10s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.ShutdownGrace })},
		{name: "PARLEY_MAX_BODY_BYTES", def: "1048576",
			parse: set(parseInt64, func(c *Config) *int64 { return &c.MaxBodyBytes })},
		// A request body must arrive within PARLEY_BODY_TIMEOUT, extended by a second for every
		// PARLEY_BODY_MIN_RATE bytes received (Apache mod_reqtimeout's body=20,MinRate=500).
		{name: "PARLEY_BODY_TIMEOUT", def: "20s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.BodyTimeout })},
		{name: "PARLEY_BODY_MIN_RATE", def: "500",
			parse: set(parseInt64, func(c *Config) *int64 { return &c.BodyMinRate })},
		{name: "PARLEY_STREAM_WRITE_TIMEOUT", def: "60s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.StreamWriteTimeout })},
		{name: "PARLEY_MODEL_CALL_TIMEOUT", def: "10m",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.ModelCallTimeout })},
		{name: "PARLEY_RUN_STALE_AFTER", def: "60s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.RunStaleAfter })},
		{name: "MODERATION_BUFFER_SIZE", def: "300",
			parse: set(parseInt, func(c *Config) *int { return &c.ModerationBufferSize })},
		{name: "PARLEY_SQLITE_SYNCHRONOUS", def: "normal",
			parse: set(parseSynchronous, func(c *Config) *string { return &c.SQLiteSynchronous })},
		{name: "PARLEY_REMOTE_FILES_ALLOW_PRIVATE", def: "false",
			parse: set(parseBool, func(c *Config) *bool { return &c.RemoteFilesAllowPrivate })},
		// Links to the files tools return (Dify's FILES_URL and FILES_ACCESS_TIMEOUT).
		{name: "PARLEY_FILES_URL", def: "",
			parse: set(parseString, func(c *Config) *string { return &c.FilesURL })},
		{name: "PARLEY_FILES_ACCESS_TIMEOUT", def: "300s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.FilesAccessTimeout })},
		{name: "PARLEY_FILES_DIR", def: "",
			parse: set(parseString, func(c *Config) *string { return &c.FilesDir })},
		{name: "PARLEY_WORKFLOW_VERSION_EXECUTION", def: WorkflowVersionExecutionAllowed,
			parse: set(parseVersionExecution, func(c *Config) *string { return &c.WorkflowVersionExecution })},
		{name: "HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS", def: "604800",
			parse: set(parseInt, func(c *Config) *int { return &c.HumanInputGlobalTimeoutSeconds })},
		{name: "PARLEY_WORKFLOW_NODE_TIMEOUT", def: "10m",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.WorkflowNodeTimeout })},
		// Triggers of Workflow apps (docs/triggers.md): the public base of webhook URLs (Dify's
		// TRIGGER_URL), the bound of a webhook request's body (Dify's name and default), the
		// requests a webhook takes per minute, and how often schedules are looked at.
		{name: "PARLEY_TRIGGER_URL", def: "",
			parse: set(parseString, func(c *Config) *string { return &c.TriggerURL })},
		{name: "WEBHOOK_REQUEST_BODY_MAX_SIZE", def: "10485760",
			parse: set(parseInt64, func(c *Config) *int64 { return &c.WebhookMaxBodyBytes })},
		{name: "PARLEY_WEBHOOK_REQUESTS_PER_MINUTE", def: "600",
			parse: set(parseInt64, func(c *Config) *int64 { return &c.WebhookRequestsPerMinute })},
		{name: "PARLEY_SCHEDULE_POLL", def: "1s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.SchedulePoll })},
		{name: "PARLEY_TOOLS_ALLOWED_NETWORKS", def: "",
			parse: set(parsePrefixList, func(c *Config) *[]netip.Prefix { return &c.ToolsAllowedNetworks })},
		// External knowledge APIs (docs/external-knowledge.md).
		{name: "PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT", def: "10s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.ExternalKnowledgeTimeout })},
		{name: "PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS", def: "",
			parse: set(parsePrefixList, func(c *Config) *[]netip.Prefix { return &c.ExternalKnowledgeAllowedNetworks })},

		// The code-node sandbox (docs/sandbox.md) and Dify's limits on code-node outputs.
		{name: "PARLEY_CODE_NETWORK", def: "false",
			parse: set(parseBool, func(c *Config) *bool { return &c.Code.Network })},
		{name: "PARLEY_CODE_TIMEOUT", def: "15s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.Code.Timeout })},
		{name: "PARLEY_CODE_CPU_LIMIT", def: "10s",
			parse: set(parseDuration, func(c *Config) *time.Duration { return &c.Code.CPULimit })},
		{name: "PARLEY_CODE_MEMORY_LIMIT_MB", def: "256",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MemoryLimitMB })},
		{name: "PARLEY_CODE_PYTHON", def: "/usr/bin/python3",
			parse: set(parseString, func(c *Config) *string { return &c.Code.Python })},
		{name: "CODE_MAX_STRING_LENGTH", def: "400000",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MaxStringLength })},
		{name: "CODE_MAX_NUMBER", def: "9223372036854775807",
			parse: set(parseInt64, func(c *Config) *int64 { return &c.Code.MaxNumber })},
		{name: "CODE_MIN_NUMBER", def: "-9223372036854775807",
			parse: set(parseInt64, func(c *Config) *int64 { return &c.Code.MinNumber })},
		{name: "CODE_MAX_PRECISION", def: "20",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MaxPrecision })},
		{name: "CODE_MAX_DEPTH", def: "5",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MaxDepth })},
		{name: "CODE_MAX_STRING_ARRAY_LENGTH", def: "30",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MaxStringArrayLength })},
		{name: "CODE_MAX_OBJECT_ARRAY_LENGTH", def: "30",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MaxObjectArrayLength })},
		{name: "CODE_MAX_NUMBER_ARRAY_LENGTH", def: "1000",
			parse: set(parseInt, func(c *Config) *int { return &c.Code.MaxNumberArrayLength })},
	}
}

// set binds a typed parser to the Config field returned by field.
func set[T any](parse func(string) (T, error), field func(*Config) *T) func(*Config, string) error {
	return func(c *Config, v string) error {
		x, err := parse(v)
		if err != nil {
			return err
		}
		*field(c) = x
		return nil
	}
}
