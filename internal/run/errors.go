package run

import (
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/tasks"
)

// Errors a request can be refused with before it is accepted.
var (
	// ErrConversationNotFound: no such conversation for this app and end user.
	ErrConversationNotFound = errors.New("conversation not found")
	// ErrConversationEnded: the conversation has ended; a new one must be started.
	ErrConversationEnded = errors.New("conversation has ended")
	// ErrInvalidConversationID: the conversation id is not a UUID.
	ErrInvalidConversationID = errors.New("conversation_id must be a valid UUID")
	// ErrStreamingOnly: the app answers in streaming mode only.
	ErrStreamingOnly = errors.New("app supports streaming mode only")
	// ErrModeNotSupported: the app's mode has no runner in this server yet.
	ErrModeNotSupported = errors.New("app mode not supported")
	// ErrShuttingDown: the server is stopping and accepts no new runs. It is also the cause of
	// the context of runs cut short by shutdown.
	ErrShuttingDown = errors.New("server is shutting down")
)

// ErrStopped is the cause of the context of a run stopped through the stop operation.
var ErrStopped = tasks.ErrStopped

// LimitError is the per-app concurrency cap refusing a request.
type LimitError struct {
	AppID string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("too many concurrent requests for app %s (limit %d)", e.AppID, e.Limit)
}

// InterruptedError is the error of a message whose run was interrupted by the end of its
// process (a crash, a kill) before the answer was complete; the answer stored so far is kept.
const InterruptedError = "The server stopped before the answer was complete."

// storedError is the error text kept with a failed answer, which its history shows: what the
// stream's error event told the client, never the internal cause (addresses, SQL), which the
// run's log line keeps.
func storedError(err error) string {
	if msg, ok := safeerr.Message(err); ok {
		return msg
	}
	return "Internal Server Error."
}

// ReportedError is the failure of a run whose job already told its client how it ended (a
// Workflow app's workflow_finished with status failed): the engine stores the failure and sends
// no error event of its own.
type ReportedError struct{ Err error }

func (e *ReportedError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *ReportedError) Unwrap() error { return e.Err }
