package knowledge

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/segment"
)

// TestErrorMatchesItsSentinel: a sentinel that picked up a cause (ErrNoEmbeddingModel with the
// catalog's lookup failure) still matches the sentinel, so callers and server/ can test for it;
// an error of another kind or message does not.
func TestErrorMatchesItsSentinel(t *testing.T) {
	cause := errors.New("catalog: model text-embedding-9 not configured")
	err := fmt.Errorf("create dataset: %w", ErrNoEmbeddingModel.withCause(cause))
	if !errors.Is(err, ErrNoEmbeddingModel) {
		t.Fatal("a sentinel with a cause no longer matches the sentinel")
	}
	if !errors.Is(err, cause) {
		t.Fatal("the cause is lost")
	}
	if errors.Is(err, ErrDatasetNotFound) || errors.Is(notFound("Document Not Exists."), ErrDocumentNotFound) {
		t.Fatal("errors of another kind or message match")
	}
	var ke *Error
	if !errors.As(err, &ke) || ke.Kind != KindNoEmbeddingModel {
		t.Fatalf("kind: %v", err)
	}
	// The log sees the cause; a client sees only the message.
	if !strings.Contains(err.Error(), cause.Error()) {
		t.Fatalf("Error() %q hides the cause from the log", err.Error())
	}
	if msg, _ := safeerr.Message(err); msg != ErrNoEmbeddingModel.Message {
		t.Fatalf("safe message %q", msg)
	}
}

// TestFailureMessage: a document's error is the failure's client-safe text — the one server/
// answers the same failure with — and a generic sentence for anything that may name internals.
func TestFailureMessage(t *testing.T) {
	const generic = "Indexing failed because of an internal error."
	for _, tc := range []struct {
		err  error
		want string
	}{
		{interruptedError(3), "Indexing was interrupted 3 times (the server stopped while indexing this document) and was given up."},
		{fmt.Errorf("knowledge: index: %w", &extract.Error{Kind: extract.KindEncrypted, Message: "The PDF file is encrypted."}), "The PDF file is encrypted."},
		{fmt.Errorf("knowledge: index: %w", &segment.LengthError{Max: 1000, Got: 2000}), "Custom segment length should be between 50 and 1000."},
		{ErrNoEmbeddingModel.withCause(errors.New("dial tcp 10.0.0.7:443: refused")), ErrNoEmbeddingModel.Message},
		{fmt.Errorf("embed: %w", providers.NewError("openai", providers.KindQuota, 429, "You exceeded your quota", nil)), "[openai] You exceeded your quota"},
		{fmt.Errorf("files: fetch http://10.0.0.7/doc: %w", files.ErrRemoteFetch), files.MsgRemoteNotFetch},
		{fmt.Errorf("knowledge: index: %w", errors.New(`pq: relation "segments" does not exist`)), generic},
	} {
		if got := failureMessage(tc.err); got != tc.want {
			t.Errorf("failureMessage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
