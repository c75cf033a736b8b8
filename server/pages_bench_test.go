package server

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkPagePath is one streamed chat message through the app page's path next to the same
// message with an app key, in the same run, alternating so that both see the same machine:
//
//   - key: POST /v1/chat-messages with the app key (the Service API);
//   - page: the same request with the page's passport as bearer token (a returning visitor);
//   - visit: a first visit, the page's HTML, a new passport, then the message.
//
// It reports each path's time per message and the ratios page/key and visit/key: the page's
// path should cost no more than the app key's (a ratio near 1).
func BenchmarkPagePath(b *testing.B) {
	s := newBenchStack(b, ValidationLog)
	passport := func(previous string) string {
		req := httptest.NewRequest("GET", "/v1/passport", nil)
		req.Header.Set("X-App-Code", s.siteCode)
		if previous != "" {
			req.Header.Set("Authorization", "Bearer "+previous)
		}
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		var out struct {
			AccessToken string `json:"access_token"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.AccessToken == "" {
			b.Fatalf("passport: %d %s", rec.Code, rec.Body)
		}
		return out.AccessToken
	}
	page := func() {
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, httptest.NewRequest("GET", "/chat/"+s.siteCode, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), s.siteCode) {
			b.Fatalf("page: %d %s", rec.Code, rec.Body)
		}
	}
	message := func(bearer string, i int) {
		rec := post(b, s.h, "/v1/chat-messages", bearer, fmt.Sprintf(`{"query":"hi","inputs":{},"user":"u%d","response_mode":"streaming","auto_generate_name":false}`, i))
		if !strings.Contains(rec.Body.String(), `"event":"message_end"`) {
			b.Fatalf("no message_end: %s", rec.Body)
		}
	}
	returning := passport("")
	var key, pp, visit time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		t0 := time.Now()
		message(s.chatKey, n)
		t1 := time.Now()
		message(returning, n)
		t2 := time.Now()
		page()
		message(passport(""), n)
		t3 := time.Now()
		key += t1.Sub(t0)
		pp += t2.Sub(t1)
		visit += t3.Sub(t2)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(key), "key-ns/msg")
	b.ReportMetric(per(pp), "page-ns/msg")
	b.ReportMetric(per(visit), "visit-ns/msg")
	b.ReportMetric(per(pp)/per(key), "page/key")
	b.ReportMetric(per(visit)/per(key), "visit/key")
}
