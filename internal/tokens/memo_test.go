package tokens

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/providers"
)

// TestMemo counts through the memo with a counter that records its calls: a text is counted
// once while it stays in use, again only after two generations of other texts have passed it
// by, and texts with the same hash but another length are not confused.
func TestMemo(t *testing.T) {
	t.Parallel()
	m := newMemo()
	calls := map[string]int{}
	count := func(s string) int { calls[s]++; return len(s) }
	for range 3 {
		if got := m.count("hello there", count); got != 11 {
			t.Fatalf("count = %d", got)
		}
	}
	if calls["hello there"] != 1 {
		t.Fatalf("counted %d times, want once", calls["hello there"])
	}
	if got := m.count("", count); got != 0 || calls[""] != 1 {
		t.Errorf("empty text: %d, %d calls", got, calls[""])
	}

	// Fill the shard of "keep" and "drop" twice over with other texts, using "keep" all along:
	// it moves to each new generation, "drop" ages out.
	h := func(s string) uint64 { return m.hash(s) % memoShards }
	m.count("keep", count)
	drop := ""
	for i := 0; drop == ""; i++ {
		if s := fmt.Sprintf("drop %d", i); h(s) == h("keep") {
			drop = s
		}
	}
	m.count(drop, count)
	for i, added := 0, 0; added < 2*memoShardSize+1; i++ {
		s := fmt.Sprintf("other %d", i)
		if h(s) != h("keep") {
			continue
		}
		m.count(s, count)
		added++
		if added%(memoShardSize/2) == 0 {
			m.count("keep", count)
		}
	}
	m.count("keep", count)
	m.count(drop, count)
	if calls["keep"] != 1 || calls[drop] != 2 {
		t.Errorf("counted keep %d times (want 1), %s %d times (want 2)", calls["keep"], drop, calls[drop])
	}

	// An entry is taken only for a text of its length.
	sh := &m.shards[h("abc")]
	sh.mu.Lock()
	sh.put(m.hash("abc"), memoEntry{tokens: 99, size: 4})
	sh.mu.Unlock()
	if got := m.count("abc", count); got != 3 {
		t.Errorf("count(abc) = %d from an entry of another length", got)
	}
}

// TestCountMessagesRemembers counts a conversation's history again, as every turn does: the
// second count is the first's, and a history that changes by one exchange counts that exchange
// alone.
func TestCountMessagesRemembers(t *testing.T) {
	t.Parallel()
	c, err := New(DefaultEncoding)
	if err != nil {
		t.Fatal(err)
	}
	var history []providers.Message
	for i := range 20 {
		history = append(history,
			providers.Message{Role: providers.RoleUser, Content: fmt.Sprintf("Question %d?", i)},
			providers.Message{Role: providers.RoleAssistant, Content: strings.Repeat(fmt.Sprintf("Answer %d. ", i), 30)})
	}
	want := countMessages(c.Count, history)
	if got := c.CountMessages(history); got != want {
		t.Fatalf("first count %d, want %d", got, want)
	}
	for _, m := range history {
		if _, ok := lookup(c.memo, m.Content); !ok {
			t.Fatalf("%q not remembered", m.Content)
		}
	}
	if got := c.CountMessages(history); got != want {
		t.Fatalf("second count %d, want %d", got, want)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got := c.CountMessages(history); got != want {
				t.Errorf("concurrent count %d, want %d", got, want)
			}
		})
	}
	wg.Wait()
}

func lookup(m *memo, text string) (memoEntry, bool) {
	h := m.hash(text)
	sh := &m.shards[h%memoShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.cur[h]
	if !ok {
		e, ok = sh.old[h]
	}
	return e, ok
}

// BenchmarkCountHistory is what sizing a prompt costs per turn of a conversation of 50 long
// exchanges (about 200 KB): the first turn tokenizes it, later ones find it remembered.
func BenchmarkCountHistory(b *testing.B) {
	Warm()
	var history []providers.Message
	for i := range 50 {
		history = append(history,
			providers.Message{Role: providers.RoleUser, Content: fmt.Sprintf("Tell me more about point %d.", i)},
			providers.Message{Role: providers.RoleAssistant, Content: strings.Repeat(fmt.Sprintf("Point %d matters because the quick brown fox jumps over the lazy dog. ", i), 55)})
	}
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, _ := New(DefaultEncoding) // a fresh memo each time
			c.CountMessages(history)
		}
	})
	b.Run("again", func(b *testing.B) {
		c, _ := New(DefaultEncoding)
		c.CountMessages(history)
		b.ReportAllocs()
		for b.Loop() {
			c.CountMessages(history)
		}
	})
}
