package segment

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tokens"
)

// Splitting limits (docs/knowledge.md, "Splitting").
const (
	// MinSegmentLength is the fixed lower bound of a custom max_tokens.
	MinSegmentLength = 50
	// DefaultMaxSegmentLength is Dify's default
	// INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH.
	DefaultMaxSegmentLength = 4000
	// FullDocMaxTokens is how much of a document a full-doc parent keeps.
	FullDocMaxTokens = 10000
)

// recursiveSeparators is the separator list of both Dify splitters.
var recursiveSeparators = []string{"\n\n", "。", ". ", " ", ""}

// Chunk is one segment (or child chunk) as Dify stores it (docs/knowledge.md).
type Chunk struct {
	// Content is the chunk text after cleaning and splitting.
	Content string
	// Position is the 1-based order among its siblings (segments of a
	// document, or child chunks of a parent).
	Position int
	// WordCount is Dify's word_count: the number of characters (Unicode
	// code points) of Content, not words.
	WordCount int
	// Tokens is the token count of Content (internal/tokens, o200k_base).
	// Dify stores the embedding model's count for high_quality datasets and
	// 0 for economy; callers that follow Dify for economy should ignore it.
	Tokens int
	// IndexNodeHash is Dify's index_node_hash: hex SHA-256 of
	// Content + "None".
	IndexNodeHash string
	// Children are the child chunks of a hierarchical parent, else nil.
	Children []Chunk
}

// LengthError is the indexing-time failure for a max_tokens outside
// [MinSegmentLength, Max]; Error() is Dify's message, e.g. "Custom segment
// length should be between 50 and 4000.".
type LengthError struct {
	// Max is the configured upper bound.
	Max int
	// Got is the rejected max_tokens.
	Got int
}

// Error implements error.
func (e *LengthError) Error() string {
	return fmt.Sprintf("Custom segment length should be between %d and %d.", MinSegmentLength, e.Max)
}

// SafeMessage implements safeerr.Error.
func (e *LengthError) SafeMessage() string { return e.Error() }

// OverlapError reports a chunk_overlap larger than the chunk size; the
// message is the one Dify's (langchain-derived) splitter raises.
type OverlapError struct {
	// Overlap is the rejected chunk_overlap.
	Overlap int
	// Size is the chunk size it exceeds.
	Size int
}

// Error implements error.
func (e *OverlapError) Error() string {
	return fmt.Sprintf("Got a larger chunk overlap (%d) than chunk size (%d), should be smaller.", e.Overlap, e.Size)
}

// SafeMessage implements safeerr.Error.
func (e *OverlapError) SafeMessage() string { return e.Error() }

// ErrNoSubchunkSegmentation is returned for a hierarchical rule without
// subchunk_segmentation (Dify's message).
var ErrNoSubchunkSegmentation = errors.New("No subchunk segmentation found in rules.")

// Splitter splits documents into chunks. The zero value uses Dify's
// defaults.
type Splitter struct {
	// MaxSegmentLength is INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH; 0 means
	// DefaultMaxSegmentLength.
	MaxSegmentLength int
	// NoTokens leaves Chunk.Tokens at 0 instead of counting with
	// internal/tokens. Dify stores tokens 0 for economy datasets, and
	// tiktoken counting is by far the most expensive part of Split
	// (about 1.5 MB/s per core against about 10 MB/s for the rest).
	NoTokens bool
}

// Split validates and resolves rule, cleans text with the rule's
// pre-processing rules ([Clean]) and splits it as Dify's paragraph or
// parent-child index processor does (docs/knowledge.md, "Splitting"):
//
//   - automatic: the recursive splitter over "\n\n", "。", ". ", " ", ""
//     with chunk size 500 and overlap 50;
//   - custom: split on the (unescaped) separator; pieces that fit are kept
//     as they are, longer ones go through the recursive splitter with the
//     rule's max_tokens and chunk_overlap;
//   - hierarchical: parents as custom (parent_mode paragraph) or the whole
//     document cut to its first FullDocMaxTokens tokens (full-doc); each
//     parent's children come from subchunk_segmentation the same way.
//
// Lengths are counted in characters. Each chunk is stripped, loses its
// leading punctuation, and is dropped when empty. Errors are those of
// [Splitter.Check], returned before any text is looked at.
func (s Splitter) Split(text string, rule ProcessRule) ([]Chunk, error) {
	if err := s.Check(rule); err != nil {
		return nil, err
	}
	r := rule.Resolve()
	text = Clean(text, r.Rules.PreProcessingRules)
	switch r.Mode {
	case ModeAutomatic:
		seg := r.Rules.Segmentation
		sp := recursiveSplitter{size: seg.MaxTokens, overlap: seg.ChunkOverlap, merge: true}
		return s.makeChunks(sp.split(text, recursiveSeparators)), nil
	case ModeCustom:
		return s.makeChunks(s.fixed(text, r.Rules.Segmentation)), nil
	}
	// Hierarchical.
	sub := r.Rules.SubchunkSegmentation
	var parents []Chunk
	if r.Rules.ParentMode == ParentModeFullDoc {
		doc := strings.TrimSpace(truncateTokens(text, FullDocMaxTokens))
		if doc == "" {
			return nil, nil
		}
		parents = s.makeChunks([]string{doc})
	} else {
		parents = s.makeChunks(s.fixed(text, r.Rules.Segmentation))
	}
	for i := range parents {
		parents[i].Children = s.makeChunks(s.fixed(parents[i].Content, sub))
	}
	return parents, nil
}

// Check reports whether rule can split a document, with the error Split
// would return for it: a *ValidationError, a *LengthError (max_tokens
// outside [MinSegmentLength, MaxSegmentLength], for segmentation unless the
// parents are full documents, and for subchunk_segmentation), an
// *OverlapError, or ErrNoSubchunkSegmentation for a hierarchical rule
// without subchunk_segmentation. Dify raises the last three only when the
// document is indexed; Parley checks them when the rule is given too, so
// that a rule that cannot work is refused before anything is stored.
func (s Splitter) Check(rule ProcessRule) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	r := rule.Resolve()
	switch r.Mode {
	case ModeAutomatic:
		return nil
	case ModeCustom:
		return s.checkBounds(r.Rules.Segmentation)
	}
	if r.Rules.SubchunkSegmentation == nil {
		return ErrNoSubchunkSegmentation
	}
	if r.Rules.ParentMode != ParentModeFullDoc {
		if err := s.checkBounds(r.Rules.Segmentation); err != nil {
			return err
		}
	}
	return s.checkBounds(r.Rules.SubchunkSegmentation)
}

func (s Splitter) checkBounds(seg *Segmentation) error {
	maxLen := s.MaxSegmentLength
	if maxLen <= 0 {
		maxLen = DefaultMaxSegmentLength
	}
	if seg.MaxTokens < MinSegmentLength || seg.MaxTokens > maxLen {
		return &LengthError{Max: maxLen, Got: seg.MaxTokens}
	}
	if seg.ChunkOverlap > seg.MaxTokens {
		return &OverlapError{Overlap: seg.ChunkOverlap, Size: seg.MaxTokens}
	}
	return nil
}

// fixed is Dify's FixedRecursiveCharacterTextSplitter: split on the user
// separator, keep pieces that fit as they are (no merging, no overlap) and
// split longer ones recursively. seg has passed checkBounds (see Check).
func (s Splitter) fixed(text string, seg *Segmentation) []string {
	sep := strings.ReplaceAll(seg.Separator, `\n`, "\n")
	var pieces []string
	if sep != "" {
		pieces = strings.Split(text, sep)
	} else {
		pieces = []string{text}
	}
	sp := recursiveSplitter{size: seg.MaxTokens, overlap: max(seg.ChunkOverlap, 0)}
	out := make([]string, 0, len(pieces))
	for _, p := range pieces {
		if utf8.RuneCountInString(p) > sp.size {
			out = append(out, sp.split(p, recursiveSeparators)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// recursiveSplitter is the recursive character splitter shared by both of
// Dify's splitters. merge selects the automatic splitter's behaviour at
// the character level (greedy merge with overlap, like every other level);
// otherwise the fixed splitter's character fill is used (chunks filled to
// size-overlap, the next overlap characters repeated at the start of the
// next chunk).
type recursiveSplitter struct {
	size, overlap int
	merge         bool
}

func (sp recursiveSplitter) split(text string, seps []string) []string {
	sep := seps[len(seps)-1]
	var rest []string
	for i, c := range seps {
		if c == "" {
			sep = ""
			break
		}
		if strings.Contains(text, c) {
			sep = c
			rest = seps[i+1:]
			break
		}
	}
	pieces := splitKeep(text, sep)
	if sep == "" && !sp.merge {
		return sp.fill(pieces)
	}
	var out, good []string
	var goodLens []int
	for _, p := range pieces {
		n := utf8.RuneCountInString(p)
		if n < sp.size {
			good = append(good, p)
			goodLens = append(goodLens, n)
			continue
		}
		if len(good) > 0 {
			out = sp.mergeSplits(out, good, goodLens)
			good, goodLens = good[:0], goodLens[:0]
		}
		if len(rest) == 0 {
			out = append(out, p)
		} else {
			out = append(out, sp.split(p, rest)...)
		}
	}
	if len(good) > 0 {
		out = sp.mergeSplits(out, good, goodLens)
	}
	return out
}

// mergeSplits greedily joins pieces (separator "" since separators stay
// attached) into chunks of at most size characters; when a chunk is
// emitted, leading pieces are dropped until at most overlap characters
// remain, and those carry over into the next chunk. Joined chunks are
// stripped; empty ones are dropped.
func (sp recursiveSplitter) mergeSplits(out, pieces []string, lens []int) []string {
	var cur []string
	var curLens []int
	total := 0
	for i, p := range pieces {
		n := lens[i]
		if total+n > sp.size && len(cur) > 0 {
			if doc := strings.TrimSpace(strings.Join(cur, "")); doc != "" {
				out = append(out, doc)
			}
			for total > sp.overlap || (total+n > sp.size && total > 0) {
				total -= curLens[0]
				cur, curLens = cur[1:], curLens[1:]
			}
		}
		cur = append(cur, p)
		curLens = append(curLens, n)
		total += n
	}
	if doc := strings.TrimSpace(strings.Join(cur, "")); doc != "" {
		out = append(out, doc)
	}
	return out
}

// fill is the fixed splitter's character-level fallback.
func (sp recursiveSplitter) fill(chars []string) []string {
	var out []string
	var cur, ov strings.Builder
	curLen, ovLen := 0, 0
	for _, c := range chars {
		switch {
		case curLen+1 <= sp.size-sp.overlap:
			cur.WriteString(c)
			curLen++
		case curLen+1 <= sp.size:
			cur.WriteString(c)
			curLen++
			ov.WriteString(c)
			ovLen++
		default:
			out = append(out, cur.String())
			cur.Reset()
			cur.WriteString(ov.String())
			cur.WriteString(c)
			curLen = ovLen + 1
			ov.Reset()
			ovLen = 0
		}
	}
	if curLen > 0 {
		out = append(out, cur.String())
	}
	return out
}

// splitKeep splits text on sep and keeps the separator at the end of each
// piece (for " ", the whole run of spaces); "" splits into characters.
// Pieces equal to "" or "\n" are dropped, as Dify does.
func splitKeep(text, sep string) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != "\n" {
			out = append(out, p)
		}
	}
	switch sep {
	case "":
		out = make([]string, 0, len(text))
		for i, r := range text {
			if r == '\n' {
				continue
			}
			add(text[i : i+utf8.RuneLen(r)])
		}
		return out
	case " ":
		start := 0
		for i := 0; i < len(text); {
			if text[i] != ' ' {
				i++
				continue
			}
			j := i
			for j < len(text) && text[j] == ' ' {
				j++
			}
			add(text[start:j])
			start, i = j, j
		}
		add(text[start:])
		return out
	}
	for {
		i := strings.Index(text, sep)
		if i < 0 {
			add(text)
			return out
		}
		add(text[:i+len(sep)])
		text = text[i+len(sep):]
	}
}

// leadingSymbols is Dify's remove_leading_symbols pattern: General
// Punctuation, Supplemental Punctuation, CJK Symbols and Punctuation and
// ASCII punctuation at the start of a chunk.
var leadingSymbols = regexp.MustCompile("^[\u2000-\u206F\u2E00-\u2E7F\u3000-\u303F!\"#$%&'()*+,\\-./:;<=>?@\\[\\]^_`{|}~]+")

// makeChunks applies Dify's post-split clean-up and computes the segment
// fields, numbering positions from 1.
func (s Splitter) makeChunks(pieces []string) []Chunk {
	out := make([]Chunk, 0, len(pieces))
	for _, p := range pieces {
		if strings.TrimSpace(p) == "" {
			continue
		}
		c := strings.TrimSpace(leadingSymbols.ReplaceAllLiteralString(p, ""))
		if c == "" {
			continue
		}
		ch := newChunk(c, len(out)+1)
		if !s.NoTokens {
			ch.Tokens = tokens.Count(c)
		}
		out = append(out, ch)
	}
	return out
}

func newChunk(content string, position int) Chunk {
	return Chunk{
		Content:       content,
		Position:      position,
		WordCount:     utf8.RuneCountInString(content),
		IndexNodeHash: TextHash(content),
	}
}

// TextHash is Dify's generate_text_hash: hex SHA-256 of text + "None".
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text + "None"))
	return hex.EncodeToString(sum[:])
}

// truncateTokens returns the longest prefix of text (cut at a rune
// boundary) with at most n tokens (internal/tokens counting).
func truncateTokens(text string, n int) string {
	// A token covers at least one byte, so n bytes hold at most n tokens.
	if len(text) <= n {
		return text
	}
	// Find an upper bound by doubling, so a huge document is never
	// counted whole more than necessary.
	lo, hi := n, min(len(text), 4*n)
	for tokens.Count(text[:runeFloor(text, hi)]) <= n {
		if hi == len(text) {
			return text
		}
		lo, hi = hi, min(len(text), 2*hi)
	}
	lo, hi = runeFloor(text, lo), runeFloor(text, hi)
	// Invariant: text[:lo] fits, text[:hi] does not.
	for hi-lo > 1 {
		mid := runeFloor(text, (lo+hi)/2)
		if mid <= lo {
			// No rune boundary strictly between lo and hi.
			break
		}
		if tokens.Count(text[:mid]) <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return text[:lo]
}

// runeFloor moves i back to the start of the rune containing it.
func runeFloor(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
