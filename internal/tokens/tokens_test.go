package tokens

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers"
)

func TestCount(t *testing.T) {
	t.Parallel()
	// o200k_base counts. "tiktoken is great!" (6) is the openai-cookbook
	// example; the others pin the current behaviour.
	tests := map[string]int{
		"":                          0,
		"hello":                     1,
		"hello world":               2,
		"Hello, world!":             4,
		"tiktoken is great!":        6,
		"<|endoftext|>":             7, // special-token text counts as plain text
		"日本語のテキスト":                  6,
		"The quick brown fox jumps": 5,
	}
	for text, want := range tests {
		if got := Count(text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestNewEncodings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		enc  string
		text string
		want int
	}{
		{EncodingO200K, "tiktoken is great!", 6},
		{EncodingCL100K, "tiktoken is great!", 6},
		{EncodingCL100K, "antidisestablishmentarianism", 6},
	} {
		c, err := New(tt.enc)
		if err != nil {
			t.Fatalf("New(%s): %v", tt.enc, err)
		}
		if got := c.Count(tt.text); got != tt.want {
			t.Errorf("%s Count(%q) = %d, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
	if _, err := New("nope_base"); err == nil {
		t.Error("New(unknown) succeeded")
	}
}

func TestCountMessages(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	n := c.Count
	tests := []struct {
		name string
		msgs []providers.Message
		want int
	}{
		{"none", nil, 3},
		{
			"system and user",
			[]providers.Message{{Role: "system", Content: "You are helpful."}, {Role: "user", Content: "Hi there"}},
			3 + (3 + n("system") + n("You are helpful.")) + (3 + n("user") + n("Hi there")),
		},
		{
			"name costs one more",
			[]providers.Message{{Role: "user", Content: "Hi", Name: "bob"}},
			3 + 3 + n("user") + n("Hi") + 1 + n("bob"),
		},
		{
			"parts: text counted, image estimated",
			[]providers.Message{{Role: "user", Parts: []providers.Part{
				{Type: "text", Text: "What is this?"},
				{Type: "image_url", ImageURL: "https://example.com/a.png", Detail: "low"},
			}}},
			3 + 3 + n("user") + n("What is this?") + ImageTokens,
		},
		{
			"tool call and result",
			[]providers.Message{
				{Role: "assistant", ToolCalls: []providers.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`}}},
				{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
			},
			3 + (3 + n("assistant") + n("call_1") + n("weather") + n(`{"city":"Paris"}`)) +
				(3 + n("tool") + n("call_1") + n("sunny")),
		},
	}
	for _, tt := range tests {
		if got := CountMessages(tt.msgs); got != tt.want {
			t.Errorf("%s: CountMessages = %d, want %d", tt.name, got, tt.want)
		}
	}
	// Pinned end to end: 3 + (3+1+6) + (3+1+2).
	msgs := []providers.Message{{Role: "system", Content: "You are a helpful assistant."}, {Role: "user", Content: "Hello!"}}
	if got := CountMessages(msgs); got != 19 {
		t.Errorf("two short messages = %d, want 19", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("concurrency is not parallelism. ", 20)
	want := Count(text)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			Warm()
			if got := Count(text); got != want {
				t.Errorf("concurrent Count = %d, want %d", got, want)
			}
		})
	}
	wg.Wait()
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "日": 1} {
		if got := estimate(text); got != want {
			t.Errorf("estimate(%q) = %d, want %d", text, got, want)
		}
	}
}

// TestCountOrdinaryTextIsExact: text without long runs is counted in one piece, exactly as the
// encoding counts it.
func TestCountOrdinaryTextIsExact(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("Parley streams answers; see https://example.com/a/b?c=d for more. 日本語のテキスト\n", 300)
	if got, want := c.Count(text), len(c.enc.EncodeOrdinary(text)); got != want {
		t.Fatalf("Count = %d, the encoding says %d", got, want)
	}
}

// TestCountLongRunIsBounded: a run of letters with no space is one piece for the encoding's
// pre-split, and BPE costs the square of a piece's length (a megabyte of "é" took minutes).
// Counted in pieces it finishes at once, and stays close to the exact count.
func TestCountLongRunIsBounded(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	short := strings.Repeat("é", 2000)
	exact := len(c.enc.EncodeOrdinary(short))
	if got := c.Count(short); got < exact || got > exact+len(short)/maxRun+1 {
		t.Fatalf("Count of 2,000 é = %d, exact %d", got, exact)
	}
	done := make(chan int, 1)
	go func() { done <- c.Count(strings.Repeat("é", 1<<19)) }()
	select {
	case n := <-done:
		if n < exact*(1<<19)/2000*9/10 {
			t.Fatalf("Count of a megabyte of é = %d", n)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("counting a megabyte without spaces did not finish within a minute")
	}
}

// BenchmarkCountLongRun is the cost of a run without spaces: linear in its length.
func BenchmarkCountLongRun(b *testing.B) {
	Warm()
	text := strings.Repeat("é", 32<<10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Count(text)
	}
}

func BenchmarkCount(b *testing.B) {
	Warm()
	text := strings.Repeat("Parley streams answers from OpenAI-compatible models, counting tokens when needed. ", 8)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Count(text)
	}
}

func BenchmarkCountMessages(b *testing.B) {
	Warm()
	msgs := []providers.Message{
		{Role: "system", Content: "You are a helpful assistant that answers briefly."},
		{Role: "user", Content: "What is the capital of France?"},
		{Role: "assistant", Content: "Paris."},
		{Role: "user", Content: "And of Germany?"},
	}
	b.ReportAllocs()
	for b.Loop() {
		CountMessages(msgs)
	}
}
