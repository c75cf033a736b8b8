package server

import (
	"context"
	"net/http"
	"time"

	"github.com/parleyhq/parley/internal/sse"
)

// startStream sends a stream's headers and returns its writer; the caller ends it with
// endStream.
func (s *Server) startStream(w http.ResponseWriter) *sse.Writer {
	sse.Headers(w)
	w.WriteHeader(http.StatusOK)
	s.metrics.StreamOpened()
	return sse.NewWriter(w, s.streamStall)
}

// endStream closes a stream startStream started.
func (s *Server) endStream(out *sse.Writer) {
	out.Close()
	s.metrics.StreamClosed()
}

// frameSource gives a Server-Sent Events stream its frames: a live run's events, or a run's
// events read back from the event log.
type frameSource interface {
	// next waits at most wait for what comes next and queues it on out (out.Queue, or out.Ping
	// for a keep-alive the source asks for), then says whether the stream ends after it. An
	// error ends the stream at once: the client went, a write failed, or the source failed.
	next(ctx context.Context, wait time.Duration, out *sse.Writer) (end bool, err error)
}

// pump is the one writer loop of every stream: it writes what src gives until src ends the
// stream (true), or the client goes, a write fails, ctx ends or src fails (false). What one
// call of next queued goes out in one flush, so under load a stream gets one write per burst
// rather than one per event; a stream that wrote nothing for ping gets a keep-alive.
func pump(ctx context.Context, out *sse.Writer, src frameSource, ping time.Duration) bool {
	for {
		wait := ping - time.Since(out.LastWrite())
		if wait <= 0 {
			if out.Ping() != nil {
				return false
			}
			continue
		}
		end, err := src.next(ctx, wait, out)
		if err != nil || ctx.Err() != nil {
			return false
		}
		if out.Flush() != nil {
			return false
		}
		if end {
			return true
		}
	}
}
