package server

import (
	"context"
	_ "embed"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/gen"
)

// ProviderIconPath is where the server serves the icon of a model provider that declares none,
// from the root of its address (beside the probes, outside the API's base path). The models
// listing always sends an icon_small map, pointing here when the config gives no icon.
const ProviderIconPath = "/icons/model-provider.svg"

//go:embed assets/model-provider.svg
var providerIcon []byte

// Assets serves the server's own images (the default provider icon) and passes every other
// request to next.
func Assets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ProviderIconPath {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, r, apiError(http.StatusMethodNotAllowed, "method_not_allowed", msgMethodNotAllowed))
			return
		}
		h := w.Header()
		h.Set("Content-Type", "image/svg+xml")
		h.Set("Cache-Control", "public, max-age=86400")
		h.Set("X-Content-Type-Options", "nosniff")
		// An SVG opened on its own runs no script and loads nothing.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(providerIcon)
	})
}

type originKey struct{}

// linksOrigin is a strict middleware that keeps, for the operations whose answers link to the
// server's own resources (the models listing's default icon), the scheme and host the client
// reached the server at; every other operation runs as it is.
func linksOrigin(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "ListAvailableModels" {
		return f
	}
	return func(c echo.Context, req any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), originKey{}, requestOrigin(r))))
		return f(c, req)
	}
}

// requestOrigin is "scheme://host" of the request, as a reverse proxy in front reports it
// (X-Forwarded-Proto and X-Forwarded-Host) or else as the request itself arrived.
func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := firstForwarded(r.Header.Get("X-Forwarded-Proto")); p == "https" || p == "http" {
		scheme = p
	}
	host := r.Host
	if h := firstForwarded(r.Header.Get("X-Forwarded-Host")); h != "" && !strings.ContainsAny(h, "/ \\@?#") {
		host = h
	}
	return scheme + "://" + host
}

func firstForwarded(v string) string {
	v, _, _ = strings.Cut(v, ",")
	return strings.ToLower(strings.TrimSpace(v))
}

// publicBase is where clients reach the server: the configured public URL, or the origin of
// the request being answered.
func (s *Server) publicBase(ctx context.Context) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	o, _ := ctx.Value(originKey{}).(string)
	return o
}
