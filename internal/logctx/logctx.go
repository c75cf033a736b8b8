// Package logctx carries a request's id in its context and puts it on every log line written
// with that context: wrap the process's slog handler with NewHandler, store the id with
// WithRequestID, and log with the *Context methods (InfoContext, ErrorContext…) or through
// Logger. Work a request starts keeps the id when it keeps the context's values
// (context.WithoutCancel does).
package logctx

import (
	"context"
	"errors"
	"log/slog"
)

// Key is the attribute the id is logged under.
const Key = "request_id"

type ctxKey struct{}

// WithRequestID returns ctx carrying the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID is the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Logger is l with the request id of ctx, if it carries one, on every line.
func Logger(ctx context.Context, l *slog.Logger) *slog.Logger {
	if id := RequestID(ctx); id != "" {
		return l.With(Key, id)
	}
	return l
}

// Handler adds the request id of a record's context to the record.
type Handler struct{ inner slog.Handler }

// NewHandler wraps h; wrapping a Handler again returns it as it is, so the id is never logged
// twice.
func NewHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*Handler); ok {
		return h
	}
	return &Handler{inner: h}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Detailer is an error that has more to tell the log than its message, which is written for
// API clients: a provider's URL, the underlying cause, a hint. A line that logs such an error
// (anywhere in its chain) as an attribute gets those attributes too.
type Detailer interface {
	LogDetails() []slog.Attr
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	var details []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() != slog.KindAny {
			return true
		}
		if err, ok := a.Value.Any().(error); ok {
			var d Detailer
			if errors.As(err, &d) {
				details = append(details, d.LogDetails()...)
			}
		}
		return true
	})
	id := RequestID(ctx)
	if id != "" || len(details) > 0 {
		r = r.Clone()
		r.AddAttrs(details...)
		if id != "" {
			r.AddAttrs(slog.String(Key, id))
		}
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name)}
}
