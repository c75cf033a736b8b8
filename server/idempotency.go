package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/internal/store"
)

// This file makes the POSTs that start work idempotent with an Idempotency-Key header, with
// Stripe's semantics (docs/idempotency.md): the same key and request within 24 hours get the
// first answer again, byte for byte (a stream once it has ended); the same key with another
// request gets 422; a retry while the first request is still answered gets 409. The records
// are in the database, so every replica sees them.

// IdempotencyStore keeps the records of idempotency keys; *store.Store implements it.
type IdempotencyStore interface {
	BeginIdempotent(ctx context.Context, scope, key string, hash []byte, now, expiredBefore, staleBefore time.Time) (store.Idempotent, bool, error)
	TouchIdempotent(ctx context.Context, scope, key string, now time.Time) error
	FinishIdempotent(ctx context.Context, scope, key string, status int, contentType string, body []byte, now time.Time) error
	ForgetIdempotent(ctx context.Context, scope, key string) error
}

// Bounds of idempotency keys.
const (
	// IdempotencyTTL is how long a key's answer is kept for its retries.
	IdempotencyTTL = 24 * time.Hour
	// idempotencyBeat is how often a running request's record is touched; one untouched for
	// idempotencyStale belongs to a server that died, and a retry may run it again.
	idempotencyBeat  = 20 * time.Second
	idempotencyStale = 90 * time.Second
	// maxIdempotencyKey bounds the header's length.
	maxIdempotencyKey = 255
	// maxKeptAnswer bounds an answer kept for replay; a longer one is not kept, and a retry
	// runs the request again.
	maxKeptAnswer = 4 << 20
)

// idempotentRoutes are the operations that take an Idempotency-Key: those that start work.
var idempotentRoutes = map[string]bool{}

func init() {
	for _, r := range []string{"/chat-messages", "/completion-messages", "/workflows/run", "/workflows/:workflow_id/run",
		"/files/upload", "/datasets/:dataset_id/document/create-by-text", "/datasets/:dataset_id/document/create_by_text",
		"/datasets/:dataset_id/document/create-by-file", "/datasets/:dataset_id/document/create_by_file",
		"/chat/completions", "/responses"} {
		idempotentRoutes[BasePath+r] = true
	}
}

func errIdempotencyMismatch() *APIError {
	return apiError(http.StatusUnprocessableEntity, "idempotency_key_mismatch",
		"This Idempotency-Key was used with a different request; use a new key for a new request.")
}

func errIdempotencyInUse() *APIError {
	return apiError(http.StatusConflict, "idempotency_key_in_use",
		"A request with this Idempotency-Key is still being answered; retry once it is done.")
}

// idempotent runs the request of an Idempotency-Key once (see the file comment). It runs after
// the request validator and the rate limits: a request they refuse keeps no record.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get("Idempotency-Key")
		if key == "" || s.idempotency == nil || req.Method != http.MethodPost || !idempotentRoutes[c.Path()] {
			return next(c)
		}
		if len(key) > maxIdempotencyKey || strings.IndexFunc(key, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			return errInvalidParam("Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.")
		}
		p, ok := principalFrom(req.Context())
		if !ok {
			return next(c)
		}
		hash, err := requestFingerprint(c)
		if err != nil {
			return err
		}
		ctx := req.Context()
		now := time.Now()
		rec, began, err := s.idempotency.BeginIdempotent(ctx, p.KeyID, key, hash, now, now.Add(-IdempotencyTTL), now.Add(-idempotencyStale))
		if errors.Is(err, store.ErrConflict) {
			rec, began, err = s.idempotency.BeginIdempotent(ctx, p.KeyID, key, hash, now, now.Add(-IdempotencyTTL), now.Add(-idempotencyStale))
		}
		switch {
		case err != nil:
			return err
		case !began && !bytes.Equal(rec.RequestHash, hash):
			return errIdempotencyMismatch()
		case !began && rec.Status != store.IdempotencyDone:
			return errIdempotencyInUse()
		case !began:
			h := c.Response().Header()
			h.Set(echo.HeaderContentType, rec.ContentType)
			h.Set("Idempotent-Replayed", "true")
			c.Response().WriteHeader(rec.ResponseStatus)
			_, err := c.Response().Write(rec.Body)
			return err
		}
		return s.runIdempotent(c, next, p.KeyID, key)
	}
}

// runIdempotent answers the request of a key that began, keeping the answer: a success or a
// refusal the handler made (4xx) is kept; a server error, or an answer too long to keep, is
// forgotten, so that a retry runs the request again.
func (s *Server) runIdempotent(c echo.Context, next echo.HandlerFunc, scope, key string) error {
	ctx := context.WithoutCancel(c.Request().Context())
	stop := make(chan struct{})
	var beats sync.WaitGroup
	beats.Go(func() {
		t := time.NewTicker(idempotencyBeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				if err := s.idempotency.TouchIdempotent(ctx, scope, key, now); err != nil {
					s.log.WarnContext(ctx, "keep an idempotency key alive", "error", err)
				}
			}
		}
	})
	tee := &teeWriter{ResponseWriter: c.Response().Writer}
	c.Response().Writer = tee
	herr := next(c)
	c.Response().Writer = tee.ResponseWriter
	close(stop)
	beats.Wait()

	status, contentType, body := tee.status, c.Response().Header().Get(echo.HeaderContentType), tee.buf.Bytes()
	if herr != nil {
		e := toAPIError(herr, c.Request())
		status, body = e.render(c.Request())
		contentType = echo.MIMEApplicationJSON
	}
	finishCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var err error
	if status == 0 || status >= 500 || tee.over {
		err = s.idempotency.ForgetIdempotent(finishCtx, scope, key)
	} else {
		err = s.idempotency.FinishIdempotent(finishCtx, scope, key, status, contentType, body, time.Now())
	}
	if err != nil {
		s.log.ErrorContext(ctx, "keep the answer of an idempotency key", slog.String("status", strconv.Itoa(status)), "error", err)
	}
	return herr
}

// requestFingerprint is what tells one request from another under one key: the operation and
// its body (a JSON body as the validator decoded it, so spacing and member order do not count;
// any other body as its bytes, read whole within the body cap and given back to the handler).
func requestFingerprint(c echo.Context) ([]byte, error) {
	req := c.Request()
	h := sha256.New()
	h.Write([]byte(req.Method + " " + req.URL.Path + "\n"))
	if vb, ok := req.Body.(interface{ ValidatedValue() any }); ok {
		b, err := json.Marshal(vb.ValidatedValue())
		if err != nil {
			return nil, err
		}
		h.Write(b)
		return h.Sum(nil), nil
	}
	if req.Body != nil {
		raw, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(raw))
		h.Write([]byte(req.Header.Get(echo.HeaderContentType) + "\n"))
		h.Write(raw)
	}
	return h.Sum(nil), nil
}

// teeWriter copies a response as it is written, up to maxKeptAnswer.
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
	over   bool
}

func (w *teeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.over {
		if w.buf.Len()+len(p) > maxKeptAnswer {
			w.over = true
			w.buf.Reset()
		} else {
			w.buf.Write(p)
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush and Unwrap keep the stream's flushes and write deadlines reaching the connection.
func (w *teeWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
