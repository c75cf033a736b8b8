package run

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/tracing"
)

// A run's span and metrics (docs/observability.md). The span is the parent of everything the
// run's job does (workflow nodes, model and tool calls, retrievals) and of the jobs it queues,
// by link; the metrics count runs by app, mode and how they ended, the time to the first text
// of the answer, and the apps' concurrency slots. Off, the span records nothing and the
// metrics are nil: a run pays a nil check where each is recorded.

// statusPaused is how a run waiting for human input ends, for its span and metrics (its message
// stays running).
const statusPaused = "paused"

// nameRun names the span of a run of app after what it is in OpenTelemetry's GenAI
// conventions: a workflow invoked (Chatflow and Workflow apps) or an agent (every other app).
func nameRun(span trace.Span, app *apps.App, resumed bool) {
	if !span.IsRecording() {
		return
	}
	op, who := "invoke_agent", tracing.GenAIAgentName.String(app.Name)
	if app.Mode == apps.ModeAdvancedChat || app.Mode == apps.ModeWorkflow {
		op, who = "invoke_workflow", tracing.GenAIWorkflowName.String(app.Name)
	}
	span.SetName(op + " " + app.Name)
	span.SetAttributes(tracing.GenAIOperation.String(op), who, tracing.GenAIAgentID.String(app.ID),
		tracing.AppID.String(app.ID), tracing.AppName.String(app.Name), tracing.AppMode.String(app.Mode))
	if resumed {
		span.SetAttributes(tracing.RunResumed.Bool(true))
	}
}

// describe puts the ids of an accepted run on its span.
func (r *Run) describe() {
	if !r.span.IsRecording() {
		return
	}
	r.span.SetAttributes(tracing.MessageID.String(r.MessageID), tracing.TaskID.String(r.TaskID))
	if r.ConversationID != "" {
		r.span.SetAttributes(tracing.ConversationID.String(r.ConversationID),
			tracing.GenAIConversationID.String(r.ConversationID), tracing.SessionID.String(r.ConversationID))
	}
	if r.WorkflowRunID != "" {
		r.span.SetAttributes(tracing.WorkflowRunID.String(r.WorkflowRunID))
	}
}

// observed is life, the context a run's job runs in, carrying the run's span (a sampled-out
// one too, so that what the job does follows its sampling) and, with metrics on, its app's
// name for the metrics of its model calls.
func (e *Engine) observed(life context.Context, r *Run) context.Context {
	if r.span.SpanContext().IsValid() {
		life = trace.ContextWithSpan(life, r.span)
	}
	if e.metrics != nil {
		life = metrics.WithApp(life, r.app)
	}
	return life
}

// countSlot counts the concurrency slot of app that release gives back among those in use.
func (e *Engine) countSlot(app *apps.App, release func()) func() {
	if e.metrics == nil {
		return release
	}
	e.metrics.RunAdmitted(app.Name, app.MaxActiveRequests)
	var once sync.Once
	return func() {
		release()
		once.Do(func() { e.metrics.RunReleased(app.Name) })
	}
}

// firstText records the first text of the answer (a message chunk, or a Workflow app's text
// chunk): the time to the first token.
func (r *Run) firstText() {
	if r.metrics == nil || !r.answered.CompareAndSwap(false, true) {
		return
	}
	r.metrics.FirstToken(r.app, r.Mode, time.Since(r.started))
}

// ended records how the run ended (status: the stored message's, or paused) and ends its span.
func (r *Run) ended(status string, err error) {
	r.metrics.RunFinished(r.app, r.Mode, status, time.Since(r.started))
	if r.span.IsRecording() {
		r.span.SetAttributes(tracing.RunStatus.String(status))
		tracing.Fail(r.span, err)
	}
	r.span.End()
}
