package run

import "strings"

// AnswerText follows the text of an answer through its events, as a blocking reply shows it:
// message and agent_message text is added, message_replace replaces it, and an Agent app's
// closing message, which repeats the whole answer its agent_message events streamed, takes its
// place instead of being added again. Every reader of a run's answer (a blocking reply, the
// OpenAI-compatible stream, an MCP tool call) follows it so.
type AnswerText struct {
	b              strings.Builder
	agent, replace bool
}

// Add reads one event and returns the text it adds to what a stream of the answer already
// showed: "" for an event that adds none, for an Agent app's closing message, and for a
// replacement (Replaced says so; String has the replacement).
func (a *AnswerText) Add(ev Event) string {
	switch ev.Kind {
	case EventAgentMessage:
		a.agent = true
		a.b.WriteString(ev.Answer)
		return ev.Answer
	case EventMessage:
		if a.agent {
			a.b.Reset()
			a.b.WriteString(ev.Answer)
			return ""
		}
		a.b.WriteString(ev.Answer)
		return ev.Answer
	case EventMessageReplace:
		a.replace = true
		a.b.Reset()
		a.b.WriteString(ev.Answer)
	}
	return ""
}

// String is the answer so far.
func (a *AnswerText) String() string { return a.b.String() }

// Replaced says whether a message_replace (output moderation) replaced the answer.
func (a *AnswerText) Replaced() bool { return a.replace }
