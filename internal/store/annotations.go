package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migrationAnnotations keeps apps' annotations — curated question and answer pairs — and what
// answering from them needs: each app's annotation-reply setting (the embedding model and the
// score threshold), the jobs that switch it on and off, and the history of the questions that
// were answered from an annotation.
//
// An annotation's vector is the embedding of its question by the model named in `vector_model`
// ("provider/model"); only vectors of the app's current model are searched. The setting row of an
// app is kept when reply is switched off (`enabled` false) so that `index_version`, which grows
// with every change of the app's annotations or setting, never goes back: the in-process vector
// index reloads an app's vectors when it changes.
var migrationAnnotations = migration{
	version: 11,
	name:    "annotations",
	sqlite: `
CREATE TABLE app_annotations (
	id           TEXT    NOT NULL PRIMARY KEY,
	app_id       TEXT    NOT NULL REFERENCES apps (id),
	question     TEXT    NOT NULL,
	answer       TEXT    NOT NULL,
	hit_count    INTEGER NOT NULL DEFAULT 0,
	account_id   TEXT,
	vector       BLOB,
	vector_model TEXT,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX app_annotations_app_created ON app_annotations (app_id, created_at, id);

CREATE TABLE app_annotation_settings (
	app_id          TEXT    NOT NULL PRIMARY KEY REFERENCES apps (id),
	enabled         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
	provider        TEXT    NOT NULL,
	model           TEXT    NOT NULL,
	score_threshold REAL    NOT NULL,
	index_version   INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE app_annotation_jobs (
	id              TEXT    NOT NULL PRIMARY KEY,
	app_id          TEXT    NOT NULL REFERENCES apps (id),
	action          TEXT    NOT NULL CHECK (action IN ('enable', 'disable')),
	status          TEXT    NOT NULL CHECK (status IN ('waiting', 'processing', 'completed', 'error')),
	provider        TEXT    NOT NULL,
	model           TEXT    NOT NULL,
	score_threshold REAL    NOT NULL,
	error           TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX app_annotation_jobs_app_status ON app_annotation_jobs (app_id, action, status);

CREATE TABLE app_annotation_hits (
	id            TEXT    NOT NULL PRIMARY KEY,
	annotation_id TEXT    NOT NULL,
	app_id        TEXT    NOT NULL REFERENCES apps (id),
	message_id    TEXT    NOT NULL,
	question      TEXT    NOT NULL,
	score         REAL    NOT NULL,
	source        TEXT    NOT NULL,
	created_at    INTEGER NOT NULL
) STRICT;

CREATE INDEX app_annotation_hits_annotation ON app_annotation_hits (annotation_id, created_at);
`,
	postgres: `
CREATE TABLE app_annotations (
	id           TEXT   NOT NULL PRIMARY KEY,
	app_id       TEXT   NOT NULL REFERENCES apps (id),
	question     TEXT   NOT NULL,
	answer       TEXT   NOT NULL,
	hit_count    BIGINT NOT NULL DEFAULT 0,
	account_id   TEXT,
	vector       BYTEA,
	vector_model TEXT,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL
);

CREATE INDEX app_annotations_app_created ON app_annotations (app_id, created_at, id);

CREATE TABLE app_annotation_settings (
	app_id          TEXT             NOT NULL PRIMARY KEY REFERENCES apps (id),
	enabled         BOOLEAN          NOT NULL,
	provider        TEXT             NOT NULL,
	model           TEXT             NOT NULL,
	score_threshold DOUBLE PRECISION NOT NULL,
	index_version   BIGINT           NOT NULL,
	updated_at      BIGINT           NOT NULL
);

CREATE TABLE app_annotation_jobs (
	id              TEXT             NOT NULL PRIMARY KEY,
	app_id          TEXT             NOT NULL REFERENCES apps (id),
	action          TEXT             NOT NULL CHECK (action IN ('enable', 'disable')),
	status          TEXT             NOT NULL CHECK (status IN ('waiting', 'processing', 'completed', 'error')),
	provider        TEXT             NOT NULL,
	model           TEXT             NOT NULL,
	score_threshold DOUBLE PRECISION NOT NULL,
	error           TEXT             NOT NULL DEFAULT '',
	created_at      BIGINT           NOT NULL,
	updated_at      BIGINT           NOT NULL
);

CREATE INDEX app_annotation_jobs_app_status ON app_annotation_jobs (app_id, action, status);

CREATE TABLE app_annotation_hits (
	id            TEXT             NOT NULL PRIMARY KEY,
	annotation_id TEXT             NOT NULL,
	app_id        TEXT             NOT NULL REFERENCES apps (id),
	message_id    TEXT             NOT NULL,
	question      TEXT             NOT NULL,
	score         DOUBLE PRECISION NOT NULL,
	source        TEXT             NOT NULL,
	created_at    BIGINT           NOT NULL
);

CREATE INDEX app_annotation_hits_annotation ON app_annotation_hits (annotation_id, created_at);
`,
}

// Annotation is a curated question and answer of an app.
type Annotation struct {
	ID        string
	AppID     string
	Question  string
	Answer    string
	HitCount  int64
	AccountID string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AnnotationSetting is an app's annotation-reply setting.
type AnnotationSetting struct {
	AppID          string
	Enabled        bool
	Provider       string
	Model          string
	ScoreThreshold float64
}

// VectorModel is how the setting's embedding model is recorded with the vectors it made.
func (a AnnotationSetting) VectorModel() string { return a.Provider + "/" + a.Model }

// Annotation job statuses and actions, as Dify names them.
const (
	AnnotationJobWaiting    = "waiting"
	AnnotationJobProcessing = "processing"
	AnnotationJobCompleted  = "completed"
	AnnotationJobError      = "error"

	AnnotationActionEnable  = "enable"
	AnnotationActionDisable = "disable"
)

// AnnotationJob is one switch of an app's annotation reply on (with its setting) or off.
type AnnotationJob struct {
	ID             string
	AppID          string
	Action         string
	Status         string
	Provider       string
	Model          string
	ScoreThreshold float64
	Error          string
	CreatedAt      time.Time
}

// AnnotationHit records a question answered from an annotation.
type AnnotationHit struct {
	AnnotationID string
	AppID        string
	MessageID    string
	Question     string
	Score        float64
	Source       string
}

const annotationColumns = "id, app_id, question, answer, hit_count, account_id, created_at, updated_at"

func scanAnnotation(r scanner) (Annotation, error) {
	var (
		a                Annotation
		account          sql.NullString
		created, updated int64
	)
	if err := r.Scan(&a.ID, &a.AppID, &a.Question, &a.Answer, &a.HitCount, &account, &created, &updated); err != nil {
		return Annotation{}, err
	}
	a.AccountID = account.String
	a.CreatedAt, a.UpdatedAt = fromUnix(created), fromUnix(updated)
	return a, nil
}

// bumpAnnotationIndex advances the app's annotation index version, if it has a setting.
func (s *Store) bumpAnnotationIndex(ctx context.Context, q execer, appID string, now int64) error {
	_, err := q.ExecContext(ctx, s.Rebind("UPDATE app_annotation_settings SET index_version = index_version + 1, updated_at = ? WHERE app_id = ?"), now, appID)
	return err
}

// CreateAnnotation stores a new annotation (ID defaults to [NewID]) and returns it.
func (s *Store) CreateAnnotation(ctx context.Context, a Annotation) (Annotation, error) {
	if a.ID == "" {
		a.ID = NewID()
	}
	now := time.Now()
	a.CreatedAt, a.UpdatedAt, a.HitCount = fromUnix(now.Unix()), fromUnix(now.Unix()), 0
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		_, err := q.ExecContext(ctx, s.Rebind("INSERT INTO app_annotations ("+annotationColumns+") VALUES (?, ?, ?, ?, 0, ?, ?, ?)"),
			a.ID, a.AppID, a.Question, a.Answer, nullString(a.AccountID), now.Unix(), now.Unix())
		if err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("app %s: %w", a.AppID, ErrNotFound)
			}
			return mapError(err)
		}
		return s.bumpAnnotationIndex(ctx, q, a.AppID, now.Unix())
	})
	if err != nil {
		return Annotation{}, fmt.Errorf("store: create annotation: %w", err)
	}
	return a, nil
}

// Annotation returns the app's annotation with this id; another app's or an unknown one gives an
// error wrapping [ErrNotFound].
func (s *Store) Annotation(ctx context.Context, appID, id string) (Annotation, error) {
	a, err := scanAnnotation(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+annotationColumns+" FROM app_annotations WHERE id = ? AND app_id = ?"), id, appID))
	if err != nil {
		return Annotation{}, lookupErr(err, "annotation %s", id)
	}
	return a, nil
}

// UpdateAnnotation replaces the question and answer of the app's annotation and drops its vector
// (the question changed); it returns the annotation as stored. An unknown id gives an error
// wrapping [ErrNotFound].
func (s *Store) UpdateAnnotation(ctx context.Context, appID, id, question, answer string) (Annotation, error) {
	var out Annotation
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		now := time.Now().Unix()
		res, err := q.ExecContext(ctx, s.Rebind("UPDATE app_annotations SET question = ?, answer = ?, vector = NULL, vector_model = NULL, updated_at = ? WHERE id = ? AND app_id = ?"),
			question, answer, now, id, appID)
		if err != nil {
			return mapError(err)
		}
		if err := affectedOne(res, "annotation "+id); err != nil {
			return err
		}
		if err := s.bumpAnnotationIndex(ctx, q, appID, now); err != nil {
			return err
		}
		out, err = scanAnnotation(q.QueryRowContext(ctx, s.Rebind("SELECT "+annotationColumns+" FROM app_annotations WHERE id = ?"), id))
		return err
	})
	if err != nil {
		return Annotation{}, fmt.Errorf("store: update annotation: %w", err)
	}
	return out, nil
}

// DeleteAnnotation removes the app's annotation and its hit history. An unknown id gives an error
// wrapping [ErrNotFound].
func (s *Store) DeleteAnnotation(ctx context.Context, appID, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		res, err := q.ExecContext(ctx, s.Rebind("DELETE FROM app_annotations WHERE id = ? AND app_id = ?"), id, appID)
		if err != nil {
			return err
		}
		if err := affectedOne(res, "annotation "+id); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM app_annotation_hits WHERE annotation_id = ?"), id); err != nil {
			return err
		}
		return s.bumpAnnotationIndex(ctx, q, appID, time.Now().Unix())
	})
	if err != nil {
		return fmt.Errorf("store: delete annotation: %w", err)
	}
	return nil
}

// likePattern is a LIKE pattern finding keyword anywhere, with LIKE's wildcards escaped (the
// queries use ESCAPE '\').
func likePattern(keyword string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(keyword)) + "%"
}

// ListAnnotations returns page page (from 1) of the app's annotations, limit per page, newest
// first, with the total count. A keyword keeps those whose question or answer contains it, case
// not considered. page and limit must be positive.
func (s *Store) ListAnnotations(ctx context.Context, appID, keyword string, page, limit int) ([]Annotation, int64, error) {
	if page < 1 || limit < 1 {
		return nil, 0, fmt.Errorf("store: list annotations: page %d and limit %d must be positive", page, limit)
	}
	where := " FROM app_annotations WHERE app_id = ?"
	args := []any{appID}
	if keyword != "" {
		where += ` AND (LOWER(question) LIKE ? ESCAPE '\' OR LOWER(answer) LIKE ? ESCAPE '\')`
		p := likePattern(keyword)
		args = append(args, p, p)
	}
	var (
		out   []Annotation
		total int64
	)
	err := s.snapshot(ctx, func(q execer) error {
		if err := q.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*)"+where), args...).Scan(&total); err != nil {
			return err
		}
		var err error
		out, err = queryAll(ctx, q, scanAnnotation, s.Rebind("SELECT "+annotationColumns+where+" ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"),
			append(args, pageWindow(page, limit)...)...)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: list annotations: %w", err)
	}
	return out, total, nil
}

// AnnotationsWithoutVector returns the app's annotations that have no vector of model
// ("provider/model"), oldest first, at most limit of them.
func (s *Store) AnnotationsWithoutVector(ctx context.Context, appID, model string, limit int) ([]Annotation, error) {
	out, err := queryAll(ctx, s.conn(), scanAnnotation, s.Rebind("SELECT "+annotationColumns+
		" FROM app_annotations WHERE app_id = ? AND (vector_model IS NULL OR vector_model <> ?) ORDER BY created_at, id LIMIT ?"), appID, model, limit)
	if err != nil {
		return nil, fmt.Errorf("store: annotations without vector: %w", err)
	}
	return out, nil
}

// SetAnnotationVectors stores the vectors of model ("provider/model") of the given annotations,
// keyed by id, unless an annotation's question changed since it was read (updatedAt differs):
// its vector would be of the old question.
func (s *Store) SetAnnotationVectors(ctx context.Context, appID, model string, vectors map[string][]float32, updatedAt map[string]time.Time) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		for id, v := range vectors {
			if _, err := q.ExecContext(ctx, s.Rebind("UPDATE app_annotations SET vector = ?, vector_model = ? WHERE id = ? AND app_id = ? AND updated_at = ?"),
				encodeVector(v), model, id, appID, updatedAt[id].Unix()); err != nil {
				return err
			}
		}
		return s.bumpAnnotationIndex(ctx, q, appID, time.Now().Unix())
	})
	if err != nil {
		return fmt.Errorf("store: set annotation vectors: %w", err)
	}
	return nil
}

// AnnotationSetting returns the app's annotation-reply setting; an app that never had one gives
// an error wrapping [ErrNotFound].
func (s *Store) AnnotationSetting(ctx context.Context, appID string) (AnnotationSetting, error) {
	var a AnnotationSetting
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT app_id, enabled, provider, model, score_threshold FROM app_annotation_settings WHERE app_id = ?"), appID).
		Scan(&a.AppID, &a.Enabled, &a.Provider, &a.Model, &a.ScoreThreshold)
	if err != nil {
		return AnnotationSetting{}, lookupErr(err, "annotation setting of app %s", appID)
	}
	return a, nil
}

// SaveAnnotationSetting stores the app's annotation-reply setting and advances its index version.
func (s *Store) SaveAnnotationSetting(ctx context.Context, a AnnotationSetting) error {
	now := time.Now().Unix()
	_, err := s.exec(ctx, `INSERT INTO app_annotation_settings (app_id, enabled, provider, model, score_threshold, index_version, updated_at)
VALUES (?, ?, ?, ?, ?, 1, ?)
ON CONFLICT (app_id) DO UPDATE SET enabled = excluded.enabled, provider = excluded.provider, model = excluded.model,
	score_threshold = excluded.score_threshold, index_version = app_annotation_settings.index_version + 1, updated_at = excluded.updated_at`,
		a.AppID, a.Enabled, a.Provider, a.Model, a.ScoreThreshold, now)
	if err != nil {
		return fmt.Errorf("store: save annotation setting: %w", err)
	}
	return nil
}

// AnnotationIndexVersion returns the version of the app's annotation vectors (see
// migrationAnnotations); it lets the vector index use an app id as a dataset id. An app without a
// setting gives an error wrapping [ErrNotFound].
func (s *Store) AnnotationIndexVersion(ctx context.Context, appID string) (int64, error) {
	var v int64
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT index_version FROM app_annotation_settings WHERE app_id = ?"), appID).Scan(&v)
	if err != nil {
		return 0, lookupErr(err, "annotation index of app %s", appID)
	}
	return v, nil
}

// AnnotationVectors returns the app's annotations that have a vector of its current embedding
// model, as searchable nodes (NodeID is the annotation id), with the index version they are
// current for.
func (s *Store) AnnotationVectors(ctx context.Context, appID string) (int64, []SearchableNode, error) {
	var (
		version int64
		nodes   []SearchableNode
	)
	err := s.snapshot(ctx, func(q execer) error {
		var provider, model string
		err := q.QueryRowContext(ctx, s.Rebind("SELECT index_version, provider, model FROM app_annotation_settings WHERE app_id = ?"), appID).Scan(&version, &provider, &model)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		nodes, err = queryAll(ctx, q, func(r scanner) (SearchableNode, error) {
			var (
				n   SearchableNode
				raw []byte
			)
			if err := r.Scan(&n.NodeID, &raw); err != nil {
				return n, err
			}
			n.Vector, err = decodeVector(raw)
			return n, err
		}, s.Rebind("SELECT id, vector FROM app_annotations WHERE app_id = ? AND vector IS NOT NULL AND vector_model = ? ORDER BY created_at, id"),
			appID, provider+"/"+model)
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: annotation vectors of app %s: %w", appID, err)
	}
	return version, nodes, nil
}

// RecordAnnotationHit adds one to the annotation's hit count and records the hit.
func (s *Store) RecordAnnotationHit(ctx context.Context, h AnnotationHit) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		now := time.Now().Unix()
		if _, err := q.ExecContext(ctx, s.Rebind("UPDATE app_annotations SET hit_count = hit_count + 1 WHERE id = ? AND app_id = ?"), h.AnnotationID, h.AppID); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, s.Rebind("INSERT INTO app_annotation_hits (id, annotation_id, app_id, message_id, question, score, source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
			NewID(), h.AnnotationID, h.AppID, h.MessageID, h.Question, h.Score, h.Source, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: record annotation hit: %w", err)
	}
	return nil
}

// AnnotationHits counts the recorded hits of an annotation.
func (s *Store) AnnotationHits(ctx context.Context, annotationID string) (int64, error) {
	var n int64
	if err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM app_annotation_hits WHERE annotation_id = ?"), annotationID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: annotation hits: %w", err)
	}
	return n, nil
}

const annotationJobColumns = "id, app_id, action, status, provider, model, score_threshold, error, created_at"

func scanAnnotationJob(r scanner) (AnnotationJob, error) {
	var (
		j       AnnotationJob
		created int64
	)
	if err := r.Scan(&j.ID, &j.AppID, &j.Action, &j.Status, &j.Provider, &j.Model, &j.ScoreThreshold, &j.Error, &created); err != nil {
		return AnnotationJob{}, err
	}
	j.CreatedAt = fromUnix(created)
	return j, nil
}

// StartAnnotationJob stores j as waiting unless a job of the same app and action is still
// waiting or processing: then that one is returned, with started false (Dify answers a second
// request with the job already under way).
func (s *Store) StartAnnotationJob(ctx context.Context, j AnnotationJob) (out AnnotationJob, started bool, err error) {
	if j.ID == "" {
		j.ID = NewID()
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		cur, err := scanAnnotationJob(q.QueryRowContext(ctx, s.Rebind("SELECT "+annotationJobColumns+
			" FROM app_annotation_jobs WHERE app_id = ? AND action = ? AND status IN ('waiting', 'processing') ORDER BY created_at DESC LIMIT 1"), j.AppID, j.Action))
		if err == nil {
			out = cur
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := time.Now().Unix()
		j.Status, j.CreatedAt = AnnotationJobWaiting, fromUnix(now)
		_, err = q.ExecContext(ctx, s.Rebind("INSERT INTO app_annotation_jobs (id, app_id, action, status, provider, model, score_threshold, error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?)"),
			j.ID, j.AppID, j.Action, j.Status, j.Provider, j.Model, j.ScoreThreshold, now, now)
		if err != nil {
			return mapError(err)
		}
		out, started = j, true
		return nil
	})
	if err != nil {
		return AnnotationJob{}, false, fmt.Errorf("store: start annotation job: %w", err)
	}
	return out, started, nil
}

// AnnotationJob returns the app's job with this id and action; any other gives an error
// wrapping [ErrNotFound].
func (s *Store) AnnotationJob(ctx context.Context, appID, action, id string) (AnnotationJob, error) {
	j, err := scanAnnotationJob(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+annotationJobColumns+
		" FROM app_annotation_jobs WHERE id = ? AND app_id = ? AND action = ?"), id, appID, action))
	if err != nil {
		return AnnotationJob{}, lookupErr(err, "annotation job %s", id)
	}
	return j, nil
}

// AnnotationJobByID returns the job with this id, whatever its app.
func (s *Store) AnnotationJobByID(ctx context.Context, id string) (AnnotationJob, error) {
	j, err := scanAnnotationJob(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+annotationJobColumns+" FROM app_annotation_jobs WHERE id = ?"), id))
	if err != nil {
		return AnnotationJob{}, lookupErr(err, "annotation job %s", id)
	}
	return j, nil
}

// SetAnnotationJobStatus records a job's status and, for an error, its message.
func (s *Store) SetAnnotationJobStatus(ctx context.Context, id, status, errText string) error {
	if _, err := s.exec(ctx, "UPDATE app_annotation_jobs SET status = ?, error = ?, updated_at = ? WHERE id = ?", status, errText, time.Now().Unix(), id); err != nil {
		return fmt.Errorf("store: set annotation job status: %w", err)
	}
	return nil
}

// UnfinishedAnnotationJobs lists the jobs still waiting or processing, oldest first: those a
// stopped server left behind, to run again at start.
func (s *Store) UnfinishedAnnotationJobs(ctx context.Context) ([]AnnotationJob, error) {
	out, err := queryAll(ctx, s.conn(), scanAnnotationJob, s.Rebind("SELECT "+annotationJobColumns+
		" FROM app_annotation_jobs WHERE status IN ('waiting', 'processing') ORDER BY created_at, id"))
	if err != nil {
		return nil, fmt.Errorf("store: unfinished annotation jobs: %w", err)
	}
	return out, nil
}
