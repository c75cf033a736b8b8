// Package safeerr is how a domain package says which of its errors carry text written for API
// clients. Such an error has a SafeMessage method; its Error() may say more (ids, addresses,
// the cause) and belongs in logs only.
//
// The packages that show a failure to a client — server/ in a response or an `error` event, the
// knowledge indexer in a document's `error` field, a run in its stored answer — all ask Message,
// so one failure reads the same wherever it is shown. Choosing an HTTP status and code stays
// with server/.
package safeerr

import "errors"

// Error is an error whose SafeMessage is fit to show to an API client: no internal addresses,
// SQL, keys or upstream bodies, and bounded in length.
type Error interface {
	error
	SafeMessage() string
}

// Message returns the client-safe text of the outermost error in err's chain that has one, and
// false when none has: the caller then shows its own generic text.
func Message(err error) (string, bool) {
	if e, ok := errors.AsType[Error](err); ok {
		return e.SafeMessage(), true
	}
	return "", false
}
