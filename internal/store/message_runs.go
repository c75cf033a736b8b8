package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Running messages. A message is MessageStatusRunning while a process generates its answer.
// That process writes the answer so far and refreshes the message's updated_at, its heartbeat,
// while the answer runs ([Store.SaveMessageProgress]); a process that dies (kill -9, out of
// memory, power loss) stops doing so. [Store.EndStaleMessages] ends the running messages whose
// heartbeat is older than a cut-off. Any process may call it at any time: the runs of a live
// process have a fresh heartbeat and are left alone, so replicas can share one database.

// MessageProgress is what [Store.SaveMessageProgress] writes for one running message.
type MessageProgress struct {
	ID string
	// Answer is the answer so far; it is written only when Changed is set (otherwise only the
	// heartbeat is refreshed).
	Answer  string
	Changed bool
}

// progressBatch bounds the rows written in one transaction, so that a process with many open
// streams never holds SQLite's single write lock for long.
const progressBatch = 128

// SaveMessageProgress writes, as of at, the answer so far of each changed message and the
// heartbeat (updated_at) of every message in ps. Only messages still running are written: a
// message that was finished or ended meanwhile keeps its final state, whichever write comes
// last. Messages are written in transactions of a bounded size.
func (s *Store) SaveMessageProgress(ctx context.Context, at time.Time, ps []MessageProgress) error {
	now := at.Unix()
	setAnswer := s.Rebind("UPDATE messages SET answer = ?, updated_at = ? WHERE id = ? AND status = ?")
	for len(ps) > 0 {
		batch := ps[:min(len(ps), progressBatch)]
		ps = ps[len(batch):]
		var touch []string
		err := s.WithTx(ctx, func(tx *sql.Tx) error {
			q := s.inTx(tx)
			for _, p := range batch {
				if !p.Changed {
					touch = append(touch, p.ID)
					continue
				}
				if _, err := q.ExecContext(ctx, setAnswer, p.Answer, now, p.ID, MessageStatusRunning); err != nil {
					return err
				}
			}
			if len(touch) == 0 {
				return nil
			}
			in, ids := inList(touch)
			args := make([]any, 0, len(ids)+2)
			args = append(append(append(args, now), ids...), MessageStatusRunning)
			_, err := q.ExecContext(ctx, s.Rebind("UPDATE messages SET updated_at = ? WHERE id IN ("+in+") AND status = ?"), args...)
			return err
		})
		if err != nil {
			return fmt.Errorf("store: save message progress: %w", err)
		}
	}
	return nil
}

// EndStaleMessages ends every running message whose heartbeat (updated_at) is older than
// before: its status becomes MessageStatusError with errText as its error, and the answer
// stored so far is kept; the running workflow run of such a message fails with the same error.
// It returns how many messages it ended. The messages of paused runs (waiting for human input)
// are left alone.
func (s *Store) EndStaleMessages(ctx context.Context, before time.Time, errText string) (int64, error) {
	return s.endRunning(ctx, errText, &before)
}

// EndRunningMessages is EndStaleMessages for a process that knows no other process uses the
// database (SQLite, whose data directory one `parley serve` holds locked): every running
// message ends, whatever the age of its heartbeat, and so does every running workflow run,
// a Chatflow's or a Workflow app's, whatever its message. Paused runs are left alone.
func (s *Store) EndRunningMessages(ctx context.Context, errText string) (int64, error) {
	return s.endRunning(ctx, errText, nil)
}

// endRunning ends the running messages, those whose heartbeat is older than before if it is
// set, and fails their workflow runs (every running one if before is nil).
func (s *Store) endRunning(ctx context.Context, errText string, before *time.Time) (int64, error) {
	now := time.Now().Unix()
	endRuns := `UPDATE workflow_runs SET status = 'failed', error = ?, finished_at = ? WHERE status = 'running'`
	runArgs := []any{errText, now}
	endMessages := `UPDATE messages SET status = ?, error = ?, updated_at = ? WHERE status = ?
AND id NOT IN (SELECT message_id FROM workflow_runs WHERE status = 'paused' AND message_id IS NOT NULL)`
	messageArgs := []any{MessageStatusError, nullString(errText), now, MessageStatusRunning}
	if before != nil {
		endRuns += ` AND message_id IN (SELECT id FROM messages WHERE status = ? AND updated_at < ?)`
		runArgs = append(runArgs, MessageStatusRunning, before.Unix())
		endMessages += ` AND updated_at < ?`
		messageArgs = append(messageArgs, before.Unix())
	}
	var n int64
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		// The workflow runs of those messages (Chatflows, Workflow apps) end with them, failed.
		if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind(endRuns), runArgs...); err != nil {
			return err
		}
		res, err := s.inTx(tx).ExecContext(ctx, s.Rebind(endMessages), messageArgs...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: end interrupted messages: %w", mapError(err))
	}
	return n, nil
}

// migrationRunningMessages indexes the running messages by heartbeat, so that the periodic
// sweep of [Store.EndStaleMessages] reads only them, not the whole messages table. The index
// is partial on both engines: finished messages, nearly all of them, are not in it.
var migrationRunningMessages = migration{
	version:  5,
	name:     "running messages by heartbeat",
	sqlite:   `CREATE INDEX messages_running_updated ON messages (updated_at) WHERE status = 'running';`,
	postgres: `CREATE INDEX messages_running_updated ON messages (updated_at) WHERE status = 'running';`,
}
