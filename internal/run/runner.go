package run

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/store"
)

// Request is one message sent to an app, whatever its kind.
type Request struct {
	App   *apps.App
	User  string
	Query string
	// Inputs are the values of the app's input form; a conversation keeps those it started
	// with.
	Inputs map[string]any
	// ConversationID continues a conversation; empty starts one. Kinds with one-shot messages
	// (Completion) never continue one.
	ConversationID string
	Files          []File
	// AutoGenerateName asks for the new conversation to be named after its first exchange.
	AutoGenerateName bool
	Streaming        bool
	// WorkflowID pins the published version a workflow kind runs (empty: the latest
	// published); other kinds ignore it.
	WorkflowID string
	// Trigger, when set, is the trigger node a Workflow app's run starts from (a webhook's or a
	// schedule's) instead of the user-input start node; Inputs are then the trigger's variables,
	// taken as they are (the app has no input form).
	Trigger *Trigger
	// WorkflowRunID, when set, is the id of the workflow run the request starts (a trigger's run
	// is queued with its id, so that a retry of its job finds whether it started); else a new one.
	WorkflowRunID string
	// History is the earlier exchanges of a new conversation, oldest first, as a stateless
	// client (the OpenAI-compatible API) gives them: the chat kinds' prompts replay them as
	// they replay a stored conversation's. They are not stored. A continued conversation
	// replays its own messages instead.
	History []store.Message
}

// Trigger is what started a Workflow app's run in place of a request to the API.
type Trigger struct {
	// Kind is how the run was triggered, as its workflow run records it (Dify's
	// triggered_from): store.TriggerWebhook or store.TriggerSchedule.
	Kind string
	// NodeID is the trigger node the run starts from.
	NodeID string
}

// File is a file attached to a message, as the request references it.
type File struct {
	Type           string
	TransferMethod string
	URL            string
	UploadFileID   string
}

// Turn is an admitted request with what the engine resolved for it: the end user and the
// conversation the message belongs to. Nothing is stored yet when a runner sees it.
type Turn struct {
	Request
	EndUser store.EndUser
	// Conversation is the stored conversation the message continues, or the new one that is
	// stored with the message (NewConversation).
	Conversation    store.Conversation
	NewConversation bool
	// Inputs are the conversation's inputs, validated against the app's form.
	Inputs map[string]any
}

// Prior is the history the answer replays: the stored conversation's last n messages, read by
// recent, or (for a new conversation) the request's History, its newest n.
func (t Turn) Prior(ctx context.Context, n int, recent func(ctx context.Context, conversationID string, n int) ([]store.Message, error)) ([]store.Message, error) {
	if !t.NewConversation {
		return recent(ctx, t.Conversation.ID, n)
	}
	if h := t.History; len(h) > n {
		return h[len(h)-n:], nil
	}
	return t.History, nil
}

// Runner runs the apps of one kind.
type Runner interface {
	// Prepare readies the answer to an admitted request, before anything is stored: it looks
	// up the model, checks what only this kind checks and loads what the answer needs (history,
	// files). An error refuses the request and is returned to the client as is.
	Prepare(ctx context.Context, t Turn) (Job, error)
}

// Job is an answer a runner prepared.
type Job struct {
	// Provider and Model are the model the message is recorded with.
	Provider, Model string
	// Files are the rows recording the user's files, stored with the message.
	Files []store.MessageFile
	// WorkflowRunID is the workflow run the answer belongs to, for kinds that run a graph;
	// the stream puts it on workflow events.
	WorkflowRunID string
	// App is the version of the app the answer runs when it is not the request's (a
	// Chatflow's published version): its features, such as moderation, apply.
	App *apps.App
	// Work produces the answer once the message is stored.
	Work Work
	// After, if set, runs once Work returned without being stopped or cut by shutdown, after
	// the concurrency slot and the stop handle are released: work the answer must not wait
	// for, such as naming a new conversation. ctx ends at shutdown.
	After func(ctx context.Context)
}

// Work produces an answer.
type Work interface {
	// Run sends the answer's content events to out and returns the outcome, also when it
	// fails (the usage of a partial answer counts). ctx ends on stop (cause ErrStopped) and on
	// shutdown (cause ErrShuttingDown). The engine ends the stream itself with message_end or
	// error.
	Run(ctx context.Context, out *Output) (Outcome, error)
}

// WorkFunc is a function that is Work.
type WorkFunc func(ctx context.Context, out *Output) (Outcome, error)

// Run implements Work.
func (f WorkFunc) Run(ctx context.Context, out *Output) (Outcome, error) { return f(ctx, out) }

// Outcome is what a job reports besides its events.
type Outcome struct {
	Usage models.Usage
	// Resources are the knowledge chunks the answer used (ids are set by the engine).
	Resources []store.RetrieverResource
	// Metadata are further members of the message's stored metadata (besides usage and
	// retriever_resources).
	Metadata map[string]any
	// Files are the files the assistant returned, as message_end lists them (nil: none).
	Files any
	// Uncited answers never list retriever resources: message_end and the stored metadata have
	// no retriever_resources member at all (Agent apps).
	Uncited bool
	// Trailer are events sent after message_end when the answer succeeded (a Chatflow's
	// workflow_finished).
	Trailer []Event
	// Paused is a workflow run waiting for human input: the message stays running with the
	// answer so far, and the stream ends with the job's own events (no message_end).
	Paused bool
	// Annotation is the annotation the answer came from (annotation reply), else nil.
	Annotation *AnnotationReply
	// FinishReason is why the model stopped, as the provider said ("stop", "length"), for kinds
	// whose answer is one model call, or FinishContentFilter for a preset answer to a flagged
	// request; "" when unknown.
	FinishReason string
}

// Output is where a job sends its events.
type Output struct{ r *Run }

// Emit sends ev to the run's client. The text of message and agent_message events is added to
// the answer the engine stores (and saves while the run goes on); message_replace replaces it.
func (o *Output) Emit(ev Event) {
	if g := o.r.guard; g != nil && g.intercept(o, ev) {
		return
	}
	switch ev.Kind {
	case EventMessage, EventAgentMessage:
		if ev.Answer != "" {
			o.r.mu.Lock()
			o.r.answer.WriteString(ev.Answer)
			o.r.version++
			o.r.mu.Unlock()
			o.r.tts.write(ev.Answer)
			o.r.firstText()
		}
	case EventTextChunk:
		o.r.firstText()
	case EventMessageReplace:
		o.r.mu.Lock()
		o.r.answer.Reset()
		o.r.answer.WriteString(ev.Answer)
		o.r.version++
		o.r.mu.Unlock()
	}
	o.r.emit(ev)
}

// Deliver sends ev without recording its text: for an event that repeats text already
// recorded, such as the closing message of an Agent app that carries the complete answer.
func (o *Output) Deliver(ev Event) { o.r.emit(ev) }

// MessageID is the id of the message being answered, for jobs that store rows of their own
// under it (an agent's steps).
func (o *Output) MessageID() string { return o.r.MessageID }

// CreatedAt is when the message being answered was created.
func (o *Output) CreatedAt() time.Time { return o.r.CreatedAt }

// Answer is the answer recorded so far.
func (o *Output) Answer() string {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	return o.r.answer.String()
}
