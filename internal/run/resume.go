package run

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/tracing"
)

// A workflow run that pauses for human input ends its stream without message_end (the job's
// Outcome.Paused): its message stays running, with the answer so far stored, and its
// concurrency slot and stop handle are released. Resume runs the rest of it later, in this or
// another process, as a new segment of the same message.

// Resumption is a paused answer to continue.
type Resumption struct {
	App *apps.App
	// User is the end user's session id (the stop handle's owner), EndUserID the end user.
	User, EndUserID string
	// MessageID, ConversationID and CreatedAt are the message being answered; WorkflowRunID
	// its workflow run.
	MessageID, ConversationID, WorkflowRunID string
	CreatedAt                                time.Time
	// Answer is the answer stored before the pause; the segment's text is added to it.
	Answer string
	// PriorTokens are the tokens the run used before the pause: the segment's outcome counts
	// them with its own, and only its own are charged to the quota.
	PriorTokens int64
	Work        Work
}

// Resume starts the next segment of a paused answer. Its events (a new task id) end like a
// run's: message_end or error, or nothing after the job's own pause events. ctx is what resumes
// it (a form submitted, a timer's job): the segment's span is its child.
func (e *Engine) Resume(ctx context.Context, res Resumption) (*Run, error) {
	if e.life.Err() != nil {
		return nil, ErrShuttingDown
	}
	kind := e.kinds[res.App.Mode]
	_, span := tracing.Start(ctx, "run", trace.SpanKindInternal)
	nameRun(span, res.App, true)
	run := &Run{
		TaskID: store.NewID(), MessageID: res.MessageID, ConversationID: res.ConversationID,
		WorkflowRunID: res.WorkflowRunID, CreatedAt: res.CreatedAt, Mode: res.App.Mode, EndUserID: res.EndUserID, Resumed: true,
		workflow: kind.Workflow,
		events:   make(chan Event, e.buffer), detached: make(chan struct{}), finished: make(chan struct{}),
		span: span, metrics: e.metrics, app: res.App.Name,
	}
	if kind.OneShot || kind.Workflow {
		run.ConversationID = ""
	}
	task := tasks.Task{ID: run.TaskID, AppID: res.App.ID, User: res.User}
	if kind.Workflow {
		task.User = "" // stopped by whoever names the task, as a Workflow app's runs are
	}
	if e.quota != nil {
		if charge := e.quota.Charge(ctx, res.App); charge != nil {
			run.spent = func(tokens int64) { charge(tokens - res.PriorTokens) }
		}
	}
	run.out.r = run
	run.answer.WriteString(res.Answer)
	run.answerAt = time.Now()
	run.beatAt, run.started = run.answerAt, run.answerAt
	run.describe()
	e.track(run)
	runCtx, done := e.tasks.Register(e.observed(e.life, run), task)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(run.finished)
		defer done()
		e.execute(runCtx, run, res.Work)
	}()
	return run, nil
}

// savePaused stores the answer so far of a paused run; its message stays running.
func (e *Engine) savePaused(ctx context.Context, run *Run) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := e.store.SaveMessageProgress(ctx, time.Now(), []store.MessageProgress{{ID: run.MessageID,
		Answer: run.out.Answer(), Changed: true}}); err != nil {
		e.log.Error("persist paused answer", "message_id", run.MessageID, "error", err)
	}
}
