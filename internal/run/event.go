package run

import (
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/store"
)

// EventKind says which event an Event is. The values cover every event a stream of the Service
// API can carry, whatever the app kind.
type EventKind uint8

// Event kinds. Their String is the event's name on the wire.
const (
	// EventMessage is an answer chunk (Answer); its text is part of the stored answer.
	EventMessage EventKind = iota + 1
	// EventAgentMessage is an answer chunk of an agent app (Answer); stored like EventMessage.
	EventAgentMessage
	// EventAgentThought is a reasoning or tool step of an agent app (Data).
	EventAgentThought
	// EventMessageReplace replaces the answer so far with Answer (output moderation); the stored
	// answer is replaced too. Data may add the reason.
	EventMessageReplace
	// EventReasoningChunk is a reasoning delta of a workflow LLM node (Data).
	EventReasoningChunk
	// EventMessageFile is a file the assistant returned (Data).
	EventMessageFile
	// EventMessageEnd ends a successful (or stopped) answer (End). The engine sends it.
	EventMessageEnd
	// EventTTSMessage is a chunk of synthesized speech (Answer: base64 audio).
	EventTTSMessage
	// EventTTSMessageEnd ends synthesized speech.
	EventTTSMessageEnd
	// EventWorkflowStarted .. EventHumanInputFormTimeout are the workflow events (Data is their
	// `data` object; the stream adds the run's workflow_run_id).
	EventWorkflowStarted
	EventNodeStarted
	EventNodeFinished
	EventNodeRetry
	EventIterationStarted
	EventIterationNext
	EventIterationCompleted
	EventLoopStarted
	EventLoopNext
	EventLoopCompleted
	// EventAgentLog is a step log of a workflow agent node (Data); it has no workflow_run_id.
	EventAgentLog
	EventWorkflowFinished
	EventWorkflowPaused
	EventHumanInputRequired
	EventHumanInputFormFilled
	EventHumanInputFormTimeout
	// EventError ends a failed run (Err). The engine sends it.
	EventError
	// EventPing is a keep-alive; streams send their own, so a job rarely needs it.
	EventPing
	// EventTextChunk is streamed text of a Workflow app (Data: its `data` object, text and
	// from_variable_selector): the outputs of its end nodes as they become available.
	EventTextChunk

	numKinds = iota
)

var kindNames = [numKinds + 1]string{
	EventMessage:               "message",
	EventAgentMessage:          "agent_message",
	EventAgentThought:          "agent_thought",
	EventMessageReplace:        "message_replace",
	EventReasoningChunk:        "reasoning_chunk",
	EventMessageFile:           "message_file",
	EventMessageEnd:            "message_end",
	EventTTSMessage:            "tts_message",
	EventTTSMessageEnd:         "tts_message_end",
	EventWorkflowStarted:       "workflow_started",
	EventNodeStarted:           "node_started",
	EventNodeFinished:          "node_finished",
	EventNodeRetry:             "node_retry",
	EventIterationStarted:      "iteration_started",
	EventIterationNext:         "iteration_next",
	EventIterationCompleted:    "iteration_completed",
	EventLoopStarted:           "loop_started",
	EventLoopNext:              "loop_next",
	EventLoopCompleted:         "loop_completed",
	EventAgentLog:              "agent_log",
	EventWorkflowFinished:      "workflow_finished",
	EventWorkflowPaused:        "workflow_paused",
	EventHumanInputRequired:    "human_input_required",
	EventHumanInputFormFilled:  "human_input_form_filled",
	EventHumanInputFormTimeout: "human_input_form_timeout",
	EventError:                 "error",
	EventPing:                  "ping",
	EventTextChunk:             "text_chunk",
}

// EventKinds lists every event kind, in declaration order.
func EventKinds() []EventKind {
	out := make([]EventKind, 0, numKinds)
	for k := EventMessage; k < numKinds+1; k++ {
		out = append(out, k)
	}
	return out
}

// String is the event's name on the wire (`event` member), or "" for an unknown kind.
func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return ""
}

// Nested reports whether the event carries its payload under `data` (the workflow family,
// reasoning_chunk and agent_log); the other kinds carry their fields at the top level.
func (k EventKind) Nested() bool {
	return k == EventReasoningChunk || k == EventTextChunk || (k >= EventWorkflowStarted && k <= EventHumanInputFormTimeout)
}

// WorkflowScoped reports whether the event carries the run's workflow_run_id: the nested kinds
// except agent_log, as Dify sends them.
func (k EventKind) WorkflowScoped() bool { return k.Nested() && k != EventAgentLog }

// Event is one step of a run. It is small on purpose: every open stream buffers some. The
// frequent kinds use the typed fields; the others carry their payload in Data.
type Event struct {
	Kind EventKind
	// Answer is the text of message, agent_message and message_replace, and the audio of
	// tts_message.
	Answer string
	// End is message_end's metadata.
	End *End
	// Err is the failure an error event reports.
	Err error
	// Data is the payload of the other kinds: a value that encodes to a JSON object. Nested kinds
	// send it as their `data`; the others (agent_thought, message_file, message_replace's
	// reason) add its members to the event. A message's Data may be the []string selector of
	// the variable its text comes from (a Chatflow's from_variable_selector).
	Data any
}

// End is what message_end reports about a finished answer.
type End struct {
	Usage models.Usage
	// Resources are the knowledge chunks the answer used.
	Resources []store.RetrieverResource
	// Files are the message's files as message_end lists them (nil: none, sent as null).
	Files any
	// Uncited leaves retriever_resources out of message_end (see Outcome.Uncited).
	Uncited bool
	// Annotation is the annotation the answer came from, else nil.
	Annotation *AnnotationReply
	// FinishReason is Outcome.FinishReason (no event carries it; the OpenAI-compatible API
	// reports it).
	FinishReason string
}
