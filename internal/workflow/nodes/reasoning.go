package nodes

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
)

// Reasoning formats of an LLM node (reasoning_format): tagged keeps a model's <think>…</think>
// blocks in its text, as Dify does by default; separated takes them out of the text, into the
// reasoning_content output and, as the model streams them, reasoning_chunk events.
const reasoningSeparated = "separated"

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkSplitter separates the <think>…</think> blocks of a streamed answer from its text. Tags may
// be split across chunks: a chunk's end that could begin a tag is held until the next chunk says
// whether it does. The text's leading white space (what usually follows a think block) is dropped.
type thinkSplitter struct {
	onText, onReasoning func(string)

	pending   string
	inThink   bool
	started   bool // some text was passed on
	text      strings.Builder
	reasoning strings.Builder
}

// write passes on what of delta is known to be text or reasoning.
func (s *thinkSplitter) write(delta string) {
	s.pending += delta
	for s.pending != "" {
		tag := thinkOpen
		if s.inThink {
			tag = thinkClose
		}
		if i := strings.Index(s.pending, tag); i >= 0 {
			s.emit(s.pending[:i])
			s.pending = s.pending[i+len(tag):]
			s.inThink = !s.inThink
			continue
		}
		// Hold back the longest end of pending that begins the tag.
		keep := 0
		for n := min(len(tag)-1, len(s.pending)); n > 0; n-- {
			if strings.HasSuffix(s.pending, tag[:n]) {
				keep = n
				break
			}
		}
		s.emit(s.pending[:len(s.pending)-keep])
		s.pending = s.pending[len(s.pending)-keep:]
		return
	}
}

// end passes on what was held back.
func (s *thinkSplitter) end() {
	s.emit(s.pending)
	s.pending = ""
}

func (s *thinkSplitter) emit(part string) {
	if part == "" {
		return
	}
	if s.inThink {
		s.reasoning.WriteString(part)
		s.onReasoning(part)
		return
	}
	if !s.started {
		part = strings.TrimLeft(part, " \t\r\n")
		if part == "" {
			return
		}
		s.started = true
	}
	s.text.WriteString(part)
	s.onText(part)
}

// reasoningChunk is the data of a reasoning_chunk event.
type reasoningChunk struct {
	MessageID string `json:"message_id"`
	Reasoning string `json:"reasoning"`
	NodeID    string `json:"node_id"`
	IsFinal   bool   `json:"is_final"`
}

// newReasoningSplitter streams an LLM node's text to its answers and its reasoning as
// reasoning_chunk events of the message being answered.
func newReasoningSplitter(x *workflow.Exec) *thinkSplitter {
	msg := env(x).MessageID
	return &thinkSplitter{
		onText: func(t string) { x.Stream("text", t) },
		onReasoning: func(r string) {
			x.Emit(run.Event{Kind: run.EventReasoningChunk, Data: reasoningChunk{MessageID: msg, Reasoning: r, NodeID: x.Node.ID}})
		},
	}
}

// finish ends the reasoning: held-back text is passed on and the last reasoning_chunk, with
// is_final, is sent.
func (s *thinkSplitter) finish(x *workflow.Exec) {
	s.end()
	x.Emit(run.Event{Kind: run.EventReasoningChunk, Data: reasoningChunk{MessageID: env(x).MessageID, NodeID: x.Node.ID, IsFinal: true}})
}

// thinkTagged makes a model's reasoning, when its provider streams it apart from the text, part
// of the text as a <think> block at its start, as Dify's model runtime does: the LLM node then
// keeps it in its text (tagged) or takes it out (separated) as it does a block the model wrote.
// sep surrounds the reasoning inside the tags ("\n" for tagged, as Dify writes them).
type thinkTagged struct {
	providers.ChatModel
	sep string
}

func (m thinkTagged) ChatStream(ctx context.Context, req providers.ChatRequest) (providers.Stream, error) {
	s, err := m.ChatModel.ChatStream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &thinkStream{Stream: s, sep: m.sep}, nil
}

type thinkStream struct {
	providers.Stream
	sep      string
	thinking bool
}

func (s *thinkStream) Recv() (providers.Chunk, error) {
	c, err := s.Stream.Recv()
	if err != nil {
		if s.thinking && errors.Is(err, io.EOF) {
			// The answer ended inside its reasoning: close the block.
			s.thinking = false
			return providers.Chunk{Delta: s.sep + thinkClose}, nil
		}
		return c, err
	}
	var b strings.Builder
	if c.Reasoning != "" {
		if !s.thinking {
			b.WriteString(thinkOpen + s.sep)
			s.thinking = true
		}
		b.WriteString(c.Reasoning)
	}
	if s.thinking && (c.Delta != "" || c.FinishReason != "" || len(c.ToolCalls) > 0) {
		b.WriteString(s.sep + thinkClose)
		s.thinking = false
	}
	if b.Len() > 0 {
		c.Delta = b.String() + c.Delta
	}
	return c, nil
}
