package segment

import (
	"strings"
	"testing"
)

// 1 MB of prose, mostly English with Chinese paragraphs (sampleText).
var benchText = sampleText(1 << 20)

func BenchmarkSplitAutomatic(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		if _, err := (Splitter{}).Split(benchText, ProcessRule{Mode: ModeAutomatic}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplitAutomaticNoTokens(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		if _, err := (Splitter{NoTokens: true}).Split(benchText, ProcessRule{Mode: ModeAutomatic}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplitCustom(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	rule := custom(`\n\n`, 1000, 100)
	for b.Loop() {
		if _, err := (Splitter{}).Split(benchText, rule); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEconomyIndexing is the economy path: split (automatic, no
// token counting, as Dify stores 0 tokens for economy) then keywords for
// every chunk.
func BenchmarkEconomyIndexing(b *testing.B) {
	loadZh()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		chunks, err := Splitter{NoTokens: true}.Split(benchText, ProcessRule{Mode: ModeAutomatic})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range chunks {
			Keywords(c.Content, DefaultKeywordNumber)
		}
	}
}

// BenchmarkEconomyIndexingParallel is BenchmarkEconomyIndexing with the
// keywords spread over GOMAXPROCS goroutines (KeywordsEach).
func BenchmarkEconomyIndexingParallel(b *testing.B) {
	loadZh()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		chunks, err := Splitter{NoTokens: true}.Split(benchText, ProcessRule{Mode: ModeAutomatic})
		if err != nil {
			b.Fatal(err)
		}
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Content
		}
		KeywordsEach(texts, DefaultKeywordNumber)
	}
}

func BenchmarkKeywordsEnglish(b *testing.B) {
	text := strings.Repeat("Economy datasets use a keyword table instead of embeddings: every chunk contributes keywords. ", 5)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Keywords(text, 10)
	}
}

func BenchmarkKeywordsChinese(b *testing.B) {
	loadZh()
	text := strings.Repeat("知识库中的文档会被清洗、分段并建立索引。经济模式使用关键词表而不是向量。", 5)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Keywords(text, 10)
	}
}
