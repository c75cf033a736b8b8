// Package nodes holds the node types of the workflow engine, one file each, and the registry
// that maps a node's data.type to its implementation.
package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/agent"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Deps are the services node types call.
type Deps struct {
	// Models and Providers give an LLM node its model.
	Models    chat.Models
	Providers chat.Providers
	// Tools finds the tool a tool or agent node names (builtin.Find, or the workspace
	// registry's Find, as agents use it); nil offers none.
	Tools func(ctx context.Context, ref tools.Ref) (tools.Tool, error)
	// Files keeps the files tools return (the files service); without it they are dropped.
	Files ToolFiles
	// ToolTimeout bounds one tool call (default agent.DefaultToolTimeout).
	ToolTimeout time.Duration
}

// ToolFiles keeps the files tools return; *files.Service implements it.
type ToolFiles = agent.ToolFiles

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
		workflow.TypeStart:    newStart,
		workflow.TypeAnswer:   newAnswer,
		workflow.TypeEnd:      newEnd,
		"llm":                 d.newLLM,
		"variable-aggregator": newAggregator,
		"variable-assigner":   newAggregator,
		"assigner":            newAssigner,
		"if-else":             newIfElse,
		"template-transform":  newTemplateTransform,
		"list-operator":       newListOperator,
		"question-classifier": d.newQuestionClassifier,
		"tool":                d.newTool,
		"agent":               d.newAgent,
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
