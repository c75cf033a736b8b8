package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// historyWant is what RecentMessages must return, worked out from ListMessages: the newest n
// normal messages, oldest first.
func historyWant(t *testing.T, s *Store, f chatFixture, convID string, n int) []Message {
	t.Helper()
	all, _, err := s.ListMessages(t.Context(), MessageQuery{AppID: f.app, EndUserID: f.alice.ID, ConversationID: convID, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	for _, m := range all {
		if m.Status == MessageStatusNormal {
			out = append(out, Message{ID: m.ID, ConversationID: m.ConversationID, Query: m.Query, Answer: m.Answer,
				Status: m.Status, CreatedAt: m.CreatedAt})
		}
	}
	return out[max(0, len(out)-n):]
}

func checkHistory(t *testing.T, s *Store, f chatFixture, convID string, step string) {
	t.Helper()
	for _, n := range []int{1, 7, 50} {
		got, err := s.RecentMessages(t.Context(), convID, n)
		if err != nil {
			t.Fatalf("%s: RecentMessages(%d): %v", step, n, err)
		}
		want := historyWant(t, s, f, convID, n)
		if !slices.EqualFunc(got, want, func(a, b Message) bool { return reflect.DeepEqual(a, b) }) {
			t.Fatalf("%s: RecentMessages(%d)\n got %v\nwant %v", step, n, got, want)
		}
	}
}

// TestRecentMessagesAgreesWithTheTable drives a conversation through random turns, written by
// this store and by a second one on the same database (another replica, or another process),
// and checks after every step that RecentMessages, whatever its cache holds, returns exactly
// the newest normal messages: new ones, ones that finish after being read, ones ended as
// interrupted and finished after all, failed and stopped runs (more of them than the ids read
// beyond the window), a message finished again. With a cache of a few entries, evictions too.
func TestRecentMessagesAgreesWithTheTable(t *testing.T) {
	t.Parallel()
	for _, cacheBytes := range []int{historyCacheBytes, 2000} {
		t.Run(fmt.Sprintf("cache=%d", cacheBytes), func(t *testing.T) {
			t.Parallel()
			storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
				ctx := t.Context()
				s := openEngine(t, e, true)
				s.history = newHistoryCache(cacheBytes)
				other := openEngine(t, e, false)
				f := newChatFixture(t, s)
				conv := newConversation(t, s, f.app, f.alice)
				rng := rand.New(rand.NewPCG(1, uint64(cacheBytes)))
				var running, normal []string
				sec := int64(0)
				for step := range 200 {
					by := s
					if rng.IntN(3) == 0 {
						by = other
					}
					name := fmt.Sprintf("step %d", step)
					switch op := rng.IntN(10); {
					case op < 4 || len(running) == 0: // a new message; several share a second
						if rng.IntN(2) == 0 {
							sec++
						}
						m, err := by.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID,
							Query: fmt.Sprintf("q%d", step), CreatedAt: at(sec)})
						if err != nil {
							t.Fatal(err)
						}
						running = append(running, m.ID)
						name += " create"
					case op < 8: // a run ends
						i := rng.IntN(len(running))
						id := running[i]
						running = slices.Delete(running, i, i+1)
						status := []string{MessageStatusNormal, MessageStatusNormal, MessageStatusError, MessageStatusStopped}[rng.IntN(4)]
						if err := by.FinishMessage(ctx, id, MessageResult{Answer: fmt.Sprintf("a%d %s", step, strings.Repeat("x", rng.IntN(300))), Status: status}); err != nil {
							t.Fatal(err)
						}
						if status == MessageStatusNormal {
							normal = append(normal, id)
						}
						name += " finish " + status
					case op < 9: // the sweep ends the running ones as interrupted; one still finishes
						if _, err := other.exec(ctx, "UPDATE messages SET status = ? WHERE status = ?", MessageStatusError, MessageStatusRunning); err != nil {
							t.Fatal(err)
						}
						if err := by.FinishMessage(ctx, running[0], MessageResult{Answer: "late", Status: MessageStatusNormal}); err != nil {
							t.Fatal(err)
						}
						normal = append(normal, running[0])
						running = nil
						name += " interrupted"
					default: // this process finishes a normal message again
						if len(normal) == 0 {
							continue
						}
						id := normal[rng.IntN(len(normal))]
						status := []string{MessageStatusNormal, MessageStatusStopped}[rng.IntN(2)]
						if err := s.FinishMessage(ctx, id, MessageResult{Answer: fmt.Sprintf("again %d", step), Status: status}); err != nil {
							t.Fatal(err)
						}
						name += " again " + status
					}
					checkHistory(t, s, f, conv.ID, name)
				}
			})
		})
	}
}

// TestRecentMessagesReadsTextOnce shows where the text of a history comes from: once read as
// normal, a message's query and answer are served from the cache (a write that bypasses the
// store is not seen), while a store that has not read them yet reads the table.
func TestRecentMessagesReadsTextOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openEngine(t, e, true)
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		var ids []string
		for i := range 5 {
			m, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: fmt.Sprintf("q%d", i), CreatedAt: at(int64(i))})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.FinishMessage(ctx, m.ID, MessageResult{Answer: fmt.Sprintf("a%d", i), Status: MessageStatusNormal}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		answers := func(s *Store) []string {
			got, err := s.RecentMessages(ctx, conv.ID, 3)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, m := range got {
				out = append(out, m.Answer)
			}
			return out
		}
		if got := answers(s); !slices.Equal(got, []string{"a2", "a3", "a4"}) {
			t.Fatalf("first read: %v", got)
		}
		if _, err := s.exec(ctx, "UPDATE messages SET answer = 'changed behind the store' WHERE id = ?", ids[3]); err != nil {
			t.Fatal(err)
		}
		if got := answers(s); !slices.Equal(got, []string{"a2", "a3", "a4"}) {
			t.Errorf("second read: %v, want the text read before", got)
		}
		if got := answers(openEngine(t, e, false)); !slices.Equal(got, []string{"a2", "changed behind the store", "a4"}) {
			t.Errorf("fresh store: %v, want the table's text", got)
		}
	})
}

func TestHistoryCacheBounds(t *testing.T) {
	t.Parallel()
	entry := func(id string, answer int) historyEntry {
		return historyEntry{id: id, query: "q", answer: strings.Repeat("a", answer)}
	}
	e := entry("1", 100)
	size := e.bytes()
	c := newHistoryCache(3 * size)
	c.maxEntry = 2 * size
	lookup := func(ids ...string) []bool {
		refs := make([]historyRef, len(ids))
		for i, id := range ids {
			refs[i].id = id
		}
		found, have := make([]historyEntry, len(ids)), make([]bool, len(ids))
		c.getAll(refs, found, have)
		return have
	}
	c.put(entry("1", 100))
	c.put(entry("2", 100))
	c.put(entry("3", 100))
	lookup("1") // 1 is now the most recently used; 2 the least
	c.put(entry("4", 100))
	if got := lookup("1", "2", "3", "4"); !slices.Equal(got, []bool{true, false, true, true}) {
		t.Errorf("after eviction: %v, want 2 evicted", got)
	}
	c.put(entry("3", 100)) // replacing keeps the size
	if c.size != 3*size || c.order.Len() != 3 || len(c.byID) != 3 {
		t.Errorf("size %d (want %d), %d in order, %d by id", c.size, 3*size, c.order.Len(), len(c.byID))
	}
	c.forget("3")
	c.forget("nope")
	if got := lookup("1", "3", "4"); !slices.Equal(got, []bool{true, false, true}) || c.size != 2*size {
		t.Errorf("after forget: %v, size %d", got, c.size)
	}
	c.put(entry("huge", 2*size)) // larger than maxEntry: not kept
	if got := lookup("huge", "1", "4"); !slices.Equal(got, []bool{false, true, true}) {
		t.Errorf("huge entry: %v", got)
	}
}
