package idlemem

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// sink keeps the burst's allocations reachable until the burst ends.
var sink [][]byte

// burst allocates n bytes in small blocks, as many streams would, and lets them go.
func burst(n int) {
	for i := 0; i < n/(64<<10); i++ {
		sink = append(sink, make([]byte, 64<<10))
	}
	sink = nil
}

// TestReleaseWhenQuiet: after a burst of requests, memory is released once no request is in
// flight and none started or ended for a tick, and not in the tick a request ended in; the
// retained memory goes down by most of the burst.
func TestReleaseWhenQuiet(t *testing.T) {
	r := New()
	h := r.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { burst(128 << 20) }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	before := retained()
	if r.tick() {
		t.Fatal("released in the tick a request ended in")
	}
	if !r.tick() {
		t.Fatalf("not released when quiet (retained %d MB, baseline %d MB)", retained()>>20, r.idleBase>>20)
	}
	if after := retained(); before-after < 64<<20 {
		t.Fatalf("retained %d MB before, %d MB after the release", before>>20, after>>20)
	}
	if r.tick() {
		t.Fatal("released again without new memory to return")
	}
}

// TestReleaseWhileRequestsWait: memory is released while long requests stay open, once none
// started or ended for a tick (streams that only wait), not while they come and go; and the
// release does not move the idle baseline, so that the memory the open requests held is
// released again once they end.
func TestReleaseWhileRequestsWait(t *testing.T) {
	r := New()
	busy := make(chan struct{})
	done := make(chan struct{})
	var held []byte
	h := r.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/hold" {
			held = make([]byte, 48<<20) // what the open requests hold until they end
			for i := range held {
				held[i] = 1
			}
			close(busy)
			<-done
			held = nil
		}
	}))
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/hold", nil))
	<-busy
	burst(128 << 20)
	before := retained()
	if r.tick() {
		t.Fatal("released in the tick a request started in")
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if r.tick() {
		t.Fatal("released in the tick a request came and went in")
	}
	if !r.tick() {
		t.Fatalf("not released while the open request only waited (retained %d MB, baseline %d MB)", retained()>>20, r.base>>20)
	}
	if after := retained(); before-after < 64<<20 {
		t.Fatalf("retained %d MB before, %d MB after the release", before>>20, after>>20)
	}
	if r.tick() {
		t.Fatal("released again without new memory to return")
	}
	close(done)
	for r.inflight.Load() != 0 {
		runtime.Gosched()
	}
	if r.tick() {
		t.Fatal("released in the tick a request ended in")
	}
	if !r.tick() {
		t.Fatalf("what the open request held was not released once it ended (retained %d MB, idle baseline %d MB)", retained()>>20, r.idleBase>>20)
	}
}
