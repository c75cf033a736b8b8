package segment

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// Dify's keywords: TF-IDF, default 10 per chunk, stop words and
// one-character words skipped, ties in first-occurrence order.
func TestKeywords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		n    int
		want []string
	}{
		{
			// English words are not in the IDF table, so every word gets
			// the median IDF and the ranking is by frequency, ties by
			// first occurrence; case is kept (jieba does not fold case).
			name: "english",
			text: "Go is an open source programming language that makes it simple to build secure, scalable systems. " +
				"Go programs compile quickly; the Go toolchain builds programs and the language has garbage collection. " +
				"Scalable systems need simple programs.",
			n:    0,
			want: []string{"Go", "programs", "language", "simple", "systems", "open", "source", "programming", "makes", "build"},
		},
		{
			name: "english top 3",
			text: "Go is an open source programming language that makes it simple to build secure, scalable systems. " +
				"Go programs compile quickly; the Go toolchain builds programs and the language has garbage collection.",
			n: 3,
			// "language" and "programs" both occur twice; "language"
			// comes first in the text.
			want: []string{"Go", "language", "programs"},
		},
		{
			name: "chinese",
			text: "自然语言处理是人工智能领域的一个重要方向。它研究能实现人与计算机之间用自然语言进行有效通信的各种理论和方法。自然语言处理是一门融语言学、计算机科学、数学于一体的科学。",
			n:    10,
			want: []string{"自然语言", "处理", "计算机科学", "人工智能", "语言学", "一体", "一门", "计算机", "通信", "数学"},
		},
		{
			name: "mixed",
			text: "知识库 Knowledge Base 支持 economy 模式和 high_quality 模式",
			n:    10,
			want: []string{"模式", "Knowledge", "Base", "economy", "high", "quality", "知识库", "支持"},
		},
		{name: "only stop words and punctuation", text: "the a an, of — 的 了。", want: nil},
		{name: "empty", text: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Keywords(tt.text, tt.n)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Keywords = %q, want %q", got, tt.want)
			}
			// Deterministic.
			if again := Keywords(tt.text, tt.n); !slices.Equal(got, again) {
				t.Errorf("second call = %q", again)
			}
		})
	}
}

// The shared segmenter is read-only after loading; run under -race.
func TestKeywordsConcurrent(t *testing.T) {
	t.Parallel()
	text := sampleText(4000)
	want := Keywords(text, 10)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := Keywords(text, 10); !slices.Equal(got, want) {
				t.Errorf("concurrent Keywords = %q, want %q", got, want)
			}
		})
	}
	wg.Wait()
}

func TestKeywordsEach(t *testing.T) {
	t.Parallel()
	texts := []string{sampleText(3000), "", "Go programs and Go tools", "自然语言处理"}
	got := KeywordsEach(texts, 5)
	for i, text := range texts {
		if want := Keywords(text, 5); !slices.Equal(got[i], want) {
			t.Errorf("KeywordsEach[%d] = %q, want %q", i, got[i], want)
		}
	}
}

func TestTerms(t *testing.T) {
	if got, want := Terms("Hello, World! It's 2026."), "hello world it s 2026"; got != want {
		t.Errorf("Terms = %q, want %q", got, want)
	}
	got := Terms("我们喜欢自然语言处理")
	if !strings.Contains(got, " ") || strings.Contains(got, "我们喜欢自然语言处理") {
		t.Errorf("Chinese text was not segmented: %q", got)
	}
	if q := QueryTerms("a b a B"); len(q) != 2 || q[0] != "a" || q[1] != "b" {
		t.Errorf("QueryTerms = %q", q)
	}
}
