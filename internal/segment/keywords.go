package segment

import (
	"cmp"
	_ "embed"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-ego/gse"
)

// DefaultKeywordNumber is Dify's default dataset keyword_number
// (docs/knowledge.md).
const DefaultKeywordNumber = 10

//go:embed stopwords.txt
var stopwordsFile string

// stopwords is built at package init from stopwordsFile (lower-case).
var stopwords = func() map[string]struct{} {
	m := make(map[string]struct{}, 400)
	for line := range strings.Lines(stopwordsFile) {
		w := strings.TrimSpace(line)
		if w == "" || strings.HasPrefix(w, "#") {
			continue
		}
		m[strings.ToLower(w)] = struct{}{}
	}
	return m
}()

// zhDict selects gse's embedded simplified-Chinese dictionary. jieba's
// default dictionary is essentially simplified Chinese too. Loading "zh"
// (simplified + traditional) instead roughly doubles the cost: measured
// about 2.3 s and 195 MB of heap against 1.25 s and 128 MB for "zh_s".
// Traditional text still segments, through gse's HMM for unknown words.
const zhDict = "zh_s"

// zh is the lazily loaded Chinese segmenter and IDF table.
var zh struct {
	once      sync.Once
	seg       gse.Segmenter
	idf       map[string]float64
	medianIDF float64
}

func loadZh() {
	zh.once.Do(func() {
		zh.seg.SkipLog = true
		// The error is always nil for embedded data.
		_ = zh.seg.LoadDictEmbed(zhDict)
		zh.idf, zh.medianIDF = parseIDF(gse.ZhIdf)
	})
}

// parseIDF reads gse's embedded IDF table ("word idf" per line, the same
// data as jieba's idf.txt) and its median value, which jieba uses for
// words missing from the table.
func parseIDF(data string) (map[string]float64, float64) {
	m := make(map[string]float64, 280000)
	vals := make([]float64, 0, 280000)
	for line := range strings.Lines(data) {
		line = strings.TrimSpace(line)
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		return m, 0
	}
	slices.Sort(vals)
	return m, vals[len(vals)/2]
}

// idfFor returns the IDF of w, or the median when unknown. Text without
// Han characters never loads the table: every one of its words gets the
// same weight, so the ranking is by term frequency alone, as with jieba
// for words its table does not know. That ranking is identical for any
// constant, so englishIDF stands in for the median.
func idfFor(w string, loaded bool) float64 {
	if !loaded {
		return englishIDF
	}
	if v, ok := zh.idf[w]; ok {
		return v
	}
	return zh.medianIDF
}

const englishIDF = 1.0

// Keywords extracts up to n keywords (n ≤ 0 means DefaultKeywordNumber)
// the way Dify's economy keyword table does (docs/knowledge.md, jieba
// extract_tags + sub-token expansion):
//
//   - the text is cut into words: runs of Han characters with gse (DAG +
//     HMM, like jieba's default cut), other letters/digits as runs of
//     letters and digits; everything else separates words;
//   - words shorter than two characters and stop words (compared in lower
//     case) are skipped; words keep their case, as in jieba;
//   - weight = (count / total kept words) × IDF, with gse's embedded IDF
//     table (jieba's data) and its median for unknown words;
//   - the n heaviest words are returned, ties broken by first occurrence
//     (Python's stable sort), then any \w+ sub-tokens of multi-part
//     keywords that are not stop words and not already listed.
//
// The result order is deterministic. Dify itself returns a set.
func Keywords(text string, n int) []string {
	if n <= 0 {
		n = DefaultKeywordNumber
	}
	hasHan := containsHan(text)
	type term struct {
		word   string
		count  int
		weight float64
	}
	terms := make([]term, 0, len(text)/8)
	index := make(map[string]int, len(text)/8)
	total := 0
	eachWord(text, hasHan, func(w string) {
		if utf8.RuneCountInString(w) < 2 {
			return
		}
		if _, stop := stopwords[strings.ToLower(w)]; stop {
			return
		}
		i, ok := index[w]
		if !ok {
			i = len(terms)
			index[w] = i
			terms = append(terms, term{word: w})
		}
		terms[i].count++
		total++
	})
	if total == 0 {
		return nil
	}
	for i := range terms {
		terms[i].weight = float64(terms[i].count) / float64(total) * idfFor(terms[i].word, hasHan)
	}
	// Stable: equal weights keep first-occurrence order, like Python's
	// sorted(..., reverse=True).
	slices.SortStableFunc(terms, func(a, b term) int { return cmp.Compare(b.weight, a.weight) })
	order := make([]string, 0, min(n, len(terms)))
	for _, t := range terms[:min(n, len(terms))] {
		order = append(order, t.word)
	}
	out := slices.Clone(order)
	seen := make(map[string]struct{}, len(out))
	for _, w := range out {
		seen[w] = struct{}{}
	}
	// Words outside Chinese runs are single \w+ runs already; only segmenter output can hold
	// several.
	for _, w := range order {
		if !hasHan {
			break
		}
		subs := wordRe.FindAllString(w, -1)
		if len(subs) < 2 {
			continue
		}
		for _, s := range subs {
			if _, stop := stopwords[strings.ToLower(s)]; stop {
				continue
			}
			if _, ok := seen[s]; ok {
				continue
			}
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

// wordRe is Python's \w+ (letters, digits, marks and underscore).
var wordRe = regexp.MustCompile(`[\p{L}\p{N}\p{M}_]+`)

// eachWord calls emit for every word of text in order.
func eachWord(text string, hasHan bool, emit func(string)) {
	start, kind := 0, 0 // kind: 0 none, 1 han, 2 other word characters
	flush := func(end int) {
		switch kind {
		case 1:
			for _, w := range zh.seg.Cut(text[start:end], true) {
				emit(w)
			}
		case 2:
			emit(text[start:end])
		}
	}
	for i, r := range text {
		k := 0
		switch {
		case r < utf8.RuneSelf:
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				k = 2
			}
		case hasHan && unicode.Is(unicode.Han, r):
			k = 1
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			k = 2
		}
		if k != kind {
			flush(i)
			start, kind = i, k
		}
	}
	flush(len(text))
}

// KeywordsEach returns Keywords(text, n) for every text, spreading the
// work over up to GOMAXPROCS goroutines (the Chinese segmenter is the
// costly part of economy indexing and is safe for concurrent use).
func KeywordsEach(texts []string, n int) [][]string {
	out := make([][]string, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	if workers <= 1 {
		for i, t := range texts {
			out[i] = Keywords(t, n)
		}
		return out
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i] = Keywords(texts[i], n)
			}
		})
	}
	for i := range texts {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
