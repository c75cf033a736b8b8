// Package idlemem gives memory back to the system when the server falls quiet after a burst.
//
// Go's heap grows with the load (a thousand open streams hold their buffers and goroutine
// stacks) and keeps what it grew: the collector only runs when the program allocates, so a
// server that goes quiet after a burst never collects the garbage the burst left, and the
// memory stays resident until the next burst or the forced collection two minutes later. An
// operator sees a server that never returns to its idle size. The Releaser counts the requests
// in flight; once none has been for a tick, and the heap holds well over what it held after the
// last release, it collects and returns the free memory to the system (debug.FreeOSMemory).
//
// The same holds while long requests stay open with nothing arriving or ending: a thousand
// streams opened in a burst keep the goroutine stacks their handlers grew while they set up
// (validation, the model call), four times what they use while they wait, and the collector,
// which shrinks a stack to what it uses, does not run while they only wait. Once no request has
// started or ended for a tick and the heap holds well over what it held after the last release,
// the Releaser collects then too.
//
// Under steady load it does nothing: requests are always arriving or ending, and the collector
// runs on its own.
package idlemem

import (
	"context"
	"net/http"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// DefaultThreshold is how much more memory than after the last release the heap must hold
// before a quiet server releases it: below it, a collection costs more than it returns.
const DefaultThreshold = 16 << 20

// Releaser watches the requests of an HTTP handler and releases memory when it is quiet.
type Releaser struct {
	inflight atomic.Int64
	started  atomic.Uint64
	served   atomic.Uint64
	// threshold is DefaultThreshold unless a test sets it.
	threshold uint64
	// seenStarted and seenServed are started and served at the last tick; base is the memory
	// retained after the last release, idleBase after the last release with no request in
	// flight (what the open requests hold is not the idle size).
	seenStarted, seenServed uint64
	base, idleBase          uint64
	// releases counts the releases, for tests and logs.
	releases atomic.Int64
}

// New returns a Releaser whose baseline is the memory retained now.
func New() *Releaser {
	now := retained()
	return &Releaser{threshold: DefaultThreshold, base: now, idleBase: now}
}

// Wrap counts h's requests in flight, streams included until they end.
func (r *Releaser) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.started.Add(1)
		r.inflight.Add(1)
		defer func() {
			r.inflight.Add(-1)
			r.served.Add(1)
		}()
		h.ServeHTTP(w, req)
	})
}

// Run checks every interval, until ctx ends, whether to release.
func (r *Releaser) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.tick()
		}
	}
}

// Releases is how many times memory was released.
func (r *Releaser) Releases() int64 { return r.releases.Load() }

// tick releases when no request started or ended since the last tick and the heap retains at
// least the threshold more than after the last release (with none in flight: than after the
// last release with none in flight). It reports whether it released.
func (r *Releaser) tick() bool {
	started, served := r.started.Load(), r.served.Load()
	settled := started == r.seenStarted && served == r.seenServed
	r.seenStarted, r.seenServed = started, served
	if !settled {
		return false
	}
	idle := r.inflight.Load() == 0
	base := r.base
	if idle {
		base = r.idleBase
	}
	if retained() < base+r.threshold {
		return false
	}
	debug.FreeOSMemory()
	r.base = retained()
	if idle {
		r.idleBase = r.base
	}
	r.releases.Add(1)
	return true
}

// retainedMetrics are the memory the Go runtime holds from the system, and the part of it it
// has already returned.
var retainedMetrics = []string{"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes"}

// retained is the memory the runtime holds and has not returned to the system.
func retained() uint64 {
	s := []metrics.Sample{{Name: retainedMetrics[0]}, {Name: retainedMetrics[1]}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
