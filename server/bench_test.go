package server

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// BenchmarkModelsListing is one whole request through the stack (body limit, response
// validation, request validation with key lookup, handler) with response validation off and
// enforced; the difference is the response validator's cost per JSON request.
func BenchmarkModelsListing(b *testing.B) {
	for _, mode := range []ValidationMode{ValidationOff, ValidationEnforce} {
		b.Run("response_validation="+string(mode), func(b *testing.B) {
			f := newFixture(b, mode)
			b.ReportAllocs()
			for b.Loop() {
				rec := f.do("GET", "/v1/workspaces/current/models/model-types/llm", f.kbKey, "", "")
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// BenchmarkRequestValidation is the request validator alone (route lookup, security with a real
// key lookup on SQLite, JSON body against ChatRequest) on a chat request, against a bare
// handler on the same route: the difference is its cost per request.
func BenchmarkRequestValidation(b *testing.B) {
	const body = `{"query":"What can you do?","inputs":{"name":"Ada"},"user":"abc-123","response_mode":"streaming","files":null}`
	f := newFixture(b, ValidationOff)
	f.e.POST("/v1/chat-messages", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	b.Run("validated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rec := f.do("POST", "/v1/chat-messages", f.appKey, "application/json", body); rec.Code != http.StatusNoContent {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
	bare := echo.New()
	bare.POST("/v1/chat-messages", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest("POST", "/v1/chat-messages", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+f.appKey)
			rec := httptest.NewRecorder()
			bare.ServeHTTP(rec, req)
		}
	})
}

// BenchmarkStreamValidation streams 100 events (a ping, 98 message chunks, message_end)
// through the response validator, off and enforced; ns/event is reported per event.
func BenchmarkStreamValidation(b *testing.B) {
	const env = `"conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22"`
	const usage = `{"prompt_tokens":12,"prompt_unit_price":"0.15","prompt_price_unit":"0.000001","prompt_price":"0.0000018","completion_tokens":98,"completion_unit_price":"0.60","completion_price_unit":"0.000001","completion_price":"0.0000588","total_tokens":110,"total_price":"0.0000606","currency":"USD","latency":0.42}`
	frames := [][]byte{[]byte("event: ping\n\n")}
	for i := range 98 {
		frames = append(frames, []byte(`data: {"event":"message",`+env+`,"answer":"token`+strconv.Itoa(i)+` ","from_variable_selector":null}`+"\n\n"))
	}
	frames = append(frames, []byte(`data: {"event":"message_end",`+env+`,"metadata":{"usage":`+usage+`,"retriever_resources":[]},"files":null}`+"\n\n"))
	const body = `{"query":"hi","inputs":{},"user":"u","response_mode":"streaming"}`
	for _, mode := range []ValidationMode{ValidationOff, ValidationEnforce} {
		b.Run("response_validation="+string(mode), func(b *testing.B) {
			f := newFixture(b, mode)
			f.e.POST("/v1/chat-messages", func(c echo.Context) error {
				c.Response().Header().Set("Content-Type", "text/event-stream")
				c.Response().WriteHeader(http.StatusOK)
				for _, fr := range frames {
					if _, err := c.Response().Write(fr); err != nil {
						return err
					}
					c.Response().Flush()
				}
				return nil
			})
			b.ReportAllocs()
			for b.Loop() {
				rec := f.do("POST", "/v1/chat-messages", f.appKey, "application/json", body)
				if rec.Code != http.StatusOK || f.srv.Violations() != 0 {
					b.Fatalf("status %d, violations %d", rec.Code, f.srv.Violations())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(frames)), "ns/event")
		})
	}
}

// BenchmarkCheckEvent is the validation of one message event on its own.
func BenchmarkCheckEvent(b *testing.B) {
	f := newFixture(b, ValidationEnforce)
	frame := []byte(`data: {"event":"message","conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"Hello","from_variable_selector":null}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.srv.validator.CheckEvent("sendChatMessage", frame); err != nil {
			b.Fatal(err)
		}
	}
}
