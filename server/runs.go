package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/sse"
)

// This file is where a run meets the wire, for every app kind: runStream answers a streaming
// request, collect a blocking one, and eventEncoder renders each run event as its contract
// event.

// runStream writes a run as Server-Sent Events. One goroutine — the request's — owns the
// writer: it forwards events, sends a ping whenever the stream has been quiet for the ping
// interval, and detaches from the run if the client goes away. It is the streaming response of
// every operation that starts a run.
type runStream struct {
	ctx context.Context
	run *run.Run
	srv *Server
}

func (s *Server) stream(ctx context.Context, r *run.Run) *runStream {
	return &runStream{ctx: ctx, run: r, srv: s}
}

// VisitSendChatMessageResponse implements gen.SendChatMessageResponseObject.
func (rs *runStream) VisitSendChatMessageResponse(w http.ResponseWriter) error {
	return rs.write(w)
}

// VisitSendCompletionMessageResponse implements gen.SendCompletionMessageResponseObject.
func (rs *runStream) VisitSendCompletionMessageResponse(w http.ResponseWriter) error {
	return rs.write(w)
}

func (rs *runStream) write(w http.ResponseWriter) error {
	out := rs.srv.startStream(w)
	defer rs.srv.endStream(out)
	r := rs.run
	// The first byte goes out at once, so clients and proxies see the stream has started.
	if err := out.Ping(); err != nil {
		r.Detach()
		return nil
	}
	enc := newEventEncoder(r)
	src := rs.srv.runFrames(r, func(ctx context.Context, ev run.Event, out *sse.Writer) (bool, error) {
		return false, rs.srv.queueEvent(ctx, r, enc, ev, out)
	})
	defer src.timer.Stop()
	if !pump(rs.ctx, out, src, rs.srv.pingInterval) {
		// The client went away (or stopped reading): the run goes on without it.
		r.Detach()
	}
	return nil
}

// runFrames is the frameSource of a live run: its events, as they come, until the run closes
// its channel or send says the stream is done.
type runFrames struct {
	run   *run.Run
	timer *time.Timer
	// send queues the frames of one event; done ends the stream after them.
	send func(ctx context.Context, ev run.Event, out *sse.Writer) (done bool, err error)
}

// runFrames is the frames of r's events, each queued by send.
func (s *Server) runFrames(r *run.Run, send func(ctx context.Context, ev run.Event, out *sse.Writer) (bool, error)) *runFrames {
	return &runFrames{run: r, timer: time.NewTimer(0), send: send}
}

// next queues the next event and any already waiting behind it.
func (f *runFrames) next(ctx context.Context, wait time.Duration, out *sse.Writer) (bool, error) {
	f.timer.Reset(wait)
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-f.timer.C:
		return false, nil
	case ev, ok := <-f.run.Events():
		for {
			if !ok {
				return true, nil
			}
			if done, err := f.send(ctx, ev, out); err != nil || done {
				return done, err
			}
			select {
			case ev, ok = <-f.run.Events():
			default:
				return false, nil
			}
		}
	}
}

// queueEvent queues one event of r as its contract event; an event that cannot be encoded is
// logged and left out.
func (s *Server) queueEvent(ctx context.Context, r *run.Run, enc *eventEncoder, ev run.Event, out *sse.Writer) error {
	if ev.Kind == run.EventPing {
		return out.Ping()
	}
	data, err := enc.encode(ev)
	if err != nil {
		s.log.ErrorContext(ctx, "encode event", "task_id", r.TaskID, "event", ev.Kind.String(), "error", err)
		return nil
	}
	return out.Queue(data)
}

// reply is a run's whole answer, as a blocking request returns it.
type reply struct {
	answer string
	end    *run.End
	// replaced: output moderation replaced the answer.
	replaced bool
}

// collect waits for a run's whole answer, for a blocking request: the text of its message
// events (as message_replace left it) and message_end's metadata; an error event becomes the
// error the request fails with. A client that goes away detaches from the run, which still
// finishes and is stored.
func collect(ctx context.Context, r *run.Run) (reply, error) {
	var answer run.AnswerText
	paused := false
	for {
		select {
		case <-ctx.Done():
			r.Detach()
			return reply{}, ctx.Err()
		case ev, ok := <-r.Events():
			if !ok {
				if paused {
					// A Chatflow paused for human input: the reply is the answer so far; the run
					// resumes through the form and events operations.
					return reply{answer: answer.String(), end: &run.End{Usage: models.EmptyUsage()}}, nil
				}
				return reply{}, errInternal(errors.New("run ended without a final event"))
			}
			answer.Add(ev)
			switch ev.Kind {
			case run.EventWorkflowPaused:
				paused = true
			case run.EventError:
				return reply{}, ev.Err
			case run.EventMessageEnd:
				// Whatever the run still sends after the answer is not part of this reply.
				r.Detach()
				return reply{answer: answer.String(), end: ev.End, replaced: answer.Replaced()}, nil
			}
		}
	}
}

// eventEncoder renders the events of one run as the JSON of their contract events: the
// envelope of the run's app kind, then each event's own members in Dify's order. The chat
// kinds' envelope names the conversation, the message and its creation time; Completion's has
// no conversation. Workflow events add the run's workflow_run_id and nest their payload under
// `data`.
type eventEncoder struct {
	// head is the envelope after `"event":…`; task is `,"task_id":…`; id is `,"id":<message>`;
	// workflowRun is `,"workflow_run_id":…` (empty when the run has none).
	head, task, id, workflowRun []byte
	buf                         []byte
}

func newEventEncoder(r *run.Run) *eventEncoder {
	enc := &eventEncoder{buf: make([]byte, 0, 512)}
	var h []byte
	if r.Mode == apps.ModeWorkflow {
		// A Workflow app's events have no conversation or message: the run's id leads every
		// one of them, agent_log and error included, as Dify's workflow stream has it.
		enc.head = jsonenc.AppendString([]byte(`,"workflow_run_id":`), r.WorkflowRunID)
		enc.task = jsonenc.AppendString([]byte(`,"task_id":`), r.TaskID)
		return enc
	}
	if r.Mode != config.AppModeCompletion {
		h = jsonenc.AppendString(append(h, `,"conversation_id":`...), r.ConversationID)
	}
	h = jsonenc.AppendString(append(h, `,"message_id":`...), r.MessageID)
	h = strconv.AppendInt(append(h, `,"created_at":`...), r.CreatedAt.Unix(), 10)
	enc.head = h
	enc.task = jsonenc.AppendString([]byte(`,"task_id":`), r.TaskID)
	enc.id = jsonenc.AppendString([]byte(`,"id":`), r.MessageID)
	if r.WorkflowRunID != "" {
		enc.workflowRun = jsonenc.AppendString([]byte(`,"workflow_run_id":`), r.WorkflowRunID)
	}
	return enc
}

// encode renders ev; the bytes are valid until the next call.
func (enc *eventEncoder) encode(ev run.Event) ([]byte, error) {
	name := ev.Kind.String()
	if name == "" || ev.Kind == run.EventPing {
		return nil, fmt.Errorf("server: event kind %d has no JSON form", ev.Kind)
	}
	b := append(enc.buf[:0], `{"event":"`...)
	b = append(b, name...)
	b = append(b, '"')
	b = append(b, enc.head...)
	var err error
	switch k := ev.Kind; {
	case k == run.EventError:
		b = mapError(ev.Err).appendMembers(append(b, enc.workflowRun...))
	case k == run.EventMessage:
		b = append(append(b, enc.task...), enc.id...)
		b = jsonenc.AppendString(append(b, `,"answer":`...), ev.Answer)
		b = appendSelector(append(b, `,"from_variable_selector":`...), ev.Data)
	case k == run.EventAgentMessage:
		b = append(append(b, enc.task...), enc.id...)
		b = jsonenc.AppendString(append(b, `,"answer":`...), ev.Answer)
	case k == run.EventMessageEnd:
		b = append(append(b, enc.task...), enc.id...)
		if b, err = appendMessageEnd(b, ev.End); err != nil {
			return nil, err
		}
	case k == run.EventTTSMessage, k == run.EventTTSMessageEnd:
		b = append(b, enc.task...)
		b = jsonenc.AppendString(append(b, `,"audio":`...), ev.Answer)
	case k == run.EventMessageReplace:
		b = append(b, enc.task...)
		b = jsonenc.AppendString(append(b, `,"answer":`...), ev.Answer)
		if b, err = appendMembers(b, ev.Data); err != nil {
			return nil, err
		}
	case k.Nested():
		b = append(b, enc.task...)
		if k.WorkflowScoped() {
			b = append(b, enc.workflowRun...)
		}
		data := ev.Data
		if data == nil {
			data = struct{}{}
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return nil, fmt.Errorf("server: %s data: %w", name, err)
		}
		b = append(append(b, `,"data":`...), raw...)
	default: // agent_thought, message_file: their members follow the task id
		b = append(b, enc.task...)
		if b, err = appendMembers(b, ev.Data); err != nil {
			return nil, err
		}
	}
	enc.buf = append(b, '}')
	return enc.buf, nil
}

// appendSelector appends a message's from_variable_selector: the selector a Chatflow's answer
// chunk comes from, null for the other kinds.
func appendSelector(b []byte, data any) []byte {
	sel, ok := data.([]string)
	if !ok || sel == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range sel {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, s)
	}
	return append(b, ']')
}

// appendMessageEnd appends message_end's own members after its id.
func appendMessageEnd(b []byte, end *run.End) ([]byte, error) {
	if end == nil {
		end = &run.End{}
	}
	md := gen.MessageEndMetadata{Usage: genUsage(end.Usage), AnnotationReply: genAnnotationReply(end.Annotation)}
	if !end.Uncited {
		rs := genResources(end.Resources)
		md.RetrieverResources = &rs
	}
	meta, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `,"metadata":`...), meta...)
	if end.Files == nil {
		return append(b, `,"files":null`...), nil
	}
	files, err := json.Marshal(end.Files)
	if err != nil {
		return nil, err
	}
	return append(append(b, `,"files":`...), files...), nil
}

// appendMembers appends the members of v, which must encode to a JSON object, to an object
// being written.
func appendMembers(b []byte, v any) ([]byte, error) {
	if v == nil {
		return b, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return nil, fmt.Errorf("server: event payload %T is not a JSON object", v)
	}
	if inner := raw[1 : len(raw)-1]; len(inner) > 0 {
		b = append(append(b, ','), inner...)
	}
	return b, nil
}
