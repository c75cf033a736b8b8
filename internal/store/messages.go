package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Message statuses, as stored in messages.status. Running exists only
// while an answer is being generated; the others are Dify's values.
const (
	MessageStatusRunning = "running"
	MessageStatusNormal  = "normal"
	MessageStatusError   = "error"
	MessageStatusStopped = "stopped"
)

// DefaultCurrency is stored when a message names no currency.
const DefaultCurrency = "USD"

// Message is one exchange in a conversation: the end user's query and the
// app's answer, with what producing the answer cost.
//
// Cost is kept two ways. The columns MessageTokens … ProviderResponseLatency
// are the flat figures Dify's history returns (docs/dify-compat.md);
// prices are decimal strings ("0.0015") so that neither engine rounds them.
// Metadata is a JSON object for everything richer, stored verbatim: Dify's
// message_end metadata with "usage" (the full LLMUsage object) and
// "retriever_resources". The store never looks inside it.
type Message struct {
	ID             string
	AppID          string
	ConversationID string
	EndUserID      string
	// ParentMessageID is the message this one answers after, or "".
	ParentMessageID string
	Query           string
	Answer          string
	// Inputs is the JSON object of input values for this message; empty is
	// stored as {}.
	Inputs json.RawMessage
	// Status is one of the MessageStatus* constants.
	Status string
	// Error is the failure shown to the client when Status is error, or "".
	Error string

	MessageTokens int64
	AnswerTokens  int64
	TotalTokens   int64
	// MessageUnitPrice and AnswerUnitPrice are prices per PriceUnit tokens
	// of prompt and answer; TotalPrice is what the message cost, in
	// Currency. All are decimal strings, "0" when empty.
	MessageUnitPrice string
	AnswerUnitPrice  string
	PriceUnit        string
	TotalPrice       string
	// Currency defaults to DefaultCurrency.
	Currency string
	// ProviderResponseLatency is in seconds.
	ProviderResponseLatency float64

	TaskID        string
	ModelProvider string
	ModelID       string
	// Metadata is a JSON object (usage, retriever_resources …); empty is
	// stored as {}.
	Metadata  json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MessageResult is the outcome of generating a message, written by
// [Store.FinishMessage]. Empty prices are stored as "0", an empty currency
// as DefaultCurrency, empty metadata as {}.
type MessageResult struct {
	Answer string
	// Status is MessageStatusNormal, MessageStatusError or
	// MessageStatusStopped.
	Status string
	// Error is the failure message for MessageStatusError, or "".
	Error string

	MessageTokens           int64
	AnswerTokens            int64
	TotalTokens             int64
	MessageUnitPrice        string
	AnswerUnitPrice         string
	PriceUnit               string
	TotalPrice              string
	Currency                string
	ProviderResponseLatency float64
	Metadata                json.RawMessage
	// RetrieverResources are the knowledge chunks the answer cited, stored with the outcome
	// as [Store.AddRetrieverResources] stores them (MessageID is set to the message's).
	RetrieverResources []RetrieverResource
}

// MessageQuery selects one page of a conversation's messages.
type MessageQuery struct {
	AppID          string
	EndUserID      string
	ConversationID string
	// FirstID is the id of the oldest message the client already has, or
	// "" for the newest page.
	FirstID string
	// Limit is the page size; it must be positive.
	Limit int
}

const messageColumns = `id, app_id, conversation_id, end_user_id, parent_message_id, query, answer, inputs, status, error,
message_tokens, answer_tokens, total_tokens, message_unit_price, answer_unit_price, price_unit, total_price, currency,
provider_response_latency, task_id, model_provider, model_id, metadata, created_at, updated_at`

// messageColumnsM is messageColumns qualified with the table alias m.
var messageColumnsM = qualify("m", messageColumns)

func validMessageStatus(s string) bool {
	switch s {
	case MessageStatusRunning, MessageStatusNormal, MessageStatusError, MessageStatusStopped:
		return true
	}
	return false
}

// costs normalises the cost fields shared by Message and MessageResult.
type costs struct {
	messageUnitPrice, answerUnitPrice, priceUnit, totalPrice, currency string
}

func normaliseCosts(c costs) (costs, error) {
	for _, p := range []*string{&c.messageUnitPrice, &c.answerUnitPrice, &c.priceUnit, &c.totalPrice} {
		if *p == "" {
			*p = "0"
		}
		if !isDecimal(*p) {
			return costs{}, fmt.Errorf("price %q is not a plain decimal number", *p)
		}
	}
	if c.currency == "" {
		c.currency = DefaultCurrency
	}
	return c, nil
}

// CreateMessage stores a new message and, in the same transaction, moves its
// conversation's updated_at forward to the message's CreatedAt. ID defaults
// to [NewID], Status to MessageStatusRunning, CreatedAt to now, UpdatedAt to
// CreatedAt; other defaults are as for [MessageResult]. The conversation must
// be live and belong to the message's app and end user: otherwise the error
// wraps [ErrNotFound]. A duplicate id gives an error wrapping [ErrConflict].
// The files, if any, are stored with the message, in the same transaction, as
// [Store.AddMessageFiles] stores them (their MessageID is set to the
// message's): a message is never seen without its files. It returns the
// message as stored.
func (s *Store) CreateMessage(ctx context.Context, m Message, files ...MessageFile) (Message, error) {
	if err := prepareMessage(&m); err != nil {
		return Message{}, err
	}
	fs, err := prepareMessageFiles(files, m.ID)
	if err != nil {
		return Message{}, fmt.Errorf("store: create message: %w", err)
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		if err := s.insertMessage(ctx, s.inTx(tx), m); err != nil {
			return err
		}
		return s.insertMessageFiles(ctx, s.inTx(tx), fs)
	})
	if err != nil {
		return Message{}, fmt.Errorf("store: create message: %w", err)
	}
	return m, nil
}

// prepareMessage fills in defaults and checks m before it is stored.
func prepareMessage(m *Message) error {
	if m.ID == "" {
		m.ID = NewID()
	}
	if m.Status == "" {
		m.Status = MessageStatusRunning
	}
	if !validMessageStatus(m.Status) {
		return fmt.Errorf("store: create message: unknown status %q", m.Status)
	}
	c, err := normaliseCosts(costs{m.MessageUnitPrice, m.AnswerUnitPrice, m.PriceUnit, m.TotalPrice, m.Currency})
	if err != nil {
		return fmt.Errorf("store: create message: %w", err)
	}
	m.MessageUnitPrice, m.AnswerUnitPrice, m.PriceUnit, m.TotalPrice, m.Currency = c.messageUnitPrice, c.answerUnitPrice, c.priceUnit, c.totalPrice, c.currency
	inputs, err := jsonText(m.Inputs)
	if err != nil {
		return fmt.Errorf("store: create message: inputs: %w", err)
	}
	metadata, err := jsonText(m.Metadata)
	if err != nil {
		return fmt.Errorf("store: create message: metadata: %w", err)
	}
	m.Inputs, m.Metadata = json.RawMessage(inputs), json.RawMessage(metadata)
	m.CreatedAt = fromUnix(nowOr(m.CreatedAt).Unix())
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	m.UpdatedAt = fromUnix(m.UpdatedAt.Unix())
	return nil
}

// insertMessage writes a prepared message through q, which must be a transaction: the touch of
// the conversation and the insert go together.
func (s *Store) insertMessage(ctx context.Context, q execer, m Message) error {
	if err := s.touchConversation(ctx, q, m); err != nil {
		return err
	}
	return s.insertMessageRow(ctx, q, m)
}

// touchConversation moves the updated_at of m's conversation on to m's creation. It doubles as
// the ownership check: it matches only a live conversation of m's app and end user.
func (s *Store) touchConversation(ctx context.Context, q execer, m Message) error {
	created := m.CreatedAt.Unix()
	res, err := q.ExecContext(ctx, s.Rebind(`UPDATE conversations
SET updated_at = CASE WHEN updated_at < ? THEN ? ELSE updated_at END
WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL`),
		created, created, m.ConversationID, m.AppID, m.EndUserID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("conversation %s: %w", m.ConversationID, ErrNotFound)
	}
	return nil
}

// insertMessageRow inserts a prepared message's row through q.
func (s *Store) insertMessageRow(ctx context.Context, q execer, m Message) error {
	_, err := q.ExecContext(ctx, s.Rebind("INSERT INTO messages ("+messageColumns+
		") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
		m.ID, m.AppID, m.ConversationID, m.EndUserID, nullString(m.ParentMessageID), m.Query, m.Answer, string(m.Inputs), m.Status, nullString(m.Error),
		m.MessageTokens, m.AnswerTokens, m.TotalTokens, m.MessageUnitPrice, m.AnswerUnitPrice, m.PriceUnit, m.TotalPrice, m.Currency,
		m.ProviderResponseLatency, m.TaskID, m.ModelProvider, m.ModelID, string(m.Metadata), m.CreatedAt.Unix(), m.UpdatedAt.Unix())
	switch {
	case err == nil:
		return nil
	case isForeignKeyViolation(err):
		return fmt.Errorf("parent message %s: %w", m.ParentMessageID, ErrNotFound)
	default:
		return mapError(err)
	}
}

// FinishMessage records the outcome of generating a message: answer,
// status, error, tokens, prices, latency and metadata all replace what was
// stored, and updated_at becomes now; the retriever resources, if any, are
// stored in the same transaction, so a crash never leaves some of them
// without the rest of the outcome. There is no state check, so the last
// write wins (a stop racing the normal end, a retry after a lost reply, a
// live run outliving [Store.EndStaleMessages]); calling it twice with the
// same result is harmless. An unknown id gives an error wrapping
// [ErrNotFound].
//
// The outcome must be stored even when the client has hung up, so do not
// pass the request context as is: its cancellation would abort the write.
// Pass context.WithoutCancel(reqCtx), bounded with a timeout of its own:
//
//	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), 10*time.Second)
//	defer cancel()
//	err := st.FinishMessage(ctx, id, result)
func (s *Store) FinishMessage(ctx context.Context, id string, r MessageResult) error {
	if r.Status == MessageStatusRunning || !validMessageStatus(r.Status) {
		return fmt.Errorf("store: finish message %s: status %q is not a final status", id, r.Status)
	}
	// A message is finished once; should it be again, the history must not replay the old text.
	defer s.history.forget(id)
	c, err := normaliseCosts(costs{r.MessageUnitPrice, r.AnswerUnitPrice, r.PriceUnit, r.TotalPrice, r.Currency})
	if err != nil {
		return fmt.Errorf("store: finish message %s: %w", id, err)
	}
	metadata, err := jsonText(r.Metadata)
	if err != nil {
		return fmt.Errorf("store: finish message %s: metadata: %w", id, err)
	}
	const update = `UPDATE messages SET answer = ?, status = ?, error = ?,
message_tokens = ?, answer_tokens = ?, total_tokens = ?,
message_unit_price = ?, answer_unit_price = ?, price_unit = ?, total_price = ?, currency = ?,
provider_response_latency = ?, metadata = ?, updated_at = ?
WHERE id = ?`
	args := []any{r.Answer, r.Status, nullString(r.Error),
		r.MessageTokens, r.AnswerTokens, r.TotalTokens,
		c.messageUnitPrice, c.answerUnitPrice, c.priceUnit, c.totalPrice, c.currency,
		r.ProviderResponseLatency, metadata, time.Now().Unix(),
		id}
	if len(r.RetrieverResources) == 0 {
		// One statement: no transaction to begin and commit on the common path.
		res, err := s.exec(ctx, update, args...)
		if err != nil {
			return fmt.Errorf("store: finish message %s: %w", id, err)
		}
		return affectedOne(res, "store: finish message "+id)
	}
	rs := make([]RetrieverResource, len(r.RetrieverResources))
	for i, rr := range r.RetrieverResources {
		rr.MessageID = id
		rs[i] = rr
	}
	rs, err = prepareRetrieverResources(rs)
	if err != nil {
		return fmt.Errorf("store: finish message %s: %w", id, err)
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		res, err := s.inTx(tx).ExecContext(ctx, s.Rebind(update), args...)
		if err != nil {
			return mapError(err)
		}
		if err := affectedOne(res, "message "+id); err != nil {
			return err
		}
		return s.insertRetrieverResources(ctx, s.inTx(tx), rs, true)
	})
	if err != nil {
		return fmt.Errorf("store: finish message %s: %w", id, err)
	}
	return nil
}

// Message returns the message with the given id if it belongs to appID and
// endUserID and its conversation has not been deleted; otherwise an error
// wrapping [ErrNotFound] that does not say which check failed.
func (s *Store) Message(ctx context.Context, appID, endUserID, id string) (Message, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+messageColumnsM+` FROM messages m
JOIN conversations c ON c.id = m.conversation_id
WHERE m.id = ? AND m.app_id = ? AND m.end_user_id = ? AND c.deleted_at IS NULL`), id, appID, endUserID)
	m, err := scanMessage(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("store: message %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("store: message %s: %w", id, err)
	}
	return m, nil
}

// FirstMessage returns the oldest message of a conversation the caller may see (see
// [Store.Conversation]), by (created_at, id). A conversation without messages, or one the
// caller may not see, gives an error wrapping [ErrNotFound].
func (s *Store) FirstMessage(ctx context.Context, appID, endUserID, conversationID string) (Message, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+messageColumnsM+` FROM messages m
JOIN conversations c ON c.id = m.conversation_id
WHERE m.conversation_id = ? AND m.app_id = ? AND m.end_user_id = ? AND c.deleted_at IS NULL
ORDER BY m.created_at, m.id LIMIT 1`), conversationID, appID, endUserID)
	m, err := scanMessage(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("store: first message of %s: %w", conversationID, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("store: first message of %s: %w", conversationID, err)
	}
	return m, nil
}

// ListMessages returns one page of a conversation's messages, of every
// status (a running one shows its partial or empty answer), and whether
// older messages exist.
//
// Semantics follow Dify's GET /messages (docs/dify-compat.md, "Message history"):
// without q.FirstID the page is the newest q.Limit messages; with it, the
// q.Limit messages just older than FirstID. Either way the page is ordered
// oldest to newest, by (created_at, id).
//
// A conversation the caller may not see (see [Store.Conversation]) gives an
// error wrapping [ErrNotFound]; a FirstID that is not a message of that
// conversation gives one wrapping [ErrCursorNotFound], which also wraps
// ErrNotFound. A non-positive Limit is a plain error.
func (s *Store) ListMessages(ctx context.Context, q MessageQuery) (items []Message, hasMore bool, err error) {
	if q.Limit < 1 {
		return nil, false, fmt.Errorf("store: list messages: limit %d must be positive", q.Limit)
	}
	if _, err := s.Conversation(ctx, q.AppID, q.EndUserID, q.ConversationID); err != nil {
		return nil, false, fmt.Errorf("store: list messages: %w", err)
	}
	query := "SELECT " + messageColumns + " FROM messages WHERE conversation_id = ? AND app_id = ? AND end_user_id = ?"
	args := []any{q.ConversationID, q.AppID, q.EndUserID}
	if q.FirstID != "" {
		var created int64
		err := s.conn().QueryRowContext(ctx, s.Rebind(
			"SELECT created_at FROM messages WHERE id = ? AND conversation_id = ? AND app_id = ? AND end_user_id = ?"),
			q.FirstID, q.ConversationID, q.AppID, q.EndUserID).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("store: list messages: first message %s: %w", q.FirstID, ErrCursorNotFound)
		}
		if err != nil {
			return nil, false, fmt.Errorf("store: list messages: %w", err)
		}
		query += " AND (created_at, id) < (?, ?)"
		args = append(args, created, q.FirstID)
	}
	query += " ORDER BY created_at DESC, id DESC LIMIT ?"
	args = append(args, q.Limit+1)

	items, err = s.queryMessages(ctx, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("store: list messages: %w", err)
	}
	if len(items) > q.Limit {
		items, hasMore = items[:q.Limit], true
	}
	slices.Reverse(items)
	return items, hasMore, nil
}

// CountMessages returns how many messages the conversation has, of any
// status (running ones included). It does not check visibility.
func (s *Store) CountMessages(ctx context.Context, conversationID string) (int, error) {
	var n int
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM messages WHERE conversation_id = ?"), conversationID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count messages of %s: %w", conversationID, err)
	}
	return n, nil
}

func (s *Store) queryMessages(ctx context.Context, query string, args ...any) ([]Message, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func scanMessage(r scanner) (Message, error) {
	var (
		m                Message
		parent, errText  sql.NullString
		inputs, metadata string
		created, updated int64
	)
	if err := r.Scan(&m.ID, &m.AppID, &m.ConversationID, &m.EndUserID, &parent, &m.Query, &m.Answer, &inputs, &m.Status, &errText,
		&m.MessageTokens, &m.AnswerTokens, &m.TotalTokens, &m.MessageUnitPrice, &m.AnswerUnitPrice, &m.PriceUnit, &m.TotalPrice, &m.Currency,
		&m.ProviderResponseLatency, &m.TaskID, &m.ModelProvider, &m.ModelID, &metadata, &created, &updated); err != nil {
		return Message{}, err
	}
	m.ParentMessageID, m.Error = parent.String, errText.String
	m.Inputs, m.Metadata = json.RawMessage(inputs), json.RawMessage(metadata)
	m.CreatedAt, m.UpdatedAt = fromUnix(created), fromUnix(updated)
	return m, nil
}
