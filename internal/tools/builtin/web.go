package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/tools"
)

// Limits of the web-page reader.
const (
	maxRedirects     = 10
	maxURLLen        = 2048
	maxUserAgentLen  = 512
	defaultUserAgent = "Mozilla/5.0 (compatible; Parley web reader)"
)

// errFetch wraps what went wrong fetching a page.
var errFetch = errors.New("cannot read the page")

func webSpecs(opts Options) []spec {
	client, err := netguard.Client(opts.HTTPClient, opts.AllowPrivateNetworks, checkPageRedirect)
	if err != nil {
		panic(fmt.Sprintf("builtin: Options.HTTPClient: %v (set AllowPrivateNetworks to use it as is)", err))
	}
	r := &pageReader{client: client, timeout: opts.PageTimeout, maxBytes: opts.MaxPageBytes}
	return []spec{{
		provider: "webscraper", name: "webscraper", label: "Web Scraper",
		description: "Reads a web page and returns its text as Markdown.",
		parameters: schema([]string{"url"},
			[3]string{"url", "string", "the http(s) URL of the page"},
			[3]string{"user_agent", "string", "the User-Agent header to send"}),
		run: r.run,
	}}
}

// checkPageRedirect follows at most maxRedirects redirects, to http or https only.
func checkPageRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("%w: stopped after %d redirects", errFetch, maxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect to a %q URL", errFetch, req.URL.Scheme)
	}
	return nil
}

type pageReader struct {
	client   *http.Client
	timeout  time.Duration
	maxBytes int64
}

// run fetches the page (through the network guard, within the timeout, at most maxBytes of it)
// and converts it to Markdown; plain text is returned as is. generate_summary, which asks Dify to
// summarise the page with a model, is ignored: the agent's model reads the page itself.
func (r *pageReader) run(ctx context.Context, a args) (string, error) {
	raw, err := a.required("url")
	if err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil || len(raw) > maxURLLen || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: url must be an absolute http(s) URL", tools.ErrBadArguments)
	}
	ua := a.str("user_agent")
	if ua == "" || len(ua) > maxUserAgentLen || strings.ContainsAny(ua, "\r\n") {
		ua = defaultUserAgent
	}
	fetchCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fetchCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", tools.ErrBadArguments, err)
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1")
	resp, err := r.client.Do(req)
	if err != nil {
		return "", r.fetchError(ctx, fetchCtx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("%w: the server answered %s", errFetch, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.maxBytes+1))
	if err != nil {
		return "", r.fetchError(ctx, fetchCtx, err)
	}
	truncated := int64(len(body)) > r.maxBytes
	if truncated {
		body = body[:r.maxBytes]
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var text string
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml" || (mediaType == "" && looksLikeHTML(body)):
		doc, err := extract.Extract(ctx, "page.html", bytes.NewReader(body), int64(len(body)))
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("%w: %w", errFetch, err)
		}
		text = doc.Text
	case strings.HasPrefix(mediaType, "text/") || mediaType == "application/json" || mediaType == "":
		text = strings.ToValidUTF8(string(body), "\uFFFD")
	default:
		return "", fmt.Errorf("%w: the page is %s, not text or HTML", errFetch, mediaType)
	}
	if truncated {
		text += fmt.Sprintf("\n\n[The page was cut off after %d bytes.]", r.maxBytes)
	}
	return text, nil
}

func looksLikeHTML(b []byte) bool {
	head := strings.ToLower(string(b[:min(len(b), 512)]))
	return strings.Contains(head, "<html") || strings.Contains(head, "<!doctype html")
}

// fetchError says why a fetch failed without repeating the URL (it may carry credentials).
func (r *pageReader) fetchError(ctx, fetchCtx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, netguard.ErrForbidden):
		return fmt.Errorf("%w: the address is not allowed (internal network)", errFetch)
	case errors.Is(err, errFetch):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case fetchCtx.Err() != nil:
		return fmt.Errorf("%w: no complete answer within %s", errFetch, r.timeout)
	default:
		return fmt.Errorf("%w: %w", errFetch, err)
	}
}
