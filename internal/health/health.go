// Package health answers the probes of load balancers and orchestrators — GET /health
// (liveness: the process serves) and GET /ready (readiness: its database and, when
// configured, Redis answer) — and names the failure of a dependency that could not be
// reached, which the API answers 503.
//
// The probes are plain HTTP handlers in front of the API rather than operations of the
// OpenAPI contract: the contract describes the Service API under /v1, with a key on every
// request, and its code generator mounts every operation under that base (it ignores a
// path's own servers), whereas probes live at the root, take no key, and are not for API
// clients.
package health

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// UnavailableError is the failure of an operation that could not reach a dependency the
// replica needs (PostgreSQL, Redis): refused, reset or timed out. It is temporary by nature:
// the API answers 503 and the replica recovers by itself when the dependency is back.
type UnavailableError struct {
	// Dependency is what could not be reached: "database" or "redis".
	Dependency string
	Err        error
}

func (e *UnavailableError) Error() string { return e.Dependency + " unavailable: " + e.Err.Error() }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Check is one dependency readiness depends on.
type Check struct {
	// Name is how /ready names it: "database", "redis".
	Name string
	// Ping answers nil when the dependency is reachable.
	Ping func(ctx context.Context) error
}

// Paths of the probes.
const (
	LivenessPath  = "/health"
	ReadinessPath = "/ready"
)

// CheckTimeout bounds each readiness check, so a probe answers within it whatever a
// dependency does.
const CheckTimeout = 3 * time.Second

// Status is the body of both probes.
type Status struct {
	// Status is "ok" (/health), "ready" or "unavailable" (/ready).
	Status string `json:"status"`
	// Checks gives each dependency's state, "up" or "down" (/ready only).
	Checks map[string]string `json:"checks,omitempty"`
}

// Handler serves the probes and passes every other request to next.
func Handler(next http.Handler, log *slog.Logger, checks ...Check) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	r := &readiness{checks: checks, log: log, down: map[string]bool{}}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case LivenessPath:
			probe(w, req, func() (int, Status) { return http.StatusOK, Status{Status: "ok"} })
		case ReadinessPath:
			probe(w, req, func() (int, Status) { return r.check(req.Context()) })
		default:
			next.ServeHTTP(w, req)
		}
	})
}

func probe(w http.ResponseWriter, req *http.Request, answer func() (int, Status)) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	code, st := answer()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if req.Method == http.MethodGet {
		_ = json.NewEncoder(w).Encode(st)
	}
}

type readiness struct {
	checks []Check
	log    *slog.Logger
	mu     sync.Mutex
	down   map[string]bool // the last state logged, to log changes only
}

// check runs every check at once, each bounded by CheckTimeout.
func (r *readiness) check(ctx context.Context) (int, Status) {
	errs := make([]error, len(r.checks))
	var wg sync.WaitGroup
	for i, c := range r.checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			errs[i] = c.Ping(cctx)
		})
	}
	wg.Wait()
	st := Status{Status: "ready", Checks: map[string]string{}}
	code := http.StatusOK
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.checks {
		state := "up"
		if errs[i] != nil {
			state, st.Status, code = "down", "unavailable", http.StatusServiceUnavailable
		}
		st.Checks[c.Name] = state
		if was := r.down[c.Name]; was != (errs[i] != nil) {
			r.down[c.Name] = errs[i] != nil
			if errs[i] != nil {
				r.log.Warn("a dependency is down; /ready answers 503", "dependency", c.Name, "error", errs[i])
			} else {
				r.log.Info("a dependency is back", "dependency", c.Name)
			}
		}
	}
	return code, st
}
