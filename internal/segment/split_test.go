package segment

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tokens"
)

func custom(sep string, maxTokens, overlap int) ProcessRule {
	return ProcessRule{Mode: ModeCustom, Rules: &Rules{
		PreProcessingRules: []PreProcessingRule{},
		Segmentation:       &Segmentation{Separator: sep, MaxTokens: maxTokens, ChunkOverlap: overlap},
	}}
}

func contents(cs []Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Content
	}
	return out
}

func words(from, to int) string {
	var b []string
	for i := from; i <= to; i++ {
		b = append(b, fmt.Sprintf("w%02d", i))
	}
	return strings.Join(b, " ")
}

func TestSplit(t *testing.T) {
	t.Parallel()
	letters := strings.Repeat("abcdefghij", 12) // 120 characters, no separators
	long := strings.Repeat("x", 1200)
	tests := []struct {
		name string
		text string
		rule ProcessRule
		want []string
	}{
		{
			// As in Dify, `\n` in the separator is decoded; the
			// separator does not appear in chunks; short pieces are kept as
			// they are (not merged).
			name: `escaped \n separator`,
			text: "alpha\nbeta\ngamma",
			rule: custom(`\n`, 100, 0),
			want: []string{"alpha", "beta", "gamma"},
		},
		{
			name: "multi-character separator",
			text: "one###two### ###three",
			rule: custom("###", 100, 0),
			want: []string{"one", "two", "three"},
		},
		{
			// Recursive merge on " " with overlap: chunks hold up to 50
			// characters, then the trailing pieces up to 10 characters
			// start the next chunk, as in Dify.
			name: "overlap on space pieces",
			text: words(0, 29),
			rule: custom("|||", 50, 10),
			want: []string{words(0, 11), words(10, 21), words(20, 29)},
		},
		{
			// Character fallback of the fixed splitter: filled to
			// size-overlap (40), then 10 more that reappear next.
			name: "custom character fill",
			text: letters,
			rule: custom("|||", 50, 10),
			want: []string{letters[0:50], letters[40:90], letters[80:120]},
		},
		{
			// Automatic: 500 / 50 (AUTOMATIC_RULES) through the merge.
			name: "automatic character merge 500/50",
			text: long,
			rule: ProcessRule{Mode: ModeAutomatic},
			want: []string{long[:500], long[450:950], long[900:]},
		},
		{
			name: "automatic keeps a short document whole and cleans extra spaces",
			text: "Hello   world.\n\n\n\nSecond  paragraph.",
			rule: ProcessRule{Mode: ModeAutomatic},
			want: []string{"Hello world.\n\nSecond paragraph."},
		},
		{
			// Sentence separators "。" and ". " stay attached to the end of
			// each piece.
			name: "sentence split keeps terminators",
			text: strings.Repeat("这是一个句子。", 10),
			rule: custom("|||", 50, 0),
			want: []string{strings.Repeat("这是一个句子。", 7), strings.Repeat("这是一个句子。", 3)},
		},
		{
			// remove_leading_symbols, then strip; empty chunks dropped.
			name: "leading punctuation removed",
			text: "。开头\n... dots\n- item\n!!!\n  \n[link](x)",
			rule: custom("\n", 100, 0),
			want: []string{"开头", "dots", "item", "link](x)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Splitter{}.Split(tt.text, tt.rule)
			if err != nil {
				t.Fatalf("Split: %v", err)
			}
			gc := contents(got)
			if strings.Join(gc, "\x00") != strings.Join(tt.want, "\x00") {
				t.Fatalf("got %d chunks %q\nwant %d chunks %q", len(gc), gc, len(tt.want), tt.want)
			}
			for i, c := range got {
				if c.Position != i+1 {
					t.Errorf("chunk %d position %d", i, c.Position)
				}
			}
		})
	}
}

// 50 ≤ max_tokens ≤ 4000, with Dify's message.
func TestSplitLengthBounds(t *testing.T) {
	t.Parallel()
	for n, ok := range map[int]bool{49: false, 50: true, 4000: true, 4001: false, -1: false} {
		_, err := Splitter{}.Split("some text", custom("\n", n, 0))
		var le *LengthError
		switch {
		case ok && err != nil:
			t.Errorf("max_tokens %d: unexpected %v", n, err)
		case !ok && !errors.As(err, &le):
			t.Errorf("max_tokens %d: err = %v, want *LengthError", n, err)
		case !ok && err.Error() != "Custom segment length should be between 50 and 4000.":
			t.Errorf("max_tokens %d: message %q", n, err.Error())
		}
	}
	_, err := Splitter{MaxSegmentLength: 1000}.Split("x", custom("\n", 2000, 0))
	if err == nil || err.Error() != "Custom segment length should be between 50 and 1000." {
		t.Errorf("configured max: %v", err)
	}
	var oe *OverlapError
	if _, err := (Splitter{}).Split("x", custom("\n", 50, 51)); !errors.As(err, &oe) {
		t.Errorf("overlap > size: %v", err)
	}
	// Automatic mode never checks the bound (its numbers are fixed).
	if _, err := (Splitter{}).Split("x", ProcessRule{Mode: ModeAutomatic}); err != nil {
		t.Errorf("automatic: %v", err)
	}
}

// Check finds, without any text, every error Split would give for a rule:
// the knowledge service uses it to refuse such a rule at the request.
func TestCheck(t *testing.T) {
	t.Parallel()
	sub := func(n, overlap int) *Segmentation {
		return &Segmentation{Separator: "\n", MaxTokens: n, ChunkOverlap: overlap}
	}
	bounds := "Custom segment length should be between 50 and 4000."
	tests := []struct {
		name string
		rule ProcessRule
		want string
	}{
		{"automatic", ProcessRule{Mode: ModeAutomatic}, ""},
		{"custom ok", custom("\n", 500, 50), ""},
		{"custom 49", custom("\n", 49, 0), bounds},
		{"custom 50", custom("\n", 50, 0), ""},
		{"custom 4000", custom("\n", 4000, 0), ""},
		{"custom 4001", custom("\n", 4001, 0), bounds},
		{"custom negative", custom("\n", -5, 0), bounds},
		{"custom overlap over size", custom("\n", 100, 101), "Got a larger chunk overlap (101) than chunk size (100), should be smaller."},
		{"invalid rule", ProcessRule{Mode: ModeCustom}, "Process rule rules is required"},
		{"hierarchical ok", hierarchical(ParentModeParagraph, "\n\n", 500, sub(200, 0)), ""},
		{"hierarchical no subchunk", hierarchical(ParentModeParagraph, "\n\n", 500, nil), "No subchunk segmentation found in rules."},
		{"hierarchical parent 4001", hierarchical(ParentModeParagraph, "\n\n", 4001, sub(200, 0)), bounds},
		{"hierarchical default parent mode checks the parent", hierarchical("", "\n\n", 10, sub(200, 0)), bounds},
		{"hierarchical subchunk 49", hierarchical(ParentModeParagraph, "\n\n", 500, sub(49, 0)), bounds},
		{"hierarchical subchunk overlap", hierarchical(ParentModeParagraph, "\n\n", 500, sub(60, 61)), "Got a larger chunk overlap (61) than chunk size (60), should be smaller."},
		// Full-doc parents are whole documents: their max_tokens is neither required nor bounded.
		{"full-doc ignores the parent length", hierarchical(ParentModeFullDoc, "\n\n", 0, sub(200, 0)), ""},
		{"full-doc subchunk 4001", hierarchical(ParentModeFullDoc, "\n\n", 0, sub(4001, 0)), bounds},
	}
	for _, tt := range tests {
		err := Splitter{}.Check(tt.rule)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: Check = %q, want %q", tt.name, got, tt.want)
			continue
		}
		// Split gives the same answer, for any text (even none).
		for _, text := range []string{"", "Some words.\n\nMore words."} {
			_, serr := Splitter{}.Split(text, tt.rule)
			if (serr == nil) != (err == nil) || serr != nil && serr.Error() != got {
				t.Errorf("%s: Split(%q) = %v, Check = %v", tt.name, text, serr, err)
			}
		}
	}
	if err := (Splitter{MaxSegmentLength: 1000}).Check(custom("\n", 1001, 0)); err == nil || err.Error() != "Custom segment length should be between 50 and 1000." {
		t.Errorf("configured max: %v", err)
	}
}

// Chunk lengths never exceed max_tokens characters (counted in code
// points, as current Dify counts) for text without oversize words.
func TestSplitRespectsSize(t *testing.T) {
	t.Parallel()
	text := sampleText(200_000)
	for _, rule := range []ProcessRule{{Mode: ModeAutomatic}, custom(`\n\n`, 120, 30), custom("。", 50, 0)} {
		chunks, err := Splitter{}.Split(text, rule)
		if err != nil {
			t.Fatal(err)
		}
		limit := 500
		if rule.Rules != nil {
			limit = rule.Rules.Segmentation.MaxTokens
		}
		for _, c := range chunks {
			if c.WordCount > limit {
				t.Fatalf("%s: chunk of %d > %d characters: %q", rule.Mode, c.WordCount, limit, c.Content)
			}
		}
	}
}

// As in Dify, word_count is characters; index_node_hash is
// sha256(content + "None"); tokens from internal/tokens.
func TestChunkFields(t *testing.T) {
	t.Parallel()
	got, err := Splitter{}.Split("你好世界", ProcessRule{Mode: ModeAutomatic})
	if err != nil || len(got) != 1 {
		t.Fatalf("Split = %v, %v", got, err)
	}
	c := got[0]
	// Expected hash computed independently: python3 -c
	// 'import hashlib; print(hashlib.sha256("你好世界None".encode()).hexdigest())'
	want := Chunk{
		Content:       "你好世界",
		Position:      1,
		WordCount:     4,
		Tokens:        tokens.Count("你好世界"),
		IndexNodeHash: "b963b45be096a088224e30e52fc269149daa3e168ca766ca51f99eea99f7fab2",
	}
	if c.Content != want.Content || c.Position != want.Position || c.WordCount != want.WordCount ||
		c.Tokens != want.Tokens || c.IndexNodeHash != want.IndexNodeHash || c.Children != nil {
		t.Errorf("chunk = %+v, want %+v", c, want)
	}
	if c.Tokens <= 0 {
		t.Errorf("tokens = %d", c.Tokens)
	}
	if h := TextHash(""); h != "dc937b59892604f5a86ac96936cd7ff09e25f18ae6b758e8014a24c7fa039e91" {
		t.Errorf(`TextHash("") = %s, want sha256("None")`, h)
	}
}

func hierarchical(parentMode, sep string, maxTokens int, sub *Segmentation) ProcessRule {
	return ProcessRule{Mode: ModeHierarchical, Rules: &Rules{
		PreProcessingRules:   []PreProcessingRule{{ID: RuleRemoveExtraSpaces, Enabled: true}},
		Segmentation:         &Segmentation{Separator: sep, MaxTokens: maxTokens},
		ParentMode:           parentMode,
		SubchunkSegmentation: sub,
	}}
}

func TestSplitHierarchical(t *testing.T) {
	t.Parallel()
	text := "Intro line one.\nIntro line two.\n\nBody line one.\nBody line two.\nBody line three."
	sub := &Segmentation{Separator: `\n`, MaxTokens: 200}

	t.Run("paragraph", func(t *testing.T) {
		t.Parallel()
		got, err := Splitter{}.Split(text, hierarchical(ParentModeParagraph, `\n\n`, 500, sub))
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{
			{"Intro line one.\nIntro line two.", "Intro line one.", "Intro line two."},
			{"Body line one.\nBody line two.\nBody line three.", "Body line one.", "Body line two.", "Body line three."},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d parents", len(got))
		}
		for i, p := range got {
			if p.Position != i+1 || p.Content != want[i][0] || len(p.Children) != len(want[i])-1 {
				t.Fatalf("parent %d = %+v", i, p)
			}
			for j, c := range p.Children {
				if c.Position != j+1 || c.Content != want[i][j+1] || c.WordCount != utf8.RuneCountInString(c.Content) || c.IndexNodeHash != TextHash(c.Content) {
					t.Errorf("parent %d child %d = %+v", i, j, c)
				}
			}
		}
	})

	t.Run("full-doc", func(t *testing.T) {
		t.Parallel()
		got, err := Splitter{}.Split(text, hierarchical(ParentModeFullDoc, `\n\n`, 0, sub))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Content != text || got[0].Position != 1 || len(got[0].Children) != 5 {
			t.Fatalf("got %+v", got)
		}
		if got[0].Children[4].Content != "Body line three." || got[0].Children[4].Position != 5 {
			t.Errorf("last child = %+v", got[0].Children[4])
		}
	})

	t.Run("full-doc keeps the first 10000 tokens", func(t *testing.T) {
		t.Parallel()
		big := sampleText(120_000)
		got, err := Splitter{}.Split(big, hierarchical(ParentModeFullDoc, `\n\n`, 0, &Segmentation{Separator: `\n\n`, MaxTokens: 1000}))
		if err != nil {
			t.Fatal(err)
		}
		n := got[0].Tokens
		if n > FullDocMaxTokens || n < FullDocMaxTokens-20 {
			t.Errorf("full-doc parent has %d tokens", n)
		}
		if !strings.HasPrefix(big, got[0].Content) {
			t.Error("parent is not a prefix of the document")
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		if _, err := (Splitter{}).Split(text, hierarchical(ParentModeParagraph, `\n\n`, 500, nil)); !errors.Is(err, ErrNoSubchunkSegmentation) {
			t.Errorf("no subchunk: %v", err)
		}
		var le *LengthError
		if _, err := (Splitter{}).Split(text, hierarchical(ParentModeParagraph, `\n\n`, 500, &Segmentation{Separator: "\n", MaxTokens: 20})); !errors.As(err, &le) {
			t.Errorf("child max_tokens 20: %v", err)
		}
		if _, err := (Splitter{}).Split(text, hierarchical(ParentModeParagraph, `\n\n`, 10, sub)); !errors.As(err, &le) {
			t.Errorf("parent max_tokens 10: %v", err)
		}
	})
}

// sampleText returns about n bytes of mixed English/Chinese prose with
// paragraphs, sentences and occasional long lines.
func sampleText(n int) string {
	paras := []string{
		"Parley implements the knowledge-base Service API. Documents are cleaned, split into segments and indexed. Each segment keeps its position, word count and hash.",
		"Economy datasets use a keyword table instead of embeddings: every chunk contributes up to ten keywords, and queries are matched against the table.",
		"知识库中的文档会被清洗、分段并建立索引。经济模式使用关键词表而不是向量，每个分段提取十个关键词。检索时根据查询中的关键词匹配分段。",
		"Short line.\nAnother short line with a URL https://example.com/path and an e-mail someone@example.com.\nA third line.",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(paras[i%len(paras)])
		b.WriteString("\n\n")
	}
	return b.String()
}
