package tokens

import (
	"hash/maphash"
	"sync"
)

// memo remembers token counts by text, for the texts counted over and over: every turn of a
// conversation replays its history into the prompt, and counting the same answers again on
// every turn cost a long conversation tens of milliseconds per message (the tokenizer reads
// about 4 MB/s), against a few microseconds to hash them.
//
// Entries are keyed by a 64-bit hash of the text under a per-process random seed, and keep the
// text's length as a second check, so the text itself is not kept. Each shard holds two
// generations of at most memoShardSize entries: a hit in the old one moves the entry to the
// current one, and when the current one is full it becomes the old one (dropping the old one
// before it), so texts in use stay and the memory stays bounded (about memoSize entries × 2).
type memo struct {
	seed   maphash.Seed
	shards [memoShards]memoShard
}

const (
	memoShards    = 16
	memoShardSize = 4096
	// memoSize is how many texts the memo keeps at least: at two texts per exchange, the full
	// history windows of about 650 long conversations.
	memoSize = memoShards * memoShardSize
)

type memoShard struct {
	mu       sync.Mutex
	cur, old map[uint64]memoEntry
}

type memoEntry struct {
	tokens, size int32
}

func newMemo() *memo {
	return &memo{seed: maphash.MakeSeed()}
}

// count returns count(text), from the memo when text was counted before.
func (m *memo) count(text string, count func(string) int) int {
	if text == "" {
		return count(text)
	}
	h := m.hash(text)
	sh := &m.shards[h%memoShards]
	size := int32(min(len(text), 1<<31-1))
	sh.mu.Lock()
	if e, ok := sh.cur[h]; ok && e.size == size {
		sh.mu.Unlock()
		return int(e.tokens)
	}
	if e, ok := sh.old[h]; ok && e.size == size {
		sh.put(h, e)
		sh.mu.Unlock()
		return int(e.tokens)
	}
	sh.mu.Unlock()
	n := count(text)
	sh.mu.Lock()
	sh.put(h, memoEntry{tokens: int32(min(n, 1<<31-1)), size: size})
	sh.mu.Unlock()
	return n
}

func (m *memo) hash(text string) uint64 { return maphash.String(m.seed, text) }

// put stores e under h in the current generation, starting a new one when it is full.
func (sh *memoShard) put(h uint64, e memoEntry) {
	if sh.cur == nil || len(sh.cur) >= memoShardSize {
		sh.old, sh.cur = sh.cur, make(map[uint64]memoEntry, memoShardSize)
	}
	sh.cur[h] = e
}
