package llm

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
)

// scripted is a chat model whose stream returns its chunks, then end (io.EOF when nil).
type scripted struct {
	chunks []providers.Chunk
	end    error
	// sent is the last request.
	sent *providers.ChatRequest
}

func (m *scripted) Chat(context.Context, providers.ChatRequest) (*providers.ChatResponse, error) {
	return nil, errors.New("not used")
}

func (m *scripted) ChatStream(_ context.Context, req providers.ChatRequest) (providers.Stream, error) {
	m.sent = &req
	return &scriptedStream{m: m}, nil
}

type scriptedStream struct {
	m *scripted
	i int
}

func (s *scriptedStream) Recv() (providers.Chunk, error) {
	if s.i < len(s.m.chunks) {
		s.i++
		return s.m.chunks[s.i-1], nil
	}
	if s.m.end != nil {
		return providers.Chunk{}, s.m.end
	}
	return providers.Chunk{}, io.EOF
}

func (s *scriptedStream) Close() error { return nil }

// TestStreamMeters: the text streams to OnDelta and into the result, OnStart is called once,
// the upstream's usage is priced, and without one the tokens are counted.
func TestStreamMeters(t *testing.T) {
	pricing := models.Pricing{Input: "1", Output: "2", Unit: "0.001", Currency: "USD"}
	up := &scripted{chunks: []providers.Chunk{{Delta: "Hel"}, {Delta: "lo", FinishReason: "stop", Usage: &providers.Usage{PromptTokens: 10, CompletionTokens: 2}}}}
	m := Model{Spec: models.ModelSpec{Name: "m", ContextSize: 100, Pricing: &pricing}, Client: up}
	var deltas []string
	starts := 0
	res, err := m.Stream(context.Background(), Request{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}},
		Params:   map[string]any{"max_tokens": 1000},
		OnStart:  func() error { starts++; return nil },
		OnDelta:  func(d string) { deltas = append(deltas, d) },
	})
	if err != nil || res.Text != "Hello" || len(deltas) != 2 || starts != 1 || res.FinishReason != "stop" {
		t.Fatalf("result %+v, deltas %q, starts %d, error %v", res, deltas, starts, err)
	}
	if res.Tokens.PromptTokens != 10 || res.Usage.TotalTokens != 12 || res.Usage.TotalPrice == "" || res.Usage.TotalPrice == "0" {
		t.Fatalf("usage %+v", res.Usage)
	}
	if got := up.sent.Parameters["max_tokens"]; got == 1000 {
		t.Fatalf("max_tokens not fitted to the context: %v", got)
	}

	up.chunks[1].Usage = nil
	if res, _ := m.Stream(context.Background(), Request{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}); res.Tokens.PromptTokens == 0 || res.Tokens.CompletionTokens == 0 {
		t.Fatalf("tokens not counted without the upstream's usage: %+v", res.Tokens)
	}
}

// TestStreamFailure: a stream that fails part-way keeps the partial text and its usage; a
// refused start ends the call with the refusal.
func TestStreamFailure(t *testing.T) {
	cut := errors.New("cut")
	up := &scripted{chunks: []providers.Chunk{{Delta: "part"}}, end: cut}
	m := Model{Spec: models.ModelSpec{Name: "m"}, Client: up}
	res, err := m.Stream(context.Background(), Request{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}})
	if !errors.Is(err, cut) || res.Text != "part" || res.Tokens.CompletionTokens == 0 {
		t.Fatalf("result %+v, error %v", res, err)
	}
	refused := errors.New("refused")
	up.end = nil
	res, err = m.Stream(context.Background(), Request{OnStart: func() error { return refused },
		OnDelta: func(string) { t.Fatal("a delta after a refused start") }})
	if !errors.Is(err, refused) || res.Text != "" {
		t.Fatalf("result %+v, error %v", res, err)
	}
}
