package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/parleytest"
)

// Budgets of a Chatbot request through the whole in-process stack (newBenchStack: Echo with
// both validators, auth, the run engine, SQLite, the OpenAI client and the fake upstream, whose
// allocations count too), a returning end user each time, naming off (the naming job's cost is
// the jobs package's). Measured on 2026-11-28, the same in three runs: blocking new
// conversation 892 allocations and 8 statements; blocking, continuing a conversation with a
// full history (50 exchanges), 1,727 and 10; streamed new conversation 1,064 and 8. The
// allocation budgets leave about 10% for what scheduling varies; the statements are exact.
var (
	blockingNewBudget       = parleytest.Budget{Allocs: 965, Statements: 7}
	blockingContinuedBudget = parleytest.Budget{Allocs: 1900, Statements: 10}
	streamedNewBudget       = parleytest.Budget{Allocs: 1160, Statements: 7}
)

// TestChatRequestBudgets pins what a Chatbot request costs in allocations and SQL statements
// (parleytest.CheckBudget): a change that adds work on the hot path fails here.
func TestChatRequestBudgets(t *testing.T) {
	s := newBenchStack(t, ValidationLog)
	send := func(body string) string { return post(t, s.h, "/v1/chat-messages", s.chatKey, body).Body.String() }
	// A page's request: the passport is checked with one read of its site, as the key is with
	// one read of the key, so the budget is the same.
	sendPassport := func(body string) string {
		return post(t, s.h, "/v1/chat-messages", s.passport, body).Body.String()
	}
	chat := func(mode, conversation string) string {
		return fmt.Sprintf(`{"query":"hi","inputs":{},"user":"budget","response_mode":%q,"conversation_id":%q,"auto_generate_name":false}`,
			mode, conversation)
	}
	var first struct {
		ConversationID string `json:"conversation_id"`
	}
	if err := json.Unmarshal([]byte(send(chat("blocking", ""))), &first); err != nil || first.ConversationID == "" {
		t.Fatalf("first chat: %v", err)
	}
	// The continued conversation's history is full from the start (historyWindow exchanges), so
	// that every measured turn replays as much of it.
	for range historyWindow {
		send(chat("blocking", first.ConversationID))
	}
	// The passport's end user is a returning one too.
	sendPassport(chat("blocking", ""))
	for _, tc := range []struct {
		name   string
		budget parleytest.Budget
		body   string
		check  func(string) bool
		send   func(string) string
	}{
		{"blocking new conversation with a passport", blockingNewBudget, chat("blocking", ""),
			func(out string) bool { return strings.Contains(out, `"answer":"a b c d e"`) }, sendPassport},
		{"blocking new conversation", blockingNewBudget, chat("blocking", ""),
			func(out string) bool { return strings.Contains(out, `"answer":"a b c d e"`) }, nil},
		{"blocking continued", blockingContinuedBudget, chat("blocking", first.ConversationID),
			func(out string) bool { return strings.Contains(out, `"answer":"a b c d e"`) }, nil},
		{"streamed new conversation", streamedNewBudget, chat("streaming", ""),
			func(out string) bool {
				return strings.Contains(out, `"event": "message_end"`) || strings.Contains(out, `"event":"message_end"`)
			}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do := send
			if tc.send != nil {
				do = tc.send
			}
			parleytest.CheckBudget(t, tc.budget, 30, s.st.Statements, func() {
				if out := do(tc.body); !tc.check(out) {
					t.Fatalf("unexpected reply: %.300s", out)
				}
			})
		})
	}
}
