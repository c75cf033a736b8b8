package run

import "testing"

// TestAnswerText: message text adds up; an Agent app's closing message takes the place of its
// agent_message chunks without being shown again; a replacement replaces the answer and is
// reported.
func TestAnswerText(t *testing.T) {
	var a AnswerText
	for _, d := range []string{"Hel", "lo"} {
		if got := a.Add(Event{Kind: EventMessage, Answer: d}); got != d {
			t.Fatalf("delta %q", got)
		}
	}
	if a.String() != "Hello" || a.Replaced() {
		t.Fatalf("%q %v", a.String(), a.Replaced())
	}
	a.Add(Event{Kind: EventMessageReplace, Answer: "Withheld."})
	if a.String() != "Withheld." || !a.Replaced() {
		t.Fatalf("replaced: %q %v", a.String(), a.Replaced())
	}

	var b AnswerText
	b.Add(Event{Kind: EventAgentMessage, Answer: "It is "})
	b.Add(Event{Kind: EventAgentThought})
	b.Add(Event{Kind: EventAgentMessage, Answer: "42."})
	if got := b.Add(Event{Kind: EventMessage, Answer: "It is 42."}); got != "" || b.String() != "It is 42." {
		t.Fatalf("closing message: delta %q, answer %q", got, b.String())
	}
}
