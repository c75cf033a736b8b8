package providers

import (
	"errors"
	"log/slog"
	"unicode/utf8"
)

// Kind classifies a provider failure. The API layer (server/) maps it to a
// Dify error code (docs/dify-compat.md, "Model provider failures"); this
// package does not choose codes.
type Kind string

// Failure kinds.
const (
	// KindCredentials: the key is missing, invalid or not allowed (HTTP
	// 401/403). Dify: provider_not_initialize.
	KindCredentials Kind = "credentials"
	// KindQuota: quota exhausted or rate limited (HTTP 429,
	// insufficient_quota, rate_limit_exceeded). Dify:
	// provider_quota_exceeded (or rate_limit_error for rate limits).
	KindQuota Kind = "quota"
	// KindModel: the model does not exist or is not available to this key
	// (HTTP 404, model_not_found). Dify: model_currently_not_support.
	KindModel Kind = "model"
	// KindInvocation: everything else — 5xx, other 4xx, malformed
	// responses, connection failures, timeouts, truncated streams,
	// cancellation. Dify: completion_request_error.
	KindInvocation Kind = "invocation"
)

// Sentinel errors, wrapped by *Error (test with errors.Is).
var (
	// ErrTruncated means an upstream stream ended (EOF, reset, cut
	// connection) before its terminal marker ([DONE] or a finish_reason):
	// the answer is incomplete and must not be treated as a short answer.
	ErrTruncated = errors.New("upstream stream truncated")
	// ErrTimeout means the provider did not answer in time: no response
	// headers within the configured timeout, or no data for that long in
	// the middle of a body.
	ErrTimeout = errors.New("upstream timed out")
)

// maxMessageRunes bounds Error.Message so that a verbose upstream cannot
// flood client responses or logs.
const maxMessageRunes = 512

// Error is a provider failure. Message is safe to show to API clients: it
// is "[<provider>] <upstream error message or a generic description>", never
// contains the API key, never the raw upstream body beyond the error
// message, and is bounded in length. The cause (network error, decode
// error, sentinel) is kept for errors.Is/As and logs.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// StatusCode is the upstream HTTP status, 0 when there was no HTTP
	// response (network failure) or the failure happened mid-stream.
	StatusCode int
	// Provider is the provider name used in Message.
	Provider string
	// Message is the client-safe description.
	Message string
	// URL is the address the failed request went to; Hint says what may be wrong with the
	// provider's configuration. Both are for the operator's log only (see LogDetails): a
	// provider's address is not the API clients' business.
	URL, Hint string

	cause error
}

// NewError builds an *Error. msg is prefixed with "[provider] " and
// truncated; cause may be nil.
func NewError(provider string, kind Kind, status int, msg string, cause error) *Error {
	if kind == "" {
		kind = KindInvocation
	}
	if msg == "" {
		msg = "request failed"
	}
	return &Error{
		Kind:       kind,
		StatusCode: status,
		Provider:   provider,
		Message:    "[" + provider + "] " + Truncate(msg, maxMessageRunes),
		cause:      cause,
	}
}

// Error returns Message only: the cause may hold details (addresses, decode
// errors) that are for logs, reachable through errors.Unwrap.
func (e *Error) Error() string { return e.Message }

// SafeMessage implements safeerr.Error: Message is written for clients.
func (e *Error) SafeMessage() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// LogDetails implements logctx.Detailer: a line that logs the error also names the URL that
// failed, the cause the message leaves out, and the hint.
func (e *Error) LogDetails() []slog.Attr {
	out := make([]slog.Attr, 0, 3)
	if e.URL != "" {
		out = append(out, slog.String("provider_url", e.URL))
	}
	if e.cause != nil {
		out = append(out, slog.String("provider_cause", e.cause.Error()))
	}
	if e.Hint != "" {
		out = append(out, slog.String("hint", e.Hint))
	}
	return out
}

// KindOf returns the Kind of the first *Error in err's chain, and
// KindInvocation for any other non-nil error. It returns "" for nil.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return KindInvocation
}

// Truncate shortens s to at most n runes, marking the cut with "…".
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}
