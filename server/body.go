package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/internal/audio"
)

// BodyRate bounds how slowly a client may send a request body, the way Apache's
// mod_reqtimeout does: the body must be complete within Timeout, extended by one second for
// every MinRate bytes received. A client trickling bytes runs out of time; a large upload on a
// slow link keeps going as long as it moves at MinRate or faster.
type BodyRate struct {
	Timeout time.Duration
	// MinRate is in bytes per second; 0 disables the extension (Timeout is then the whole
	// budget).
	MinRate int64
}

// Defaults of BodyRate, as mod_reqtimeout's `body=20,MinRate=500`.
const (
	DefaultBodyTimeout = 20 * time.Second
	DefaultBodyMinRate = 500
)

// errBodyTimeout ends a request whose body came too slowly.
var errBodyTimeout = errors.New("request body not received in time")

// guardBody caps and times the request body before anything reads it.
//
// The cap is http.MaxBytesReader's: when it is hit, net/http itself marks the connection to be
// closed after the reply. The original body is put back on the request when the handler
// returns, because net/http decides whether the connection can be reused by looking at the
// request's Body: behind a wrapper (Echo's body limit, kin-openapi's re-buffered body, ours) it
// cannot see that a handler abandoned the body half-way, and would parse the rest of it as the
// next requests on the connection (request smuggling behind a proxy that reuses connections).
// With the original body back, net/http drains a small remainder or closes the connection.
func guardBody(maxJSON, maxUpload int64, rate BodyRate) echo.MiddlewareFunc {
	if maxJSON <= 0 {
		maxJSON = 1 << 20
	}
	if maxUpload <= 0 {
		maxUpload = 15 << 20
	}
	// Room for the multipart framing and the small fields around the file.
	const formSlack = 64 << 10
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Body == nil || r.Body == http.NoBody {
				return next(c)
			}
			limit := maxJSON
			if strings.HasPrefix(strings.ToLower(r.Header.Get(echo.HeaderContentType)), echo.MIMEMultipartForm) {
				limit = maxUpload + formSlack
				if strings.HasSuffix(r.URL.Path, "/audio-to-text") {
					// Speech to text takes Dify's fixed 30 MB, whatever the upload limits;
					// the handler answers a larger file with audio_too_large.
					limit = max(maxUpload, audio.MaxAudioBytes+1) + formSlack
				}
			}
			// The raw writer, before any middleware wraps it: MaxBytesReader and the read
			// deadline both need net/http's own.
			w := c.Response().Writer
			orig := r.Body
			defer func() { r.Body = orig }()
			if r.ContentLength > limit {
				// Refused before reading: the body stays unread, so the connection must not
				// carry another request.
				c.Response().Header().Set(echo.HeaderConnection, "close")
				return &http.MaxBytesError{Limit: limit}
			}
			body := &timedBody{rc: http.MaxBytesReader(w, orig, limit), ctl: http.NewResponseController(w), rate: rate}
			body.start()
			defer body.stop()
			r.Body = body
			return next(c)
		}
	}
}

// timedBody moves the connection's read deadline forward as the body arrives and clears it
// once the body is read, so that the deadline never reaches a streamed response.
type timedBody struct {
	rc    io.ReadCloser
	ctl   *http.ResponseController
	rate  BodyRate
	begin time.Time
	n     int64
	// armed is set while a body deadline is on the connection.
	armed atomic.Bool
}

func (b *timedBody) start() {
	if b.rate.Timeout <= 0 {
		return
	}
	b.begin = time.Now()
	b.arm()
}

// arm sets the read deadline that the bytes received so far have earned.
func (b *timedBody) arm() {
	d := b.rate.Timeout
	if b.rate.MinRate > 0 {
		d += time.Duration(b.n / b.rate.MinRate * int64(time.Second))
	}
	if b.ctl.SetReadDeadline(b.begin.Add(d)) == nil {
		b.armed.Store(true)
	}
}

// stop clears the body deadline (net/http sets its own before it reads the next request).
func (b *timedBody) stop() {
	if b.armed.CompareAndSwap(true, false) {
		_ = b.ctl.SetReadDeadline(time.Time{})
	}
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.armed.Load() {
		b.n += int64(n)
		b.arm()
	}
	switch {
	case err == io.EOF:
		b.stop()
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("%w after %d bytes: %w", errBodyTimeout, b.n, err)
	}
	return n, err
}

func (b *timedBody) Close() error { return b.rc.Close() }
