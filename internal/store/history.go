package store

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
)

// A conversation's history, as a prompt replays it: [Store.RecentMessages].
//
// Every turn of a conversation replays its newest exchanges, so each message is read again on
// every later turn until it leaves the window. Read from the messages table, those rows are
// scattered (rows of many conversations interleave in insertion order), and on SQLite each
// commit by another connection empties a connection's page cache: under concurrent chats a
// 50-exchange history cost one page read per exchange, more than the rest of the request.
//
// So the history is read in two steps: the ids of the newest messages come from the
// conversation's index alone (a few adjacent pages), and the text of each message from
// historyCache, which keeps the query and answer of messages read as normal; only the
// messages not seen before (usually just the previous turn's) are read from the table. The
// cache holds what cannot change: once a message is normal its run has finished and stored it
// for good (see [Store.FinishMessage], which also drops the message from this process's
// cache, should it be finished again). A conversation's membership, order and statuses always
// come from the database, so replicas sharing one never serve each other stale histories.

// historyCacheBytes bounds the text the history cache keeps (queries and answers): about 500
// full 50-exchange windows of 1 KB answers.
const historyCacheBytes = 32 << 20

// historyMaxMisses is how many messages of a history may be missing from the cache before
// RecentMessages reads the whole history in one query instead (a conversation not seen since
// the process started, or evicted).
const historyMaxMisses = 8

// historySlack is how many ids beyond the window RecentMessages reads, so that a few failed or
// stopped exchanges among the newest do not send it back to the table.
const historySlack = 8

// historyCache is a least-recently-used map from message id to its query and answer, bounded
// by the bytes of text it holds.
type historyCache struct {
	mu  sync.Mutex
	max int
	// maxEntry is the largest entry kept: one huge answer would evict many ordinary ones.
	maxEntry int
	size     int
	order    *list.List // of *historyEntry, most recently used first
	byID     map[string]*list.Element
}

type historyEntry struct {
	id, query, answer string
}

// historyRef is a message of a conversation as its index has it.
type historyRef struct {
	id      string
	created int64
}

func (e *historyEntry) bytes() int { return len(e.id) + len(e.query) + len(e.answer) + 64 }

func newHistoryCache(maxBytes int) *historyCache {
	return &historyCache{max: maxBytes, maxEntry: maxBytes / 16, order: list.New(), byID: make(map[string]*list.Element)}
}

// getAll looks up each of ids, setting have[i] and found[i].
func (c *historyCache) getAll(ids []historyRef, found []historyEntry, have []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range ids {
		el, ok := c.byID[r.id]
		if have[i] = ok; ok {
			c.order.MoveToFront(el)
			found[i] = *el.Value.(*historyEntry)
		}
	}
}

func (c *historyCache) put(e historyEntry) {
	if e.bytes() > c.maxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[e.id]; ok {
		c.size -= el.Value.(*historyEntry).bytes()
		c.order.Remove(el)
	}
	c.byID[e.id] = c.order.PushFront(&e)
	c.size += e.bytes()
	for c.size > c.max {
		old := c.order.Back()
		oe := old.Value.(*historyEntry)
		c.order.Remove(old)
		delete(c.byID, oe.id)
		c.size -= oe.bytes()
	}
}

func (c *historyCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.size -= el.Value.(*historyEntry).bytes()
		c.order.Remove(el)
		delete(c.byID, id)
	}
}

// RecentMessages returns the newest n messages of the conversation whose
// status is MessageStatusNormal, ordered oldest to newest: the history to
// replay into a prompt. Running, failed and stopped exchanges are left out.
// It does not check visibility; the caller has already resolved the
// conversation.
//
// Only what a replay needs is read: ID, ConversationID, Query, Answer,
// Status and CreatedAt are set, every other field is zero.
func (s *Store) RecentMessages(ctx context.Context, conversationID string, n int) ([]Message, error) {
	if n < 1 {
		return nil, nil
	}
	out, ok, err := s.recentFromCache(ctx, conversationID, n)
	if err == nil && !ok {
		out, err = s.recentFromTable(ctx, conversationID, n)
	}
	if err != nil {
		return nil, fmt.Errorf("store: recent messages of %s: %w", conversationID, err)
	}
	// Newest first so far.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// recentFromCache builds the history from the conversation's index and the cache, reading
// from the table only the messages the cache lacks. ok is false when too many are missing, or
// when more than n non-normal messages stand among the newest: recentFromTable is cheaper.
// The messages are newest first.
func (s *Store) recentFromCache(ctx context.Context, conversationID string, n int) (out []Message, ok bool, err error) {
	limit := n + historySlack
	rows, err := s.conn().QueryContext(ctx, s.Rebind(
		"SELECT id, created_at FROM messages WHERE conversation_id = ? ORDER BY created_at DESC, id DESC LIMIT ?"),
		conversationID, limit)
	if err != nil {
		return nil, false, err
	}
	refs := make([]historyRef, 0, min(limit, 128))
	for rows.Next() {
		var r historyRef
		if err := rows.Scan(&r.id, &r.created); err != nil {
			rows.Close()
			return nil, false, err
		}
		refs = append(refs, r)
	}
	if err := rows.Close(); err != nil {
		return nil, false, err
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	out = make([]Message, 0, min(n, len(refs)))
	cached := make([]historyEntry, len(refs))
	have := make([]bool, len(refs))
	for next := 0; len(out) < n && next < len(refs); {
		// The next candidates: as many as are still wanted, should they all be normal.
		end := min(len(refs), next+n-len(out))
		batch, cached, have := refs[next:end], cached[next:end], have[next:end]
		next = end
		s.history.getAll(batch, cached, have)
		var missing []string
		for i, r := range batch {
			if !have[i] {
				missing = append(missing, r.id)
			}
		}
		if len(missing) > historyMaxMisses {
			return nil, false, nil
		}
		read, err := s.normalMessages(ctx, missing)
		if err != nil {
			return nil, false, err
		}
		for i, r := range batch {
			e := cached[i]
			if !have[i] {
				var normal bool
				if e, normal = read[r.id]; !normal {
					continue // running, failed or stopped
				}
				s.history.put(e)
			}
			out = append(out, Message{ID: e.id, ConversationID: conversationID, Query: e.query, Answer: e.answer,
				Status: MessageStatusNormal, CreatedAt: fromUnix(r.created)})
		}
	}
	if len(out) < n && len(refs) == limit {
		return nil, false, nil // older normal messages may lie beyond the ids read
	}
	return out, true, nil
}

// normalMessages reads the query and answer of those of the messages that are normal.
func (s *Store) normalMessages(ctx context.Context, ids []string) (map[string]historyEntry, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// The status is a literal, not a parameter: SQLite re-plans a statement on every run when a
	// parameter's value might decide whether a partial index applies (messages_running_updated
	// covers status = 'running').
	q := "SELECT id, query, answer FROM messages WHERE status = '" + MessageStatusNormal + "' AND id IN (?" +
		strings.Repeat(", ?", len(ids)-1) + ")"
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.conn().QueryContext(ctx, s.Rebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]historyEntry, len(ids))
	for rows.Next() {
		var e historyEntry
		if err := rows.Scan(&e.id, &e.query, &e.answer); err != nil {
			return nil, err
		}
		out[e.id] = e
	}
	return out, rows.Err()
}

// recentFromTable reads the history in one query, filling the cache; newest first.
func (s *Store) recentFromTable(ctx context.Context, conversationID string, n int) ([]Message, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(
		"SELECT id, query, answer, created_at FROM messages WHERE conversation_id = ? AND status = '"+MessageStatusNormal+
			"' ORDER BY created_at DESC, id DESC LIMIT ?"),
		conversationID, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]Message, 0, min(n, 64))
	var (
		e       historyEntry
		created int64
	)
	for rows.Next() {
		if err := rows.Scan(&e.id, &e.query, &e.answer, &created); err != nil {
			return nil, err
		}
		s.history.put(e)
		out = append(out, Message{ID: e.id, ConversationID: conversationID, Query: e.query, Answer: e.answer,
			Status: MessageStatusNormal, CreatedAt: fromUnix(created)})
	}
	return out, rows.Err()
}
