package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ErrCursorNotFound is returned (wrapped) when a pagination cursor names no
// row the caller may see: [ConversationQuery.LastID] or
// [MessageQuery.FirstID]. It wraps [ErrNotFound], so errors.Is(err,
// ErrNotFound) holds as well; test for ErrCursorNotFound first when the
// answer differs (Dify: 404 "Last Conversation Not Exists." / "First Message
// Not Exists." versus "Conversation Not Exists.").
var ErrCursorNotFound = fmt.Errorf("cursor %w", ErrNotFound)

// NewID returns a new row id: a UUIDv7 as text. Version 7 ids start with
// the creation time in milliseconds and, within one process, strictly
// increase, so ordering by (created_at, id) is creation order; the cursor
// pagination in this package relies on it. The Create methods call NewID
// when a row has no id; callers that must announce an id before the row is
// written (an SSE message_id, say) call it themselves.
func NewID() string {
	// NewV7 fails only when crypto/rand does, which it never does (Go 1.24+).
	return uuid.Must(uuid.NewV7()).String()
}

// nowOr returns t, or the current time if t is zero.
func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// nullString maps "" to NULL.
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// jsonText returns the text to store for a JSON column: "{}" for an empty
// value, the bytes unchanged otherwise. Invalid JSON is an error.
func jsonText(v json.RawMessage) (string, error) {
	if len(v) == 0 {
		return "{}", nil
	}
	if !json.Valid(v) {
		return "", errors.New("invalid JSON")
	}
	return string(v), nil
}

// placeholders returns "?, ?, …" with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// inChunk bounds the ids bound in one IN (…) list, well below SQLite's and
// PostgreSQL's limits on bound parameters.
const inChunk = 500

// chunks splits ids into slices of at most inChunk, dropping duplicates.
func chunks(ids []string) [][]string {
	seen := make(map[string]bool, len(ids))
	uniq := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	var out [][]string
	for len(uniq) > 0 {
		n := min(len(uniq), inChunk)
		out = append(out, uniq[:n])
		uniq = uniq[n:]
	}
	return out
}

// anys converts ids to query arguments.
func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// isDecimal reports whether s is a plain non-negative decimal number such as
// "0", "12" or "0.0015" (no sign, exponent or spaces). Prices are stored as
// such strings so that no engine rounds them.
func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" || (hasDot && frac == "") {
		return false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return false
			}
		}
	}
	return true
}

// qualify prefixes every name in a comma-separated column list with
// alias + ".".
func qualify(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// lookupErr is the error of a lookup of one row: "store: " and what was looked up (format and
// args), wrapping err, or [ErrNotFound] when there was no row.
func lookupErr(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	return fmt.Errorf("store: "+format+": %w", append(args, err)...)
}

// queryAll runs a query and scans each of its rows with scan, in order.
func queryAll[T any](ctx context.Context, q execer, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
