package nodes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/files"
	ksandbox "github.com/parleyhq/parley/internal/knowledge/sandbox"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// workerEnv marks the test binary started as the code sandbox's JavaScript worker.
const workerEnv = "PARLEY_NODES_CODE_WORKER"

// extractEnv marks the test binary started as the extraction child of document extractors.
const extractEnv = "PARLEY_NODES_EXTRACT_CHILD"

// extractor is the server's extraction in a child process with limits, the test binary as child.
func extractor(t *testing.T) *ksandbox.Extractor {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &ksandbox.Extractor{Path: self, Env: []string{extractEnv + "=1"}, CPU: 10 * time.Second, Memory: 1 << 30}
}

// TestMain lets the test binary play the JavaScript worker, as `parley code-worker` does.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(sandbox.WorkerMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv(extractEnv) == "1" {
		os.Exit(ksandbox.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// codeSandbox is Deps.Code over a real sandbox with the test binary as its worker. Without
// bubblewrap it skips loudly, except under CI, where the sandbox must work.
func codeSandbox(t *testing.T) func(context.Context) (*sandbox.Runner, sandbox.Limits, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := sandbox.New(context.Background(), sandbox.Options{Worker: sandbox.Command{Path: self, Env: []string{workerEnv + "=1"}}})
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") == "" {
			t.Skipf("SKIPPING: the code sandbox cannot run on this machine: %v", err)
		}
		t.Fatal(err)
	}
	return func(context.Context) (*sandbox.Runner, sandbox.Limits, error) { return r, sandbox.DefaultLimits(), nil }
}

// fixture is a store with an app, an end user and a message being answered, and the files
// service over it.
type fixture struct {
	st    *store.Store
	files *files.Service
	env   *nodes.Env
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st := testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs := files.New(files.Options{Store: st, Blobs: blobs, AllowPrivateNetworks: true,
		Limits: config.UploadLimits{FileSizeLimitMB: 15, ImageFileSizeLimitMB: 10, AudioFileSizeLimitMB: 50, VideoFileSizeLimitMB: 100}})
	apps, err := st.SyncApps(ctx, []store.AppSpec{{Name: "flow", Mode: "advanced-chat"}})
	if err != nil {
		t.Fatal(err)
	}
	app := apps["flow"].ID
	u, err := st.EndUser(ctx, app, "u1")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := st.CreateConversation(ctx, store.Conversation{AppID: app, EndUserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.CreateMessage(ctx, store.Message{AppID: app, ConversationID: conv.ID, EndUserID: u.ID, Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, files: fs, env: &nodes.Env{AppID: app, MessageID: msg.ID, EndUserID: u.ID}}
}

// upload stores a file as the end user's upload and returns it as the pool holds files.
func (f *fixture) upload(t *testing.T, name, contentType string, data []byte) *value.File {
	t.Helper()
	up, err := f.files.Upload(context.Background(), files.Upload{AppID: f.env.AppID, EndUserID: f.env.EndUserID,
		Filename: name, ContentType: contentType, Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	return &value.File{ID: up.ID, Type: files.FileType(up.MimeType), TransferMethod: value.TransferLocalFile, RelatedID: up.ID,
		Filename: up.Name, Extension: "." + up.Extension, MimeType: up.MimeType, Size: up.Size}
}

// events records the node events of a run.
type events struct {
	mu       sync.Mutex
	answer   bytes.Buffer
	finished map[string]map[string]any
	retries  map[string]int
}

func (e *events) Emit(ev run.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Kind {
	case run.EventMessage:
		e.answer.WriteString(ev.Answer)
	case run.EventNodeRetry:
		if e.retries == nil {
			e.retries = map[string]int{}
		}
		e.retries[field(ev.Data, "node_id").(string)]++
	case run.EventNodeFinished:
		if e.finished == nil {
			e.finished = map[string]map[string]any{}
		}
		m := jsonMap(ev.Data)
		e.finished[m["node_id"].(string)] = m
	}
}

// execute runs a graph of nodes and edges with the given deps and environment.
func execute(t *testing.T, d nodes.Deps, env *nodes.Env, pool *workflow.Pool, ns []any, es []any) (workflow.Report, *events) {
	t.Helper()
	g, err := workflow.Parse(map[string]any{"nodes": ns, "edges": es})
	if err != nil {
		t.Fatal(err)
	}
	if pool == nil {
		pool = workflow.NewPool()
	}
	if env == nil {
		env = &nodes.Env{}
	}
	ev := &events{}
	rep := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)}).Execute(context.Background(),
		workflow.Spec{Graph: g, Pool: pool, Out: ev, Env: env})
	return rep, ev
}

// jsonMap is an event's data as a client decodes it.
func jsonMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	m["_json"] = string(b)
	return m
}

func field(v any, name string) any { return jsonMap(v)[name] }
