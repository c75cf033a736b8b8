// Package nodes holds the node types of the workflow engine, one file each, and the registry
// that maps a node's data.type to its implementation.
package nodes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/httpreq"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Deps are the services node types call.
type Deps struct {
	// Models and Providers give an LLM node its model.
	Models    llm.Catalog
	Providers llm.Clients
	// Tools finds the tool a tool or agent node names (builtin.Find, or the workspace
	// registry's Find, as agents use it); nil offers none.
	Tools func(ctx context.Context, ref tools.Ref) (tools.Tool, error)
	// ToolTimeout bounds one tool call (default llm.DefaultToolTimeout).
	ToolTimeout time.Duration
	// Knowledge serves knowledge-retrieval nodes; without it they cannot run.
	Knowledge Knowledge
	// Code returns the sandbox of code nodes and Dify's limits on their outputs. It is called
	// when a code node runs, so that a machine without the sandbox's packages still runs every
	// other app; nil or an error fails the code node.
	Code func(ctx context.Context) (*sandbox.Runner, sandbox.Limits, error)
	// Files reads the files nodes send or extract (uploads, tool files, remote URLs) and keeps
	// the files an http-request node receives as tool files.
	Files *files.Service
	// HTTP is what http-request nodes send with.
	HTTP HTTP
	// Storage keeps what agent strategies keep between runs (svcvit/agent's TOD); the store.
	Storage StrategyStorage
	// MCPClient makes the requests to the MCP servers an MCP agent strategy names: the
	// network-guarded client the workspace's tools use.
	MCPClient *http.Client
	// Extract extracts a document's text for document-extractor nodes (the knowledge base's
	// extraction, in a child process with limits); nil: extract.Extract in process.
	Extract func(ctx context.Context, filename string, r io.Reader, size int64) (extract.Document, error)
}

// HTTP is the http-request node's client and settings.
type HTTP struct {
	// Client is the server's SSRF-guarded client (netguard). Required for http-request nodes.
	Client *http.Client
	// Settings are the limits and default timeouts (zero: Dify's defaults).
	Settings httpreq.Settings
	// Transports, one per server, shares connections between runs; the server closes it.
	Transports *httpreq.Transports
}

// Env is what the runner tells nodes about the run (workflow.Exec.Env).
type Env struct {
	// Inputs are the request's validated inputs, by variable name.
	Inputs map[string]any
	// History returns up to n earlier messages of the conversation, oldest first (memory).
	History func(ctx context.Context, n int) ([]store.Message, error)
	// AppID, MessageID and EndUserID name the app, the message being answered and the end
	// user asking: a tool's files are stored as files of that message.
	AppID, MessageID, EndUserID string
}

func env(x *workflow.Exec) *Env {
	if e, ok := x.Env.(*Env); ok {
		return e
	}
	return &Env{}
}

// Registry returns the node types this package implements.
func Registry(d Deps) workflow.Registry {
	return workflow.Registry{
		workflow.TypeStart:      newStart,
		workflow.TypeAnswer:     newAnswer,
		workflow.TypeEnd:        newEnd,
		"llm":                   d.newLLM,
		"variable-aggregator":   newAggregator,
		"variable-assigner":     newAggregator,
		"assigner":              newAssigner,
		"if-else":               newIfElse,
		"template-transform":    newTemplateTransform,
		"list-operator":         newListOperator,
		"question-classifier":   d.newQuestionClassifier,
		"parameter-extractor":   d.newParameterExtractor,
		"iteration":             newIteration,
		"iteration-start":       newIterationStart,
		"loop":                  newLoop,
		"knowledge-retrieval":   d.newKnowledgeRetrieval,
		"loop-start":            newLoopStart,
		"loop-end":              newLoopEnd,
		"code":                  d.newCode,
		"http-request":          d.newHTTPRequest,
		"document-extractor":    d.newDocumentExtractor,
		"tool":                  d.newTool,
		"agent":                 d.newAgent,
		workflow.TypeHumanInput: newHumanInput,
		// Trigger-plugin nodes are not run: their events come from Dify's plugins, and an import
		// refuses them (internal/triggers).
		workflow.TypeTriggerWebhook:  newWebhookTrigger,
		workflow.TypeTriggerSchedule: newScheduleTrigger,
	}
}

// str reads a string field of a node's data.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// list reads a list field of a node's data.
func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// mapping reads a mapping field of a node's data.
func mapping(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// configError is a node whose data cannot run.
func configError(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// get reads a selector from the pool as a value of the value model.
func get(p *workflow.Pool, sel []string) (any, bool) {
	v, ok := p.Get(sel)
	if !ok {
		return nil, false
	}
	return v, true
}

// fromGo normalises a value decoded from a request or a DSL file into the value model.
func fromGo(v any) any { return value.FromGo(v) }
