package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/parleyhq/parley/internal/providers"
)

// stream reads a chat.completion.chunk event stream. It parses the SSE
// framing incrementally: bytes are read as they arrive, lines may span
// reads, data lines of one event are joined, comments (": keep-alive")
// and other fields are skipped, and "[DONE]" ends the stream.
//
// Terminal markers: "[DONE]" or a finish_reason. A body that
// ends (EOF, reset, cut) before either is truncated: Recv returns an error
// wrapping providers.ErrTruncated, never a quietly short answer. A body
// that ends after a finish_reason but without "[DONE]" is accepted (some
// llama.cpp builds); its usage, if any was still to come, is then missing.
type stream struct {
	c  *Client
	x  *exchange
	br *bufio.Reader

	line []byte // a line longer than the bufio buffer
	data []byte // data of the event being read
	eof  bool   // the body returned EOF after a final unterminated line

	chunk     streamChunk // decoded in place for each event
	calls     toolCalls
	finish    string
	sawFinish bool
	usage     *providers.Usage

	done   bool  // the final chunk was returned; Recv returns io.EOF
	err    error // sticky failure
	closed bool
}

// streamBuffer is the stream's line buffer. The transport under it buffers the connection
// already, so this one only saves copies: a chunk's line is a few hundred bytes, a longer one
// is assembled in line, and an open stream holds this much for as long as it lasts.
const streamBuffer = 1 << 10

func newStream(c *Client, x *exchange) *stream {
	return &stream{c: c, x: x, br: bufio.NewReaderSize(x, streamBuffer)}
}

var doneMarker = []byte("[DONE]")

// Recv implements providers.Stream.
func (s *stream) Recv() (providers.Chunk, error) {
	for {
		switch {
		case s.err != nil:
			return providers.Chunk{}, s.err
		case s.done:
			return providers.Chunk{}, io.EOF
		}
		data, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) && s.sawFinish {
				return s.final(false), nil
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return s.fail(s.c.transportError(s.x.ctx, err, true))
		}
		if bytes.Equal(data, doneMarker) {
			return s.final(true), nil
		}
		delta, reasoning, err := s.apply(data)
		if err != nil {
			return s.fail(err)
		}
		if delta != "" || reasoning != "" {
			return providers.Chunk{Delta: delta, Reasoning: reasoning}, nil
		}
	}
}

// apply decodes one chunk and folds it into the stream state, returning
// the text and reasoning deltas of choice 0.
func (s *stream) apply(data []byte) (string, string, error) {
	// Reuse the choices array across chunks, zeroed: encoding/json only
	// sets the members present in the input.
	clear(s.chunk.Choices[:cap(s.chunk.Choices)])
	s.chunk = streamChunk{Choices: s.chunk.Choices[:0]}
	if err := json.Unmarshal(data, &s.chunk); err != nil {
		return "", "", providers.NewError(s.c.name, providers.KindInvocation, 0, "invalid stream chunk from the provider", err)
	}
	if e := s.c.bodyError(s.chunk.Error); e != nil {
		return "", "", e
	}
	if s.chunk.Usage != nil {
		s.usage = s.chunk.Usage.usage()
	}
	var delta, reasoning string
	for i := range s.chunk.Choices {
		ch := &s.chunk.Choices[i]
		if ch.Index != 0 {
			continue // n > 1 is not used; only the first choice is read
		}
		delta += string(ch.Delta.Content)
		reasoning += string(ch.Delta.ReasoningContent)
		for _, d := range ch.Delta.ToolCalls {
			s.calls.add(d)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish, s.sawFinish = *ch.FinishReason, true
		}
	}
	return delta, reasoning, nil
}

// next returns the data of the next event that has any. The slice is
// valid until the following call.
func (s *stream) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			// An unterminated last event still counts if it is [DONE].
			if errors.Is(err, io.EOF) && has && bytes.Equal(s.data, doneMarker) {
				return s.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // comment, e.g. ": keep-alive" or ": OPENROUTER PROCESSING"
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue // event:, id:, retry:
		}
		if has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		has = true
	}
}

// readLine returns the next line without its line ending. The slice is
// valid until the following call.
func (s *stream) readLine() ([]byte, error) {
	if s.eof {
		return nil, io.EOF
	}
	s.line = s.line[:0]
	for {
		frag, err := s.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(s.line) > 0 {
				s.line = append(s.line, frag...)
				return trimEOL(s.line), nil
			}
			return trimEOL(frag), nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.line = append(s.line, frag...)
		case errors.Is(err, io.EOF) && len(s.line)+len(frag) > 0:
			s.line = append(s.line, frag...)
			s.eof = true
			return trimEOL(s.line), nil
		default:
			return nil, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// final ends the stream successfully and returns the final chunk. After
// [DONE] the rest of the body is drained so the connection is reused.
func (s *stream) final(drain bool) providers.Chunk {
	s.done = true
	s.release(drain)
	return providers.Chunk{FinishReason: s.finish, ToolCalls: s.calls.list(), Usage: s.usage}
}

func (s *stream) fail(err error) (providers.Chunk, error) {
	s.err = err
	s.release(false)
	return providers.Chunk{}, err
}

func (s *stream) release(drain bool) {
	if s.closed {
		return
	}
	s.closed = true
	s.x.finish(drain)
}

// Close implements providers.Stream. Closing before the end aborts the
// request, which closes its connection.
func (s *stream) Close() error {
	if !s.closed && s.err == nil && !s.done {
		s.err = providers.NewError(s.c.name, providers.KindInvocation, 0, "stream closed", errClosed)
	}
	s.release(false)
	return nil
}
