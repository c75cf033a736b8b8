package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Feedback ratings and sources, as stored in message_feedbacks.
const (
	RatingLike    = "like"
	RatingDislike = "dislike"

	FeedbackFromUser  = "user"
	FeedbackFromAdmin = "admin"
)

// Feedback is a rating of one message. A message has at most one: a new
// rating replaces the old one whoever gave it.
type Feedback struct {
	ID             string
	AppID          string
	ConversationID string
	MessageID      string
	// Rating is RatingLike or RatingDislike.
	Rating string
	// Content is the free-text comment, or "".
	Content string
	// FromSource is FeedbackFromUser or FeedbackFromAdmin.
	FromSource string
	// FromEndUserID is the end user who rated (FromSource user), or "".
	FromEndUserID string
	// FromAccountID is the console account that rated (FromSource admin),
	// or "".
	FromAccountID string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

const feedbackColumns = "id, app_id, conversation_id, message_id, rating, content, from_source, from_end_user_id, from_account_id, created_at, updated_at"

// UpsertFeedback stores f as the feedback of f.MessageID, replacing any
// earlier one (which keeps its id and created_at), and returns the stored
// row. ID defaults to [NewID]; the conversation is taken from the message,
// so f.ConversationID is ignored. FromSource defaults to FeedbackFromUser.
// The message must belong to f.AppID: otherwise, or if it does not exist,
// the error wraps [ErrNotFound]. Whether the caller may rate it at all (its
// end user, a deleted conversation) is checked with [Store.Message] first.
func (s *Store) UpsertFeedback(ctx context.Context, f Feedback) (Feedback, error) {
	if f.ID == "" {
		f.ID = NewID()
	}
	if f.FromSource == "" {
		f.FromSource = FeedbackFromUser
	}
	switch {
	case f.Rating != RatingLike && f.Rating != RatingDislike:
		return Feedback{}, fmt.Errorf("store: upsert feedback: unknown rating %q", f.Rating)
	case f.FromSource != FeedbackFromUser && f.FromSource != FeedbackFromAdmin:
		return Feedback{}, fmt.Errorf("store: upsert feedback: unknown source %q", f.FromSource)
	}
	now := time.Now().Unix()

	var out Feedback
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		// INSERT … SELECT from messages: the row is written only for a
		// message of this app, and takes its conversation from it. The
		// WHERE clause also keeps SQLite from reading ON CONFLICT as part
		// of a join.
		res, err := s.inTx(tx).ExecContext(ctx, s.Rebind("INSERT INTO message_feedbacks ("+feedbackColumns+`)
SELECT ?, app_id, conversation_id, id, ?, ?, ?, ?, ?, ?, ? FROM messages WHERE id = ? AND app_id = ?
ON CONFLICT (message_id) DO UPDATE SET
	rating = excluded.rating, content = excluded.content, from_source = excluded.from_source,
	from_end_user_id = excluded.from_end_user_id, from_account_id = excluded.from_account_id,
	updated_at = excluded.updated_at`),
			f.ID, f.Rating, nullString(f.Content), f.FromSource, nullString(f.FromEndUserID), nullString(f.FromAccountID), now, now,
			f.MessageID, f.AppID)
		if err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("end user %s: %w", f.FromEndUserID, ErrNotFound)
			}
			return mapError(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("message %s: %w", f.MessageID, ErrNotFound)
		}
		out, err = scanFeedback(s.inTx(tx).QueryRowContext(ctx, s.Rebind("SELECT "+feedbackColumns+" FROM message_feedbacks WHERE message_id = ?"), f.MessageID))
		return err
	})
	if err != nil {
		return Feedback{}, fmt.Errorf("store: upsert feedback: %w", err)
	}
	return out, nil
}

// DeleteFeedback removes the feedback of a message. If there is none the
// error wraps [ErrNotFound] (Dify answers 400 invalid_param when a client
// revokes a rating it never gave, docs/dify-compat.md, "Feedback").
func (s *Store) DeleteFeedback(ctx context.Context, messageID string) error {
	res, err := s.exec(ctx, "DELETE FROM message_feedbacks WHERE message_id = ?", messageID)
	if err != nil {
		return fmt.Errorf("store: delete feedback of message %s: %w", messageID, err)
	}
	return affectedOne(res, "store: delete feedback of message "+messageID)
}

// FeedbackForMessages returns the feedback of each of the given messages
// that has one, keyed by message id. Messages without feedback are absent
// from the map.
func (s *Store) FeedbackForMessages(ctx context.Context, ids []string) (map[string]Feedback, error) {
	out := make(map[string]Feedback, len(ids))
	for _, chunk := range chunks(ids) {
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT "+feedbackColumns+
			" FROM message_feedbacks WHERE message_id IN ("+placeholders(len(chunk))+")"), anys(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("store: feedback for messages: %w", err)
		}
		err = func() error {
			defer rows.Close()
			for rows.Next() {
				f, err := scanFeedback(rows)
				if err != nil {
					return err
				}
				out[f.MessageID] = f
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("store: feedback for messages: %w", err)
		}
	}
	return out, nil
}

// ListAppFeedbacks returns page page (from 1) of the app's feedback, limit
// per page, newest first (created_at, then id). Dify's GET /app/feedbacks
// has no has_more, so neither does this. page and limit must be positive.
func (s *Store) ListAppFeedbacks(ctx context.Context, appID string, page, limit int) ([]Feedback, error) {
	if page < 1 || limit < 1 {
		return nil, fmt.Errorf("store: list app feedbacks: page %d and limit %d must be positive", page, limit)
	}
	out, err := queryAll(ctx, s.conn(), scanFeedback, s.Rebind("SELECT "+feedbackColumns+
		" FROM message_feedbacks WHERE app_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"),
		append([]any{appID}, pageWindow(page, limit)...)...)
	if err != nil {
		return nil, fmt.Errorf("store: list app feedbacks: %w", err)
	}
	return out, nil
}

func scanFeedback(r scanner) (Feedback, error) {
	var (
		f                         Feedback
		content, endUser, account sql.NullString
		created, updated          int64
	)
	if err := r.Scan(&f.ID, &f.AppID, &f.ConversationID, &f.MessageID, &f.Rating, &content, &f.FromSource, &endUser, &account, &created, &updated); err != nil {
		return Feedback{}, err
	}
	f.Content, f.FromEndUserID, f.FromAccountID = content.String, endUser.String, account.String
	f.CreatedAt, f.UpdatedAt = fromUnix(created), fromUnix(updated)
	return f, nil
}
