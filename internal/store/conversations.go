package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversation statuses, as stored in conversations.status.
const (
	ConversationStatusNormal = "normal"
	ConversationStatusEnded  = "ended"
)

// Sort orders accepted by [ConversationQuery.SortBy]: Dify's sort_by values
// (docs/dify-compat.md, "Conversations"). A leading '-' means newest first.
const (
	SortByCreatedAt     = "created_at"
	SortByCreatedAtDesc = "-created_at"
	SortByUpdatedAt     = "updated_at"
	SortByUpdatedAtDesc = "-updated_at"
)

// DefaultConversationSort is Dify's default sort_by.
const DefaultConversationSort = SortByUpdatedAtDesc

// Conversation is a stored conversation. It belongs to one app and one end
// user; nobody else can see it.
type Conversation struct {
	ID        string
	AppID     string
	EndUserID string
	Name      string
	// Inputs is the JSON object of app input values the conversation was
	// started with. Stored verbatim; empty is stored as {}.
	Inputs json.RawMessage
	// Status is ConversationStatusNormal or ConversationStatusEnded.
	Status       string
	Introduction string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// ConversationQuery selects one page of an end user's conversations.
type ConversationQuery struct {
	AppID     string
	EndUserID string
	// LastID is the id of the last conversation of the previous page, or
	// "" for the first page.
	LastID string
	// Limit is the page size; it must be positive.
	Limit int
	// SortBy is one of the SortBy* constants; "" means
	// DefaultConversationSort.
	SortBy string
	// Pinned, when set, keeps the pinned conversations (true) or the others (false).
	Pinned *bool
}

const conversationColumns = "id, app_id, end_user_id, name, inputs, status, introduction, created_at, updated_at"

func validConversationStatus(s string) bool {
	return s == ConversationStatusNormal || s == ConversationStatusEnded
}

// CreateConversation stores a new conversation and returns it as stored.
// ID defaults to [NewID], Status to ConversationStatusNormal, CreatedAt to
// now and UpdatedAt to CreatedAt. The end user must belong to the app:
// otherwise, or if either is unknown, the error wraps [ErrNotFound]. A
// duplicate id gives an error wrapping [ErrConflict].
func (s *Store) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	if err := prepareConversation(&c); err != nil {
		return Conversation{}, err
	}
	var err error
	if s.dialect == DialectSQLite {
		err = retryBusy(ctx, func() error { return s.insertConversation(ctx, s.conn(), c) })
	} else {
		err = s.insertConversation(ctx, s.conn(), c)
	}
	if err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// StartConversation stores a new conversation and its first message in one transaction (one
// commit instead of two on the path of every first message). c and m are completed as
// CreateConversation and CreateMessage complete them; m.ConversationID is set to c.ID. The
// message's files, if any, go into the same transaction, as with CreateMessage.
func (s *Store) StartConversation(ctx context.Context, c Conversation, m Message, files ...MessageFile) (Conversation, Message, error) {
	if err := prepareConversation(&c); err != nil {
		return Conversation{}, Message{}, err
	}
	m.ConversationID = c.ID
	if err := prepareMessage(&m); err != nil {
		return Conversation{}, Message{}, err
	}
	// The conversation is new: the message is its owner's, and its creation is the
	// conversation's latest update, with no statement to touch it.
	if m.AppID != c.AppID || m.EndUserID != c.EndUserID {
		return Conversation{}, Message{}, fmt.Errorf("store: start conversation: conversation %s: %w", c.ID, ErrNotFound)
	}
	if c.UpdatedAt.Before(m.CreatedAt) {
		c.UpdatedAt = m.CreatedAt
	}
	fs, err := prepareMessageFiles(files, m.ID)
	if err != nil {
		return Conversation{}, Message{}, fmt.Errorf("store: start conversation: %w", err)
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		if err := s.insertConversation(ctx, s.inTx(tx), c); err != nil {
			return err
		}
		if err := s.insertMessageRow(ctx, s.inTx(tx), m); err != nil {
			return err
		}
		return s.insertMessageFiles(ctx, s.inTx(tx), fs)
	})
	if err != nil {
		return Conversation{}, Message{}, fmt.Errorf("store: start conversation: %w", err)
	}
	return c, m, nil
}

// prepareConversation fills in defaults and checks c before it is stored.
func prepareConversation(c *Conversation) error {
	if c.ID == "" {
		c.ID = NewID()
	}
	if c.Status == "" {
		c.Status = ConversationStatusNormal
	}
	if !validConversationStatus(c.Status) {
		return fmt.Errorf("store: create conversation: unknown status %q", c.Status)
	}
	inputs, err := jsonText(c.Inputs)
	if err != nil {
		return fmt.Errorf("store: create conversation: inputs: %w", err)
	}
	c.Inputs = json.RawMessage(inputs)
	c.CreatedAt = fromUnix(nowOr(c.CreatedAt).Unix())
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.UpdatedAt = fromUnix(c.UpdatedAt.Unix())
	return nil
}

// insertConversation writes a prepared conversation through q.
func (s *Store) insertConversation(ctx context.Context, q execer, c Conversation) error {
	// INSERT … SELECT from end_users: the row is written only if the end
	// user exists and belongs to the app, so no conversation can join an
	// app with another app's user.
	res, err := q.ExecContext(ctx, s.Rebind("INSERT INTO conversations ("+conversationColumns+`)
SELECT ?, app_id, id, ?, ?, ?, ?, ?, ? FROM end_users WHERE id = ? AND app_id = ?`),
		c.ID, c.Name, string(c.Inputs), c.Status, c.Introduction, c.CreatedAt.Unix(), c.UpdatedAt.Unix(),
		c.EndUserID, c.AppID)
	if err != nil {
		return fmt.Errorf("store: create conversation: %w", mapError(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: create conversation: %w", err)
	} else if n == 0 {
		return fmt.Errorf("store: create conversation: end user %s of app %s: %w", c.EndUserID, c.AppID, ErrNotFound)
	}
	return nil
}

// Conversation returns the conversation with the given id if it belongs to
// appID and endUserID and has not been deleted. In every other case
// (unknown id, another app's, another end user's, deleted) the error wraps
// [ErrNotFound] and reads the same, so a caller cannot tell which.
func (s *Store) Conversation(ctx context.Context, appID, endUserID, id string) (Conversation, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+conversationColumns+
		" FROM conversations WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL"),
		id, appID, endUserID)
	c, err := scanConversation(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, fmt.Errorf("store: conversation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("store: conversation %s: %w", id, err)
	}
	return c, nil
}

// conversationSorts maps a SortBy value to its column and direction. Only
// these column names are ever put into SQL.
var conversationSorts = map[string]struct {
	column string
	desc   bool
}{
	SortByCreatedAt:     {"created_at", false},
	SortByCreatedAtDesc: {"created_at", true},
	SortByUpdatedAt:     {"updated_at", false},
	SortByUpdatedAtDesc: {"updated_at", true},
}

// ListConversations returns one page of the end user's live conversations
// in q.SortBy order, ties broken by id in the same direction, and whether
// more follow.
//
// Pagination follows Dify (docs/dify-compat.md, "Conversations"): q.LastID is the id
// of the last item of the previous page, and the page holds the
// conversations that sort after it. The cursor is the (sort column, id)
// pair of that conversation as it is now; a conversation touched between
// two page requests moves, as it does in Dify. A LastID that is unknown,
// deleted or not the end user's gives an error wrapping [ErrCursorNotFound]
// (and so [ErrNotFound]). An unknown SortBy or a non-positive Limit is a
// plain error.
func (s *Store) ListConversations(ctx context.Context, q ConversationQuery) (items []Conversation, hasMore bool, err error) {
	if q.SortBy == "" {
		q.SortBy = DefaultConversationSort
	}
	sort, ok := conversationSorts[q.SortBy]
	if !ok {
		return nil, false, fmt.Errorf("store: list conversations: unknown sort %q", q.SortBy)
	}
	if q.Limit < 1 {
		return nil, false, fmt.Errorf("store: list conversations: limit %d must be positive", q.Limit)
	}

	cmp, dir := ">", "ASC"
	if sort.desc {
		cmp, dir = "<", "DESC"
	}
	query := "SELECT " + conversationColumns + " FROM conversations WHERE app_id = ? AND end_user_id = ? AND deleted_at IS NULL"
	args := []any{q.AppID, q.EndUserID}
	pinned := ""
	if q.Pinned != nil {
		pinned = " AND pinned_at IS NULL"
		if *q.Pinned {
			pinned = " AND pinned_at IS NOT NULL"
		}
		query += pinned
	}
	if q.LastID != "" {
		var created, updated int64
		err := s.conn().QueryRowContext(ctx, s.Rebind(
			"SELECT created_at, updated_at FROM conversations WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL"),
			q.LastID, q.AppID, q.EndUserID).Scan(&created, &updated)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("store: list conversations: last conversation %s: %w", q.LastID, ErrCursorNotFound)
		}
		if err != nil {
			return nil, false, fmt.Errorf("store: list conversations: %w", err)
		}
		key := created
		if sort.column == "updated_at" {
			key = updated
		}
		// A row-value comparison, so that both engines seek the index
		// to the cursor instead of filtering rows before it.
		query += " AND (" + sort.column + ", id) " + cmp + " (?, ?)"
		args = append(args, key, q.LastID)
	}
	query += " ORDER BY " + sort.column + " " + dir + ", id " + dir + " LIMIT ?"
	args = append(args, q.Limit+1)

	rows, err := s.conn().QueryContext(ctx, s.Rebind(query), args...)
	if err != nil {
		return nil, false, fmt.Errorf("store: list conversations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, false, fmt.Errorf("store: list conversations: %w", err)
		}
		items = append(items, c)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: list conversations: %w", err)
	}
	if len(items) > q.Limit {
		return items[:q.Limit], true, nil
	}
	return items, false, nil
}

// RenameConversation sets the conversation's name, moves its updated_at
// forward to now (Dify does the same on rename), and returns it as stored.
// Visibility is as for [Store.Conversation]: a conversation the caller may
// not see gives an error wrapping [ErrNotFound].
func (s *Store) RenameConversation(ctx context.Context, appID, endUserID, id, name string) (Conversation, error) {
	var c Conversation
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q, args := conversationNameUpdate(appID, endUserID, id, name)
		if err := oneRow(s.inTx(tx).ExecContext(ctx, s.Rebind(q), args...)); err != nil {
			return err
		}
		var err error
		c, err = scanConversation(s.inTx(tx).QueryRowContext(ctx, s.Rebind("SELECT "+conversationColumns+" FROM conversations WHERE id = ?"), id))
		return err
	})
	if err != nil {
		return Conversation{}, fmt.Errorf("store: rename conversation %s: %w", id, err)
	}
	return c, nil
}

// NameConversation renames a conversation as RenameConversation does, in one statement and
// without reading it back: the naming of new conversations, which needs nothing back, runs
// after every first chat.
func (s *Store) NameConversation(ctx context.Context, appID, endUserID, id, name string) error {
	q, args := conversationNameUpdate(appID, endUserID, id, name)
	if err := oneRow(s.exec(ctx, q, args...)); err != nil {
		return fmt.Errorf("store: name conversation %s: %w", id, err)
	}
	return nil
}

// conversationNameUpdate renames a live conversation of the end user, moving its updated_at
// forward to now.
func conversationNameUpdate(appID, endUserID, id, name string) (string, []any) {
	now := time.Now().Unix()
	return `UPDATE conversations
SET name = ?, updated_at = CASE WHEN updated_at < ? THEN ? ELSE updated_at END
WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL`,
		[]any{name, now, now, id, appID, endUserID}
}

// TouchConversation moves the conversation's updated_at forward to at. It
// never moves it back, and an unknown id is silently a no-op, so it is safe
// to call after any activity.
func (s *Store) TouchConversation(ctx context.Context, id string, at time.Time) error {
	sec := at.Unix()
	if _, err := s.exec(ctx, "UPDATE conversations SET updated_at = ? WHERE id = ? AND updated_at < ?", sec, id, sec); err != nil {
		return fmt.Errorf("store: touch conversation %s: %w", id, err)
	}
	return nil
}

// SetConversationStatus sets the status (ConversationStatusNormal or
// ConversationStatusEnded) of a live conversation of appID. It does not
// change updated_at. An unknown, deleted or other app's conversation gives
// an error wrapping [ErrNotFound].
func (s *Store) SetConversationStatus(ctx context.Context, appID, id, status string) error {
	if !validConversationStatus(status) {
		return fmt.Errorf("store: set conversation %s status: unknown status %q", id, status)
	}
	res, err := s.exec(ctx, "UPDATE conversations SET status = ? WHERE id = ? AND app_id = ? AND deleted_at IS NULL", status, id, appID)
	if err != nil {
		return fmt.Errorf("store: set conversation %s status: %w", id, err)
	}
	return affectedOne(res, "store: set conversation "+id+" status")
}

// DeleteConversation soft-deletes a conversation: the row and its messages
// stay in the database, but every later lookup through this package
// ([Store.Conversation], [Store.ListConversations], [Store.Message],
// [Store.ListMessages] …) treats them as absent. Deleting a conversation the
// caller may not see, or one already deleted, gives an error wrapping
// [ErrNotFound] (Dify answers 404 both times).
func (s *Store) DeleteConversation(ctx context.Context, appID, endUserID, id string) error {
	res, err := s.exec(ctx,
		"UPDATE conversations SET deleted_at = ? WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL",
		time.Now().Unix(), id, appID, endUserID)
	if err != nil {
		return fmt.Errorf("store: delete conversation %s: %w", id, err)
	}
	return affectedOne(res, "store: delete conversation "+id)
}

// affectedOne turns "no row matched" into an error wrapping ErrNotFound,
// prefixed with what.
func affectedOne(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

func scanConversation(r scanner) (Conversation, error) {
	var (
		c                Conversation
		inputs           string
		created, updated int64
	)
	if err := r.Scan(&c.ID, &c.AppID, &c.EndUserID, &c.Name, &inputs, &c.Status, &c.Introduction, &created, &updated); err != nil {
		return Conversation{}, err
	}
	c.Inputs = json.RawMessage(inputs)
	c.CreatedAt, c.UpdatedAt = fromUnix(created), fromUnix(updated)
	return c, nil
}
