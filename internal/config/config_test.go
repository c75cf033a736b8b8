package config

import (
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	got, err := Load(envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Addr:           "127.0.0.1:5001",
		DataDir:        "./data",
		RedisKeyPrefix: "parley:",
		SlotLease:      30 * time.Second,
		Upload: UploadLimits{
			FileSizeLimitMB:      15,
			ImageFileSizeLimitMB: 10,
			AudioFileSizeLimitMB: 50,
			VideoFileSizeLimitMB: 100,
		},
		ResponseValidation:                  ValidationLog,
		LogLevel:                            slog.LevelInfo,
		DeployEnv:                           "PRODUCTION",
		LogFormat:                           LogFormatText,
		ShutdownGrace:                       10 * time.Second,
		ModelCallTimeout:                    10 * time.Minute,
		RunStaleAfter:                       time.Minute,
		ModerationBufferSize:                300,
		MaxBodyBytes:                        1 << 20,
		BodyTimeout:                         20 * time.Second,
		BodyMinRate:                         500,
		StreamWriteTimeout:                  60 * time.Second,
		IndexingMaxSegmentationTokensLength: 4000,
		IndexingWorkers:                     2,
		IndexingTimeout:                     10 * time.Minute,
		JobLease:                            30 * time.Second,
		JobPoll:                             time.Second,
		ExtractCPULimit:                     2 * time.Minute,
		ExtractMemoryLimitMB:                1024,
		SQLiteSynchronous:                   "normal",
		WorkflowVersionExecution:            WorkflowVersionExecutionAllowed,
		HumanInputGlobalTimeoutSeconds:      604800,
		WorkflowNodeTimeout:                 10 * time.Minute,
		ExternalKnowledgeTimeout:            10 * time.Second,
		WebhookMaxBodyBytes:                 10 << 20,
		WebhookRequestsPerMinute:            600,
		SchedulePoll:                        time.Second,
		FilesAccessTimeout:                  300 * time.Second,
		Code: CodeSettings{
			Timeout: 15 * time.Second, CPULimit: 10 * time.Second, MemoryLimitMB: 256, Python: "/usr/bin/python3",
			MaxStringLength: 400000, MaxNumber: 1<<63 - 1, MinNumber: -(1<<63 - 1), MaxPrecision: 20, MaxDepth: 5,
			MaxStringArrayLength: 30, MaxObjectArrayLength: 30, MaxNumberArrayLength: 1000,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
}

func TestLoadNilGetenv(t *testing.T) {
	t.Parallel()
	if _, err := Load(nil); err != nil {
		t.Fatal(err)
	}
}

func TestOptionTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, o := range options() {
		if seen[o.name] {
			t.Errorf("duplicate option %s", o.name)
		}
		seen[o.name] = true
		if err := o.parse(&Config{}, o.def); err != nil {
			t.Errorf("%s: default %q does not parse: %v", o.name, o.def, err)
		}
	}
}

func TestLoadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		check func(*Config) bool
	}{
		{"addr", map[string]string{"PARLEY_ADDR": ":8080"}, func(c *Config) bool { return c.Addr == ":8080" }},
		{"addr trimmed", map[string]string{"PARLEY_ADDR": " 0.0.0.0:80 "}, func(c *Config) bool { return c.Addr == "0.0.0.0:80" }},
		{"data dir", map[string]string{"PARLEY_DATA_DIR": "/var/lib/parley"}, func(c *Config) bool {
			return c.DataDir == "/var/lib/parley"
		}},
		{"config path", map[string]string{"PARLEY_CONFIG": "/etc/parley.yaml"}, func(c *Config) bool { return c.ConfigPath == "/etc/parley.yaml" }},
		{"postgres", map[string]string{"PARLEY_DATABASE_URL": "postgres://u:p@db/parley"}, func(c *Config) bool {
			return c.DatabaseURL == "postgres://u:p@db/parley"
		}},
		{"postgresql", map[string]string{"PARLEY_DATABASE_URL": "postgresql://db/parley?sslmode=disable"}, func(c *Config) bool {
			return c.DatabaseURL == "postgresql://db/parley?sslmode=disable"
		}},
		{"redis with postgres", map[string]string{"PARLEY_DATABASE_URL": "postgres://db/parley", "PARLEY_REDIS_URL": "redis://u:p@cache:6379/2",
			"PARLEY_REDIS_KEY_PREFIX": "prod:", "PARLEY_SLOT_LEASE": "10s"}, func(c *Config) bool {
			return c.RedisURL == "redis://u:p@cache:6379/2" && c.RedisKeyPrefix == "prod:" && c.SlotLease == 10*time.Second
		}},
		{"upload limits", map[string]string{
			"UPLOAD_FILE_SIZE_LIMIT": "20", "UPLOAD_IMAGE_FILE_SIZE_LIMIT": "5",
			"UPLOAD_AUDIO_FILE_SIZE_LIMIT": "30", "UPLOAD_VIDEO_FILE_SIZE_LIMIT": "200",
		}, func(c *Config) bool {
			return reflect.DeepEqual(c.Upload, UploadLimits{FileSizeLimitMB: 20, ImageFileSizeLimitMB: 5, AudioFileSizeLimitMB: 30, VideoFileSizeLimitMB: 200})
		}},
		{"blacklist", map[string]string{"UPLOAD_FILE_EXTENSION_BLACKLIST": "EXE, .bat,,exe , sh"}, func(c *Config) bool {
			return reflect.DeepEqual(c.Upload.ExtensionBlacklist, []string{"exe", "bat", "sh"})
		}},
		{"active requests", map[string]string{"APP_MAX_ACTIVE_REQUESTS": "10", "APP_DEFAULT_ACTIVE_REQUESTS": "3"}, func(c *Config) bool {
			return c.AppMaxActiveRequests == 10 && c.AppDefaultActiveRequests == 3
		}},
		{"validation enforce", map[string]string{"PARLEY_RESPONSE_VALIDATION": "ENFORCE"}, func(c *Config) bool { return c.ResponseValidation == ValidationEnforce }},
		{"validation off", map[string]string{"PARLEY_RESPONSE_VALIDATION": "off"}, func(c *Config) bool { return c.ResponseValidation == ValidationOff }},
		{"log debug json", map[string]string{"PARLEY_LOG_LEVEL": "debug", "PARLEY_LOG_FORMAT": "json"}, func(c *Config) bool {
			return c.LogLevel == slog.LevelDebug && c.LogFormat == LogFormatJSON
		}},
		{"log warn", map[string]string{"PARLEY_LOG_LEVEL": "Warn"}, func(c *Config) bool { return c.LogLevel == slog.LevelWarn }},
		{"log error", map[string]string{"PARLEY_LOG_LEVEL": "error"}, func(c *Config) bool { return c.LogLevel == slog.LevelError }},
		{"debug listener off", nil, func(c *Config) bool { return c.DebugAddr == "" }},
		{"debug listener on a bare port is loopback", map[string]string{"PARLEY_DEBUG_ADDR": ":6060"}, func(c *Config) bool { return c.DebugAddr == "127.0.0.1:6060" }},
		{"debug listener with a host", map[string]string{"PARLEY_DEBUG_ADDR": "0.0.0.0:6060"}, func(c *Config) bool { return c.DebugAddr == "0.0.0.0:6060" }},
		{"both listeners on free ports", map[string]string{"PARLEY_ADDR": "127.0.0.1:0", "PARLEY_DEBUG_ADDR": "127.0.0.1:0"}, func(c *Config) bool { return c.DebugAddr == "127.0.0.1:0" }},
		{"grace", map[string]string{"PARLEY_SHUTDOWN_GRACE": "1m30s"}, func(c *Config) bool { return c.ShutdownGrace == 90*time.Second }},
		{"grace zero", map[string]string{"PARLEY_SHUTDOWN_GRACE": "0s"}, func(c *Config) bool { return c.ShutdownGrace == 0 }},
		{"model call cap", map[string]string{"PARLEY_MODEL_CALL_TIMEOUT": "90s"}, func(c *Config) bool { return c.ModelCallTimeout == 90*time.Second }},
		{"node timeout", map[string]string{"PARLEY_WORKFLOW_NODE_TIMEOUT": "45s"}, func(c *Config) bool { return c.WorkflowNodeTimeout == 45*time.Second }},
		{"stale runs", map[string]string{"PARLEY_RUN_STALE_AFTER": "2s"}, func(c *Config) bool { return c.RunStaleAfter == 2*time.Second }},
		{"moderation buffer", map[string]string{"MODERATION_BUFFER_SIZE": "50"}, func(c *Config) bool { return c.ModerationBufferSize == 50 }},
		{"body", map[string]string{"PARLEY_MAX_BODY_BYTES": "2048"}, func(c *Config) bool { return c.MaxBodyBytes == 2048 }},
		{"sqlite full", map[string]string{"PARLEY_SQLITE_SYNCHRONOUS": "FULL"}, func(c *Config) bool { return c.SQLiteSynchronous == "full" }},
		{"pinned versions allowed", nil, func(c *Config) bool { return c.WorkflowVersionExecution == WorkflowVersionExecutionAllowed }},
		{"pinned versions refused", map[string]string{"PARLEY_WORKFLOW_VERSION_EXECUTION": "Not_Allowed"}, func(c *Config) bool {
			return c.WorkflowVersionExecution == WorkflowVersionExecutionNotAllowed
		}},
		{"private fetch", map[string]string{"PARLEY_REMOTE_FILES_ALLOW_PRIVATE": "true"}, func(c *Config) bool { return c.RemoteFilesAllowPrivate }},
		{"content off spans", nil, func(c *Config) bool { return !c.OTelCaptureContent }},
		{"content on spans", map[string]string{"PARLEY_OTEL_CAPTURE_CONTENT": "true"}, func(c *Config) bool { return c.OTelCaptureContent }},
		{"tool networks", map[string]string{"PARLEY_TOOLS_ALLOWED_NETWORKS": " 127.0.0.1, 10.1.2.3/16,::1 "}, func(c *Config) bool {
			return fmt.Sprint(c.ToolsAllowedNetworks) == "[127.0.0.1/32 10.1.0.0/16 ::1/128]"
		}},
		{"no tool networks", nil, func(c *Config) bool { return len(c.ToolsAllowedNetworks) == 0 }},
		{"external knowledge networks", map[string]string{"PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS": "127.0.0.1,10.0.0.0/8"}, func(c *Config) bool {
			return fmt.Sprint(c.ExternalKnowledgeAllowedNetworks) == "[127.0.0.1/32 10.0.0.0/8]" && len(c.ToolsAllowedNetworks) == 0
		}},
		{"external knowledge timeout", map[string]string{"PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT": "3s"}, func(c *Config) bool { return c.ExternalKnowledgeTimeout == 3*time.Second }},
		{"code sandbox", map[string]string{"PARLEY_CODE_NETWORK": "true", "PARLEY_CODE_MEMORY_LIMIT_MB": "512", "CODE_MAX_DEPTH": "8"}, func(c *Config) bool {
			return c.Code.Network && c.Code.MemoryLimitMB == 512 && c.Code.MaxDepth == 8
		}},
		{"indexing limits", map[string]string{"PARLEY_INDEXING_TIMEOUT": "90s", "PARLEY_EXTRACT_CPU_LIMIT": "1s", "PARLEY_EXTRACT_MEMORY_LIMIT_MB": "64"}, func(c *Config) bool {
			return c.IndexingTimeout == 90*time.Second && c.ExtractCPULimit == time.Second && c.ExtractMemoryLimitMB == 64
		}},
		{"empty means default", map[string]string{"PARLEY_ADDR": "  "}, func(c *Config) bool { return c.Addr == "127.0.0.1:5001" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(envMap(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want string // substring; always starts with the variable name
	}{
		{map[string]string{"PARLEY_ADDR": "localhost"}, "PARLEY_ADDR"},
		{map[string]string{"PARLEY_ADDR": "localhost:http"}, "PARLEY_ADDR"},
		{map[string]string{"PARLEY_ADDR": "localhost:70000"}, "PARLEY_ADDR"},
		{map[string]string{"PARLEY_DATABASE_URL": "mysql://u:secret@db/x"}, `PARLEY_DATABASE_URL: unsupported scheme "mysql"`},
		{map[string]string{"PARLEY_DATABASE_URL": "/tmp/x.db"}, "PARLEY_DATABASE_URL: missing scheme"},
		{map[string]string{"PARLEY_REDIS_URL": "redis://u:secret@cache:6379"}, "PARLEY_REDIS_URL: Redis coordinates replicas that share a PostgreSQL database"},
		{map[string]string{"PARLEY_DATABASE_URL": "postgres://db/x", "PARLEY_REDIS_URL": "memcached://u:secret@cache"}, `PARLEY_REDIS_URL: unsupported scheme "memcached"`},
		{map[string]string{"PARLEY_DATABASE_URL": "postgres://db/x", "PARLEY_REDIS_URL": "cache:6379"}, "PARLEY_REDIS_URL"},
		{map[string]string{"PARLEY_SLOT_LEASE": "500ms"}, "PARLEY_SLOT_LEASE: must be at least 1s"},
		{map[string]string{"UPLOAD_FILE_SIZE_LIMIT": "big"}, `UPLOAD_FILE_SIZE_LIMIT="big": not an integer`},
		{map[string]string{"UPLOAD_IMAGE_FILE_SIZE_LIMIT": "0"}, "UPLOAD_IMAGE_FILE_SIZE_LIMIT: must be a positive"},
		{map[string]string{"UPLOAD_AUDIO_FILE_SIZE_LIMIT": "-1"}, "UPLOAD_AUDIO_FILE_SIZE_LIMIT"},
		{map[string]string{"UPLOAD_VIDEO_FILE_SIZE_LIMIT": "1.5"}, "UPLOAD_VIDEO_FILE_SIZE_LIMIT"},
		{map[string]string{"UPLOAD_FILE_EXTENSION_BLACKLIST": "tar gz"}, "UPLOAD_FILE_EXTENSION_BLACKLIST"},
		{map[string]string{"APP_MAX_ACTIVE_REQUESTS": "-1"}, "APP_MAX_ACTIVE_REQUESTS: must be >= 0"},
		{map[string]string{"APP_DEFAULT_ACTIVE_REQUESTS": "x"}, "APP_DEFAULT_ACTIVE_REQUESTS"},
		{map[string]string{"PARLEY_RESPONSE_VALIDATION": "strict"}, "PARLEY_RESPONSE_VALIDATION"},
		{map[string]string{"PARLEY_LOG_LEVEL": "trace"}, "PARLEY_LOG_LEVEL"},
		{map[string]string{"PARLEY_LOG_FORMAT": "xml"}, "PARLEY_LOG_FORMAT"},
		{map[string]string{"PARLEY_SHUTDOWN_GRACE": "10"}, "PARLEY_SHUTDOWN_GRACE"},
		{map[string]string{"PARLEY_DEBUG_ADDR": "6060"}, "PARLEY_DEBUG_ADDR"},
		{map[string]string{"PARLEY_DEBUG_ADDR": "127.0.0.1:99999"}, "PARLEY_DEBUG_ADDR"},
		{map[string]string{"PARLEY_DEBUG_ADDR": "127.0.0.1:5001"}, "PARLEY_DEBUG_ADDR: must differ from PARLEY_ADDR"},
		{map[string]string{"PARLEY_SHUTDOWN_GRACE": "-1s"}, "PARLEY_SHUTDOWN_GRACE: must not be negative"},
		{map[string]string{"PARLEY_MODEL_CALL_TIMEOUT": "0s"}, "PARLEY_MODEL_CALL_TIMEOUT: must be positive"},
		{map[string]string{"PARLEY_MODEL_CALL_TIMEOUT": "ten"}, "PARLEY_MODEL_CALL_TIMEOUT"},
		{map[string]string{"PARLEY_WORKFLOW_NODE_TIMEOUT": "0s"}, "PARLEY_WORKFLOW_NODE_TIMEOUT: must be positive"},
		{map[string]string{"PARLEY_RUN_STALE_AFTER": "1s"}, "PARLEY_RUN_STALE_AFTER: must be at least 2s"},
		{map[string]string{"MODERATION_BUFFER_SIZE": "0"}, "MODERATION_BUFFER_SIZE: must be positive"},
		{map[string]string{"PARLEY_MAX_BODY_BYTES": "0"}, "PARLEY_MAX_BODY_BYTES: must be a positive"},
		{map[string]string{"PARLEY_MAX_BODY_BYTES": "1MB"}, "PARLEY_MAX_BODY_BYTES"},
		{map[string]string{"PARLEY_INDEXING_TIMEOUT": "0s"}, "PARLEY_INDEXING_TIMEOUT: must be positive"},
		{map[string]string{"PARLEY_JOB_LEASE": "100ms"}, "PARLEY_JOB_LEASE: must be at least 1s"},
		{map[string]string{"PARLEY_JOB_POLL": "0s"}, "PARLEY_JOB_POLL: must be positive"},
		{map[string]string{"PARLEY_INDEXING_TIMEOUT": "10"}, "PARLEY_INDEXING_TIMEOUT"},
		{map[string]string{"PARLEY_EXTRACT_CPU_LIMIT": "500ms"}, "PARLEY_EXTRACT_CPU_LIMIT: must be at least 1s"},
		{map[string]string{"PARLEY_EXTRACT_MEMORY_LIMIT_MB": "63"}, "PARLEY_EXTRACT_MEMORY_LIMIT_MB: must be at least 64"},
		{map[string]string{"PARLEY_CODE_CPU_LIMIT": "0s"}, "PARLEY_CODE_CPU_LIMIT: must be at least 1s"},
		{map[string]string{"PARLEY_CODE_MEMORY_LIMIT_MB": "16"}, "PARLEY_CODE_MEMORY_LIMIT_MB: must be at least 64"},
		{map[string]string{"PARLEY_CODE_TIMEOUT": "0s"}, "PARLEY_CODE_TIMEOUT: must be positive"},
		{map[string]string{"CODE_MAX_NUMBER": "1", "CODE_MIN_NUMBER": "2"}, "CODE_MAX_NUMBER: must not be below CODE_MIN_NUMBER"},
		{map[string]string{"CODE_MAX_DEPTH": "-1"}, "CODE_MAX_DEPTH: must not be negative"},
		{map[string]string{"PARLEY_SQLITE_SYNCHRONOUS": "off"}, "PARLEY_SQLITE_SYNCHRONOUS"},
		{map[string]string{"PARLEY_WORKFLOW_VERSION_EXECUTION": "sandbox"}, "PARLEY_WORKFLOW_VERSION_EXECUTION"},
		{map[string]string{"PARLEY_REMOTE_FILES_ALLOW_PRIVATE": "maybe"}, "PARLEY_REMOTE_FILES_ALLOW_PRIVATE"},
		{map[string]string{"PARLEY_TOOLS_ALLOWED_NETWORKS": "localhost"}, "PARLEY_TOOLS_ALLOWED_NETWORKS"},
		{map[string]string{"PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS": "localhost"}, "PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS"},
		{map[string]string{"PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT": "0s"}, "PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			_, err := Load(envMap(tt.env))
			if err == nil {
				t.Fatalf("Load(%v) succeeded", tt.env)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error leaks the database password: %q", err)
			}
		})
	}
}

func TestLoadReportsAllErrors(t *testing.T) {
	t.Parallel()
	_, err := Load(envMap(map[string]string{"PARLEY_LOG_LEVEL": "x", "PARLEY_LOG_FORMAT": "y"}))
	if err == nil || !strings.Contains(err.Error(), "PARLEY_LOG_LEVEL") || !strings.Contains(err.Error(), "PARLEY_LOG_FORMAT") {
		t.Fatalf("want both variables named, got %v", err)
	}
}

func TestValidateAfterOverride(t *testing.T) {
	t.Parallel()
	c, err := Load(envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	c.Addr = "0.0.0.0:9000"
	c.DatabaseURL = "postgres://db/parley"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.DatabaseURL = "sqlite:///x"
	c.DataDir = ""
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "PARLEY_DATABASE_URL") || !strings.Contains(err.Error(), "PARLEY_DATA_DIR") {
		t.Fatalf("want database and data dir errors, got %v", err)
	}
}

func TestMaxActiveRequests(t *testing.T) {
	t.Parallel()
	tests := []struct{ max, def, app, want int }{
		{0, 0, 0, 0},
		{0, 0, 5, 5},
		{0, 3, 0, 3},
		{0, 3, 5, 5},
		{10, 0, 0, 10},
		{10, 0, 5, 5},
		{10, 0, 20, 10},
		{10, 20, 0, 10},
		{10, 3, 0, 3},
	}
	for _, tt := range tests {
		c := &Config{AppMaxActiveRequests: tt.max, AppDefaultActiveRequests: tt.def}
		if got := c.MaxActiveRequests(tt.app); got != tt.want {
			t.Errorf("max=%d default=%d app=%d: got %d, want %d", tt.max, tt.def, tt.app, got, tt.want)
		}
	}
}

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	tests := map[string]DatabaseDriver{
		"":                        DriverSQLite,
		"postgres://localhost/db": DriverPostgres,
		"POSTGRESQL://localhost":  DriverPostgres,
		"mysql://localhost":       "",
		"localhost:5432":          "",
		"::":                      "",
	}
	for in, want := range tests {
		got, err := ParseDatabaseURL(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ParseDatabaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
