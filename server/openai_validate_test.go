package server

import (
	"strings"
	"testing"
)

// TestCheckOpenAIEvents: the validator checks an OpenAI chat stream's unnamed chunks against
// their own branch (a chunk, or the error object), accepts [DONE] and comment keep-alives, and
// checks a Responses stream's events by their type, with the event: line naming the same.
func TestCheckOpenAIEvents(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	v := f.srv.validator
	chunk := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,` +
		`"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"conversation_id":null,"task_id":"t"}`
	for _, tc := range []struct {
		op, frame string
		ok        bool
	}{
		{"createOpenAIChatCompletion", "data: " + chunk, true},
		{"createOpenAIChatCompletion", "data: [DONE]", true},
		{"createOpenAIChatCompletion", ": ping", true},
		{"createOpenAIChatCompletion", `data: {"error":{"message":"x","type":"server_error","param":null,"code":"c"}}`, true},
		{"createOpenAIChatCompletion", "data: " + strings.Replace(chunk, `"chat.completion.chunk"`, `"chat.completion"`, 1), false},
		{"createOpenAIChatCompletion", "data: " + strings.Replace(chunk, `"id":"chatcmpl-1",`, ``, 1), false},
		{"createOpenAIChatCompletion", `data: {"error":{"message":"x"}}`, false},
		{"createOpenAIChatCompletion", "data: [NOPE]", false},
		{"sendChatMessage", "data: [DONE]", false},
		{"createOpenAIResponse", "event: error\ndata: {\"type\":\"error\",\"sequence_number\":3,\"code\":\"c\",\"message\":\"m\",\"param\":null}", true},
		{"createOpenAIResponse", "event: response.output_text.delta\ndata: {\"type\":\"error\",\"sequence_number\":3,\"code\":\"c\",\"message\":\"m\",\"param\":null}", false},
		{"createOpenAIResponse", "data: {\"type\":\"response.nope\",\"sequence_number\":3}", false},
	} {
		err := v.CheckEvent(tc.op, []byte(tc.frame))
		if (err == nil) != tc.ok {
			t.Errorf("%s %.80q: %v, want ok=%v", tc.op, tc.frame, err, tc.ok)
		}
	}
}
