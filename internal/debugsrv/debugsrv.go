// Package debugsrv is the admin listener of a server (PARLEY_DEBUG_ADDR): Go's profiles
// (net/http/pprof) for an operator who wants to see where a live server spends its CPU and
// memory, and the server's Prometheus metrics at /metrics (internal/metrics). It is off unless configured, on loopback unless a host is given, and never on the
// API's listener: the API is served by its own handler, which knows nothing of these routes.
//
// Importing net/http/pprof also registers its routes on http.DefaultServeMux; nothing in Parley
// serves that mux, and this package mounts the handlers on a mux of its own.
package debugsrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Handler serves the profiles under /debug/pprof/, metrics (when not nil) at /metrics, and a
// short index at /.
func Handler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "Parley admin listener\n\n/debug/pprof/  Go profiles: go tool pprof http://HOST/debug/pprof/profile?seconds=30\n")
		if metrics != nil {
			fmt.Fprint(w, "/metrics       Prometheus metrics\n")
		}
	})
	return mux
}

// maxProfileTime bounds a CPU profile or trace a client asks for (its `seconds`), and with it
// how long one response may take.
const maxProfileTime = 5 * time.Minute

// Server is a running admin listener.
type Server struct {
	srv    *http.Server
	served chan error
	// URL is where it listens, http://host:port.
	URL string
}

// Start listens on addr and serves Handler(metrics) until Shutdown. A listener on anything but
// loopback is logged as a warning: profiles show the process's command line and memory.
func Start(addr string, log *slog.Logger, metrics http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on PARLEY_DEBUG_ADDR %s: %w", addr, err)
	}
	s := &Server{
		srv: &http.Server{Handler: Handler(metrics), ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout: maxProfileTime + 30*time.Second, IdleTimeout: 2 * time.Minute},
		served: make(chan error, 1),
		URL:    "http://" + ln.Addr().String(),
	}
	go func() { s.served <- s.srv.Serve(ln) }()
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		log.Warn("the debug listener is reachable beyond this machine: profiles show the command line and memory of the process",
			"url", s.URL)
	} else {
		log.Info("debug listener", "url", s.URL+"/debug/pprof/")
	}
	return s, nil
}

// Shutdown stops the listener, waiting for its requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if serr := <-s.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
