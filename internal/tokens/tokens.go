// Package tokens counts tokens the way OpenAI models do, for prompts and
// answers whose usage the provider did not report.
//
// It uses tiktoken-go with the BPE ranks embedded in the binary
// (tiktoken-go-loader's offline loader): nothing is downloaded at run time.
// Loading an encoding takes about 100 ms and tens of megabytes, so it is
// done once, lazily; call [Warm] at start-up (for example in a goroutine
// from main) to keep it off the first request's critical path.
//
// [Counter.CountMessages] remembers the counts of the texts it has counted
// (a bounded memo keyed by a hash of each text), because a conversation's
// history is counted again on every turn; [Counter.Count] does not, as the
// texts it gets (chunks of documents being split) are rarely seen twice.
//
// Package-level state: the default counter behind [Count] and
// [CountMessages] is built on first use under a sync.Once, and the
// tiktoken loader (a process-wide setting of the tiktoken package) is
// installed under another. Nothing else is global; use [New] for an
// explicit counter.
package tokens

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/parleyhq/parley/internal/providers"
)

// Encodings supported by New.
const (
	// EncodingO200K is the gpt-4o / gpt-4.1 / o-series encoding, the
	// default.
	EncodingO200K = "o200k_base"
	// EncodingCL100K is the gpt-4 / gpt-3.5-turbo / text-embedding-3
	// encoding.
	EncodingCL100K = "cl100k_base"
)

// DefaultEncoding is the encoding of the default counter.
const DefaultEncoding = EncodingO200K

// OpenAI's chat format overhead (openai-cookbook "How to count tokens with
// tiktoken"): every message is wrapped in <|start|>{role}\n…<|end|>\n (3
// tokens), a name costs one more, and the reply is primed with
// <|start|>assistant<|message|> (3 tokens).
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensReply      = 3
)

// ImageTokens is the estimate added per image part by CountMessages: the
// base cost of an image at "low" detail. The real cost at higher detail
// depends on the image size, which is not known here.
const ImageTokens = 85

// Counter counts tokens with one encoding. It is safe for concurrent use.
type Counter struct {
	enc  *tiktoken.Tiktoken
	memo *memo
}

var (
	loaderOnce sync.Once

	defaultOnce    sync.Once
	defaultCounter *Counter
	defaultErr     error
)

// New loads an encoding (EncodingO200K, EncodingCL100K, or another name
// tiktoken-go knows: p50k_base, p50k_edit, r50k_base) from the ranks
// embedded in the binary. It takes ~100 ms; tiktoken-go caches the parsed
// ranks, so a second New for the same encoding is cheaper.
func New(encoding string) (*Counter, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("tokens: load encoding %q: %w", encoding, err)
	}
	return &Counter{enc: enc, memo: newMemo()}, nil
}

// maxRun is the longest run of non-space text, in bytes, that is encoded as
// one piece. BPE merging costs the square of a piece's length, and the
// tokenizer's pre-split keeps a run of letters (or of punctuation) whole:
// 35,000 "é" in a row took seconds, a megabyte of them minutes. Longer runs
// are counted in pieces of this size, which changes the count of such runs
// by a token or so per piece and leaves ordinary text exact.
const maxRun = 256

// Count returns the number of tokens of text, encoding special-token text
// such as "<|endoftext|>" as ordinary text (as user input is). Its cost is
// linear in the length of text.
func (c *Counter) Count(text string) int {
	n := 0
	for text != "" {
		cut := runCut(text)
		n += len(c.enc.EncodeOrdinary(text[:cut]))
		text = text[cut:]
	}
	return n
}

// runCut is where text should be cut so that no piece holds a run of more
// than maxRun bytes without a space: at the start of the rune that would
// exceed it, or len(text) when there is no such run.
func runCut(text string) int {
	run := 0
	for i, r := range text {
		if unicode.IsSpace(r) {
			run = 0
			continue
		}
		size := utf8.RuneLen(r)
		if size < 0 {
			size = 1
		}
		if run+size > maxRun && run > 0 {
			return i
		}
		run += size
	}
	return len(text)
}

// CountMessages returns the prompt tokens of a chat request's messages
// using OpenAI's per-message overhead: 3 per message, +1 for a name, +3 for
// the reply priming. Text parts are counted as text, each image part as
// ImageTokens, tool calls by their id, name and arguments. Tool
// definitions are not included. Texts it has counted before are not
// tokenized again (see the package documentation).
func (c *Counter) CountMessages(msgs []providers.Message) int {
	return countMessages(c.countMemo, msgs)
}

// countMemo is Count through the memo.
func (c *Counter) countMemo(text string) int { return c.memo.count(text, c.Count) }

func countMessages(count func(string) int, msgs []providers.Message) int {
	n := tokensReply
	for _, m := range msgs {
		n += tokensPerMessage + count(m.Role)
		if len(m.Parts) == 0 {
			n += count(m.Content)
		} else {
			for _, p := range m.Parts {
				switch p.Type {
				case providers.PartImageURL:
					n += ImageTokens
				default:
					n += count(p.Text)
				}
			}
		}
		if m.Name != "" {
			n += tokensPerName + count(m.Name)
		}
		for _, tc := range m.ToolCalls {
			n += count(tc.ID) + count(tc.Name) + count(tc.Arguments)
		}
		if m.ToolCallID != "" {
			n += count(m.ToolCallID)
		}
	}
	return n
}

// Default returns the shared counter for DefaultEncoding, loading it on
// first use. The error is only non-nil if the embedded ranks are broken,
// which the tests rule out.
func Default() (*Counter, error) {
	defaultOnce.Do(func() { defaultCounter, defaultErr = New(DefaultEncoding) })
	return defaultCounter, defaultErr
}

// Warm loads the default counter now, so that the first Count does not pay
// for it. It is safe to call any number of times, concurrently.
func Warm() { _, _ = Default() }

// Count counts text with the default counter. Should the default counter
// fail to load, it falls back to an estimate of one token per four bytes
// (at least one token per rune-bearing string).
func Count(text string) int {
	c, err := Default()
	if err != nil {
		return estimate(text)
	}
	return c.Count(text)
}

// CountMessages counts messages with the default counter (see
// Counter.CountMessages), with the same fallback as Count.
func CountMessages(msgs []providers.Message) int {
	c, err := Default()
	if err != nil {
		return countMessages(estimate, msgs)
	}
	return c.CountMessages(msgs)
}

func estimate(text string) int {
	if text == "" {
		return 0
	}
	return max((len(text)+3)/4, min(utf8.RuneCountInString(text), 1))
}
