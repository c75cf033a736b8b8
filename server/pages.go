package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/web"
)

// The app pages: /chat/{code}, /chatbot/{code} (the embedded variant), /completion/{code} and
// /workflow/{code}, their assets under /web-assets/ and the chat bubble's /embed.min.js. They
// are served beside the Service API, not in it: they are not operations of the contract, carry
// no app key, and their script talks to the API under /v1 with a passport of the site code.

// PageSite is what the pages need of a site.
type PageSite struct {
	Code  string
	Mode  string // the app's mode: chat, agent-chat, advanced-chat, completion, workflow
	Title string
	// DefaultLanguage is the pages' language (a BCP 47 tag such as en-US).
	DefaultLanguage string
	// AllowedOrigins may embed the pages in a frame (frame-ancestors); none: no one may.
	AllowedOrigins []string
}

// SiteFinder finds the site of a code; an unknown or disabled code is ErrNoSite.
type SiteFinder interface {
	PageSite(ctx context.Context, code string) (PageSite, error)
}

// ErrNoSite is a site code that is unknown or disabled.
var ErrNoSite = errors.New("no such site")

// SiteFinderFunc adapts a function to SiteFinder.
type SiteFinderFunc func(ctx context.Context, code string) (PageSite, error)

// PageSite implements SiteFinder.
func (f SiteFinderFunc) PageSite(ctx context.Context, code string) (PageSite, error) {
	return f(ctx, code)
}

// serviceSites finds the pages' sites with the sites service.
type serviceSites struct{ s *sites.Service }

func (f serviceSites) PageSite(ctx context.Context, code string) (PageSite, error) {
	site, err := f.s.ByCode(ctx, code)
	if errors.Is(err, sites.ErrNotFound) {
		return PageSite{}, ErrNoSite
	}
	if err != nil {
		return PageSite{}, err
	}
	return PageSite{Code: site.Code, Mode: site.AppMode, Title: site.Title, DefaultLanguage: site.DefaultLanguage, AllowedOrigins: site.AllowedOrigins}, nil
}

const (
	// AssetsPath is where the pages' script, style sheet and fonts are served, by names that
	// carry a hash of their content (cached for a year).
	AssetsPath = "/web-assets/"
	// EmbedScriptPath is the chat bubble's script, at the root as Dify serves it.
	EmbedScriptPath = "/embed.min.js"
)

var (
	siteCodePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// An origin frame-ancestors may list: a scheme and a host (a leading *. allowed), an
	// optional port; or * alone.
	framingOriginPattern = regexp.MustCompile(`^(https?://)(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5}|:\*)?$`)
	languagePattern      = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
)

// pageKinds are the page paths; each app mode has its own page, the chat modes also the
// embedded chatbot.
var pageKinds = map[string]bool{"chat": true, "chatbot": true, "completion": true, "workflow": true}

// pageOf is the page of an app mode.
func pageOf(mode string) string {
	switch mode {
	case "completion":
		return "completion"
	case "workflow":
		return "workflow"
	default:
		return "chat"
	}
}

type pages struct {
	sites    SiteFinder
	assets   fs.FS
	script   string // the hashed names from dist/manifest.json
	style    string
	embedJS  []byte
	shell    *template.Template
	notFound []byte
}

var pageShell = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>{{.Title}}</title>
<link rel="stylesheet" href="../web-assets/{{.Style}}">
<script type="module" src="../web-assets/{{.Script}}"></script>
</head>
<body data-code="{{.Code}}" data-page="{{.Page}}" data-mode="{{.Mode}}" data-lang="{{.Lang}}">
<div id="app"><noscript>This page needs JavaScript.</noscript></div>
</body>
</html>
`))

const notFoundPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not found</title></head>
<body><h1>Not found</h1><p>This app is not available.</p></body></html>
`

// newPages reads the embedded build.
func newPages(sites SiteFinder) (*pages, error) {
	dist, err := fs.Sub(web.Dist, "dist")
	if err != nil {
		return nil, err
	}
	raw, err := fs.ReadFile(dist, "manifest.json")
	if err != nil {
		return nil, fmt.Errorf("web assets: %w (run make web)", err)
	}
	var manifest map[string]string
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return nil, fmt.Errorf("web assets manifest: %w", err)
	}
	p := &pages{sites: sites, script: manifest["app.js"], style: manifest["style.css"], shell: pageShell, notFound: []byte(notFoundPage)}
	if p.script == "" || p.style == "" {
		return nil, fmt.Errorf("web assets manifest names no app.js or style.css")
	}
	if p.assets, err = fs.Sub(dist, "assets"); err != nil {
		return nil, err
	}
	if p.embedJS, err = fs.ReadFile(dist, "embed.min.js"); err != nil {
		return nil, fmt.Errorf("web assets: %w", err)
	}
	return p, nil
}

// serve answers a request for a page, an asset or the bubble's script; it reports false for any
// other path.
func (p *pages) serve(w http.ResponseWriter, r *http.Request) bool {
	urlPath := r.URL.Path
	switch {
	case urlPath == EmbedScriptPath:
		if !getOrHead(w, r) {
			return true
		}
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		// A fixed name that sites link to: cached briefly so a new version reaches them.
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("Access-Control-Allow-Origin", "*")
		writePage(w, r, p.embedJS)
		return true
	case strings.HasPrefix(urlPath, AssetsPath):
		p.asset(w, r, strings.TrimPrefix(urlPath, AssetsPath))
		return true
	}
	kind, code, ok := strings.Cut(strings.TrimPrefix(urlPath, "/"), "/")
	if !ok || !pageKinds[kind] {
		return false
	}
	if !getOrHead(w, r) {
		return true
	}
	if c, slash := strings.CutSuffix(code, "/"); slash && siteCodePattern.MatchString(c) {
		// The page's links are relative to /kind/code: no trailing slash.
		pageHeaders(w.Header(), nil)
		w.Header().Set("Location", "../"+c)
		w.WriteHeader(http.StatusMovedPermanently)
		return true
	}
	if !siteCodePattern.MatchString(code) || p.sites == nil {
		p.missing(w, r)
		return true
	}
	site, err := p.sites.PageSite(r.Context(), code)
	if errors.Is(err, ErrNoSite) {
		p.missing(w, r)
		return true
	}
	if err != nil {
		pageHeaders(w.Header(), nil)
		http.Error(w, "The page is not available right now.", http.StatusServiceUnavailable)
		return true
	}
	want := pageOf(site.Mode)
	if kind != want && (kind != "chatbot" || want != "chat") {
		// The page of the app's kind: a Workflow app's code sent to /chat/ goes to /workflow/.
		target := "../" + want + "/" + code
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		pageHeaders(w.Header(), nil)
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusFound)
		return true
	}
	lang := site.DefaultLanguage
	if lang == "" || !languagePattern.MatchString(lang) {
		lang = "en-US"
	}
	title := site.Title
	if title == "" {
		title = "Parley"
	}
	var buf bytes.Buffer
	err = p.shell.Execute(&buf, map[string]string{"Lang": lang, "Title": title, "Code": code, "Page": kind, "Mode": site.Mode, "Script": p.script, "Style": p.style})
	if err != nil {
		http.Error(w, "The page could not be built.", http.StatusInternalServerError)
		return true
	}
	ancestors := site.AllowedOrigins
	if kind == "chatbot" && len(framingOrigins(ancestors)) == 0 {
		// The embedded variant of a site that lists no origin may still be framed by the
		// server's own pages.
		ancestors = []string{"'self'"}
	}
	pageHeaders(w.Header(), ancestors)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	writePage(w, r, buf.Bytes())
	return true
}

func (p *pages) missing(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w.Header(), nil)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		_, _ = w.Write(p.notFound)
	}
}

// asset serves one file of dist/assets by its hashed name, cached for a year.
func (p *pages) asset(w http.ResponseWriter, r *http.Request, name string) {
	if !getOrHead(w, r) {
		return
	}
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	data, err := fs.ReadFile(p.assets, name)
	if err != nil {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".woff2":
		ct = "font/woff2"
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	writePage(w, r, data)
}

// pageHeaders are the headers of every page: a Content-Security-Policy that lets the page load
// only its own script and style sheet and talk only to its own server (no inline script, no
// eval, no inline style), and may be framed only by the site's allowed origins.
func pageHeaders(h http.Header, allowed []string) {
	h.Set("Content-Security-Policy", PageCSP(allowed))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Permissions-Policy", "camera=(), geolocation=(), microphone=(self)")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if len(framingOrigins(allowed)) == 0 {
		h.Set("X-Frame-Options", "DENY")
	}
}

// PageCSP is the Content-Security-Policy of a page whose site lists allowed as the origins that
// may embed it.
func PageCSP(allowed []string) string {
	ancestors := "'none'"
	if o := framingOrigins(allowed); len(o) > 0 {
		ancestors = strings.Join(o, " ")
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; " +
		"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-src 'none'; " +
		"worker-src 'none'; manifest-src 'self'; frame-ancestors " + ancestors
}

// framingOrigins keeps the allowed origins that frame-ancestors can carry (a scheme and host,
// or *), without a trailing slash; anything else is dropped.
func framingOrigins(allowed []string) []string {
	var out []string
	for _, o := range allowed {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "*" || o == "'self'" || framingOriginPattern.MatchString(o) {
			out = append(out, o)
		}
	}
	return out
}

func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
	return false
}

func writePage(w http.ResponseWriter, r *http.Request, data []byte) {
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(data)
}
