package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/parleyhq/parley/internal/netguard"
)

// Client-safe descriptions of the remote-fetch errors (see [RemoteErrorMessage]).
const (
	MsgInvalidURL     = "Invalid file URL."
	MsgRemoteRefused  = "The remote file is not allowed."
	MsgRemoteNotFetch = "The remote file could not be fetched."
)

// RemoteErrorMessage gives the text a client may see for a remote-fetch error, or false for
// an error of another kind. The errors themselves name addresses and the resolver, which
// belong in the log only. The remote-fetch sentinels carry the same text as their SafeMessage,
// so safeerr.Message gives it too.
func RemoteErrorMessage(err error) (string, bool) {
	switch {
	case errors.Is(err, ErrInvalidURL):
		return MsgInvalidURL, true
	case errors.Is(err, ErrRemoteForbidden):
		return MsgRemoteRefused, true
	case errors.Is(err, ErrRemoteFetch):
		return MsgRemoteNotFetch, true
	}
	return "", false
}

// MaxRedirects is how many redirects a remote fetch follows.
const MaxRedirects = 5

// Remote is a file fetched by [Service.FetchRemote].
type Remote struct {
	// Data is the whole content, at most RemoteMaxBytes long.
	Data []byte
	// ContentType is the media type, lower case and without parameters:
	// the response's Content-Type, or, when that is missing or
	// application/octet-stream, a guess from the file name's extension and
	// then from the content. Never "".
	ContentType string
	// Filename comes from Content-Disposition, else from the last segment
	// of the final URL's path (after redirects); "" if neither gives one.
	// Any directory part is dropped.
	Filename string
}

// FetchRemote downloads the file at rawURL, an absolute http or https URL
// (else [ErrInvalidURL]). The whole fetch, body included, is bounded by
// RemoteTimeout; at most [MaxRedirects] redirects are followed. Errors:
//
//   - an address refused by the network guard: [ErrRemoteForbidden];
//   - a body over RemoteMaxBytes: [*TooLargeError] (reading stops there);
//   - a non-2xx answer: [*StatusError], which matches [ErrRemoteFetch];
//   - a timeout, too many redirects, or any transport failure: an error
//     wrapping [ErrRemoteFetch] (and context.DeadlineExceeded for a
//     timeout);
//   - ctx ending first: ctx's error, not ErrRemoteFetch.
//
// The errors name addresses, resolvers and transport details, which are for the log only:
// FetchRemote logs each failure, and callers show clients a fixed message per kind.
func (s *Service) FetchRemote(ctx context.Context, rawURL string) (Remote, error) {
	r, err := s.fetchRemote(ctx, rawURL)
	if err != nil && ctx.Err() == nil {
		s.log.InfoContext(ctx, "remote file not fetched", "error", err)
	}
	return r, err
}

func (s *Service) fetchRemote(ctx context.Context, rawURL string) (Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Remote{}, fmt.Errorf("files: fetch: %w", ErrInvalidURL)
	}
	// Errors name the URL for the log; Redacted drops a password.
	where := u.Redacted()

	fetchCtx, cancel := context.WithTimeout(ctx, s.remoteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fetchCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Remote{}, fmt.Errorf("files: fetch %s: %w: %w", where, ErrInvalidURL, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return Remote{}, s.fetchError(ctx, fetchCtx, where, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Remote{}, fmt.Errorf("files: fetch %s: %w", where, &StatusError{StatusCode: resp.StatusCode})
	}
	tooLarge := &TooLargeError{Limit: s.remoteMaxBytes}
	if resp.ContentLength > s.remoteMaxBytes {
		return Remote{}, fmt.Errorf("files: fetch %s: %w", where, tooLarge)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	// One byte past the cap tells "exactly the cap" from "more".
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, s.remoteMaxBytes+1)); err != nil {
		return Remote{}, s.fetchError(ctx, fetchCtx, where, err)
	}
	if int64(buf.Len()) > s.remoteMaxBytes {
		return Remote{}, fmt.Errorf("files: fetch %s: %w", where, tooLarge)
	}

	r := Remote{Data: buf.Bytes(), Filename: remoteFilename(resp)}
	r.ContentType = mediaType(resp.Header.Get("Content-Type"))
	if r.ContentType == "" || r.ContentType == octetStream {
		r.ContentType = detectType(strings.ToLower(rawExtension(r.Filename)), r.Data)
	}
	return r, nil
}

// fetchError classifies a failure of client.Do or of reading the body.
// ctx is the caller's context, fetchCtx the one carrying RemoteTimeout.
func (s *Service) fetchError(ctx, fetchCtx context.Context, where string, err error) error {
	// url.Error repeats the URL (password and all); keep only its cause.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, netguard.ErrForbidden):
		// From the dialer guard.
		return fmt.Errorf("files: fetch %s: %w: %w", where, ErrRemoteForbidden, err)
	case errors.Is(err, ErrRemoteFetch):
		// From checkRedirect; already classified.
		return fmt.Errorf("files: fetch %s: %w", where, err)
	case ctx.Err() != nil:
		return fmt.Errorf("files: fetch %s: %w", where, ctx.Err())
	case fetchCtx.Err() != nil:
		return fmt.Errorf("files: fetch %s: no complete answer within %s: %w: %w", where, s.remoteTimeout, ErrRemoteFetch, context.DeadlineExceeded)
	default:
		return fmt.Errorf("files: fetch %s: %w: %w", where, ErrRemoteFetch, err)
	}
}

// checkRedirect is the fetch client's CheckRedirect: at most MaxRedirects
// hops, and only to http or https.
func checkRedirect(req *http.Request, via []*http.Request) error {
	// via holds the requests made so far, so len(via) is the number of
	// the redirect about to be followed.
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects: %w", MaxRedirects, ErrRemoteFetch)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to a %q URL: %w", req.URL.Scheme, ErrRemoteFetch)
	}
	return nil
}

// remoteFilename picks the name of a fetched file; see [Remote].
func remoteFilename(resp *http.Response) string {
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		// ParseMediaType decodes RFC 2231 filename* into "filename".
		if _, params, err := mime.ParseMediaType(cd); err == nil {
			if name := cleanFilename(params["filename"]); name != "" {
				return name
			}
		}
	}
	if resp.Request == nil || resp.Request.URL == nil {
		return ""
	}
	return cleanFilename(path.Base(resp.Request.URL.Path))
}

// cleanFilename makes a name from a server usable as a stored file name:
// no directory part, no control characters, valid UTF-8, at most
// MaxNameLen characters.
func cleanFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, "\uFFFD"))
	name = strings.TrimSpace(name)
	if name == "." || name == ".." {
		return ""
	}
	return trimName(name, rawExtension(name))
}
