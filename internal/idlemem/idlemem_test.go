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
// flight and none ended for a tick, and not while one is in flight; the retained memory goes
// down by most of the burst.
func TestReleaseWhenQuiet(t *testing.T) {
	r := New()
	busy := make(chan struct{})
	done := make(chan struct{})
	h := r.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/hold" {
			close(busy)
			<-done
		}
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/hold", nil))
	<-busy
	burst(128 << 20)
	before := retained()
	for range 2 {
		if r.tick() {
			t.Fatal("released while a request was in flight")
		}
	}
	close(done)
	for r.inflight.Load() != 0 {
		runtime.Gosched()
	}
	if r.tick() {
		t.Fatal("released in the tick a request ended in")
	}
	if !r.tick() {
		t.Fatalf("not released when quiet (retained %d MB, baseline %d MB)", retained()>>20, r.base>>20)
	}
	if after := retained(); before-after < 64<<20 {
		t.Fatalf("retained %d MB before, %d MB after the release", before>>20, after>>20)
	}
	if r.tick() {
		t.Fatal("released again without new memory to return")
	}
}
