package store

// migrationKnowledge creates datasets, process rules, documents, segments, child chunks and
// the search index tables.
//
// Booleans are INTEGER 0/1 on SQLite (STRICT has no BOOLEAN) and BOOLEAN on PostgreSQL; shared
// SQL only ever tests them bare (WHERE enabled, NOT archived) and binds Go bools, which both
// drivers accept. Nullable timestamps are NULL, not 0. JSON columns are TEXT, as in migration 2.
//
// Foreign keys tie the document tree together (dataset → document → segment → child chunk) so
// that a write under a missing parent fails with ErrNotFound. The search index tables have none:
// they are bulk-written on the indexing hot path and are always deleted together with, and
// before, the rows they index, in the same transaction (see deleteIndexRows).
//
// Search index:
//   - index_nodes is one row per searchable unit (a segment, or a child chunk of a
//     hierarchical document), keyed by the unit's index_node_id; searches join it to its
//     segment and document to apply the searchability rules (see searchableWhere).
//   - index_vectors holds each node's embedding as little-endian float32 bytes.
//   - Full-text and keywords on PostgreSQL: the tsvector column index_nodes.tsv
//     (to_tsvector('simple', terms)) under a GIN index, and index_keywords mapping
//     (dataset, keyword) to nodes; its primary key is the lookup key, index_keywords_node
//     serves deletes by node.
//   - Full-text and keywords on SQLite: one FTS5 table, index_fts, with a row per node whose
//     rowid is the node's index_nodes.rid (an INTEGER PRIMARY KEY, i.e. a rowid alias, which
//     unlike an implicit rowid survives VACUUM). Column terms holds the full-text terms;
//     column keywords holds one token per keyword, keywordToken(keyword): its hex, so that the
//     tokenizer neither splits nor folds it and a match is exact. Column dataset holds the
//     token of the node's dataset (datasetToken), so that a search of datasets whose nodes
//     interleave with other datasets' (by rid) ranks only the rows of its datasets instead of
//     every row in their range and filtering afterwards (see fts5Scope). The table is
//     contentless (the text is only matched, never read back) with contentless_delete, so a
//     node's row is removed exactly by rowid.
//     A B-tree keyword table was measured first, as on PostgreSQL: inserting 10 keywords per
//     node at random positions of a 1M-row B-tree dirtied most of its leaf pages on every
//     commit and capped indexing at about 4k nodes/s whatever the cache size. FTS5 buffers
//     postings and writes them as merged segments, which is what an inverted index needs.
//   - Terms arrive pre-split and lower-cased, so neither engine stems or drops stop words.
//
// datasets.index_version counts changes to a dataset's searchable set, so the in-process
// vector index knows when to catch up (what changed is in index_changes, migration 15).
var migrationKnowledge = migration{
	version: 3,
	name:    "datasets, documents, segments, search index",
	sqlite: `
CREATE TABLE datasets (
	id                       TEXT    NOT NULL PRIMARY KEY,
	name                     TEXT    NOT NULL UNIQUE,
	description              TEXT    NOT NULL,
	provider                 TEXT    NOT NULL,
	permission               TEXT    NOT NULL,
	data_source_type         TEXT,
	indexing_technique       TEXT,
	embedding_model          TEXT,
	embedding_model_provider TEXT,
	retrieval_model          TEXT,
	doc_form                 TEXT,
	built_in_field_enabled   INTEGER NOT NULL CHECK (built_in_field_enabled IN (0, 1)),
	enable_api               INTEGER NOT NULL CHECK (enable_api IN (0, 1)),
	keyword_number           INTEGER NOT NULL,
	index_version            INTEGER NOT NULL DEFAULT 0,
	created_by               TEXT    NOT NULL,
	updated_by               TEXT,
	created_at               INTEGER NOT NULL,
	updated_at               INTEGER NOT NULL
) STRICT;

CREATE INDEX datasets_created ON datasets (created_at, id);

CREATE TABLE dataset_process_rules (
	id         TEXT    NOT NULL PRIMARY KEY,
	dataset_id TEXT    NOT NULL REFERENCES datasets (id),
	mode       TEXT    NOT NULL,
	rules      TEXT,
	created_by TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX dataset_process_rules_dataset ON dataset_process_rules (dataset_id, created_at, id);

CREATE TABLE documents (
	id                     TEXT    NOT NULL PRIMARY KEY,
	dataset_id             TEXT    NOT NULL REFERENCES datasets (id),
	position               INTEGER NOT NULL,
	data_source_type       TEXT    NOT NULL,
	upload_file_id         TEXT,
	process_rule_id        TEXT,
	batch                  TEXT    NOT NULL,
	name                   TEXT    NOT NULL,
	created_from           TEXT    NOT NULL,
	created_by             TEXT    NOT NULL,
	created_at             INTEGER NOT NULL,
	updated_at             INTEGER NOT NULL,
	indexing_status        TEXT    NOT NULL,
	processing_started_at  INTEGER,
	parsing_completed_at   INTEGER,
	cleaning_completed_at  INTEGER,
	splitting_completed_at INTEGER,
	completed_at           INTEGER,
	paused_at              INTEGER,
	stopped_at             INTEGER,
	is_paused              INTEGER NOT NULL CHECK (is_paused IN (0, 1)),
	indexing_latency       REAL    NOT NULL,
	error                  TEXT,
	enabled                INTEGER NOT NULL CHECK (enabled IN (0, 1)),
	disabled_at            INTEGER,
	disabled_by            TEXT,
	archived               INTEGER NOT NULL CHECK (archived IN (0, 1)),
	archived_at            INTEGER,
	archived_by            TEXT,
	word_count             INTEGER NOT NULL,
	tokens                 INTEGER NOT NULL,
	doc_form               TEXT    NOT NULL,
	doc_language           TEXT    NOT NULL,
	doc_metadata           TEXT,
	generation             INTEGER NOT NULL,
	indexing_generation    INTEGER NOT NULL
) STRICT;

CREATE INDEX documents_dataset_created ON documents (dataset_id, created_at, position);
CREATE INDEX documents_dataset_name ON documents (dataset_id, name);
CREATE INDEX documents_dataset_batch ON documents (dataset_id, batch);
CREATE INDEX documents_unfinished ON documents (created_at, id) WHERE indexing_status NOT IN ('completed', 'error');

CREATE TABLE document_segments (
	id              TEXT    NOT NULL PRIMARY KEY,
	dataset_id      TEXT    NOT NULL,
	document_id     TEXT    NOT NULL REFERENCES documents (id),
	generation      INTEGER NOT NULL,
	position        INTEGER NOT NULL,
	content         TEXT    NOT NULL,
	answer          TEXT,
	word_count      INTEGER NOT NULL,
	tokens          INTEGER NOT NULL,
	keywords        TEXT    NOT NULL,
	index_node_id   TEXT,
	index_node_hash TEXT,
	hit_count       INTEGER NOT NULL,
	enabled         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
	disabled_at     INTEGER,
	disabled_by     TEXT,
	status          TEXT    NOT NULL,
	created_by      TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_by      TEXT,
	updated_at      INTEGER NOT NULL,
	indexing_at     INTEGER,
	completed_at    INTEGER,
	error           TEXT,
	stopped_at      INTEGER
) STRICT;

CREATE INDEX document_segments_document ON document_segments (document_id, generation, position);
CREATE UNIQUE INDEX document_segments_index_node ON document_segments (index_node_id);

CREATE TABLE child_chunks (
	id              TEXT    NOT NULL PRIMARY KEY,
	segment_id      TEXT    NOT NULL REFERENCES document_segments (id),
	dataset_id      TEXT    NOT NULL,
	document_id     TEXT    NOT NULL,
	generation      INTEGER NOT NULL,
	position        INTEGER NOT NULL,
	content         TEXT    NOT NULL,
	word_count      INTEGER NOT NULL,
	index_node_id   TEXT,
	index_node_hash TEXT,
	type            TEXT    NOT NULL,
	created_by      TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX child_chunks_segment ON child_chunks (segment_id, position);
CREATE INDEX child_chunks_document ON child_chunks (document_id, generation);
CREATE UNIQUE INDEX child_chunks_index_node ON child_chunks (index_node_id);

CREATE TABLE index_nodes (
	rid            INTEGER NOT NULL PRIMARY KEY,
	node_id        TEXT    NOT NULL UNIQUE,
	dataset_id     TEXT    NOT NULL,
	document_id    TEXT    NOT NULL,
	segment_id     TEXT    NOT NULL,
	child_chunk_id TEXT,
	generation     INTEGER NOT NULL
) STRICT;

CREATE INDEX index_nodes_dataset ON index_nodes (dataset_id);
CREATE INDEX index_nodes_document ON index_nodes (document_id, generation);
CREATE INDEX index_nodes_segment ON index_nodes (segment_id);
CREATE INDEX index_nodes_child_chunk ON index_nodes (child_chunk_id);

CREATE TABLE index_vectors (
	node_id    TEXT NOT NULL PRIMARY KEY,
	dataset_id TEXT NOT NULL,
	vector     BLOB NOT NULL
) STRICT;

CREATE VIRTUAL TABLE index_fts USING fts5 (
	terms,
	keywords,
	dataset,
	content = '',
	contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

-- Merge index segments 16 at a time instead of 4: each node is rewritten by fewer merges, which
-- made indexing about 1.5x faster (BenchmarkIndexNodes) for a few more segments per search.
INSERT INTO index_fts (index_fts, rank) VALUES ('automerge', 16);
`,
	postgres: `
CREATE TABLE datasets (
	id                       TEXT    NOT NULL PRIMARY KEY,
	name                     TEXT    NOT NULL UNIQUE,
	description              TEXT    NOT NULL,
	provider                 TEXT    NOT NULL,
	permission               TEXT    NOT NULL,
	data_source_type         TEXT,
	indexing_technique       TEXT,
	embedding_model          TEXT,
	embedding_model_provider TEXT,
	retrieval_model          TEXT,
	doc_form                 TEXT,
	built_in_field_enabled   BOOLEAN NOT NULL,
	enable_api               BOOLEAN NOT NULL,
	keyword_number           BIGINT  NOT NULL,
	index_version            BIGINT  NOT NULL DEFAULT 0,
	created_by               TEXT    NOT NULL,
	updated_by               TEXT,
	created_at               BIGINT  NOT NULL,
	updated_at               BIGINT  NOT NULL
);

CREATE INDEX datasets_created ON datasets (created_at, id);

CREATE TABLE dataset_process_rules (
	id         TEXT   NOT NULL PRIMARY KEY,
	dataset_id TEXT   NOT NULL REFERENCES datasets (id),
	mode       TEXT   NOT NULL,
	rules      TEXT,
	created_by TEXT   NOT NULL,
	created_at BIGINT NOT NULL
);

CREATE INDEX dataset_process_rules_dataset ON dataset_process_rules (dataset_id, created_at, id);

CREATE TABLE documents (
	id                     TEXT             NOT NULL PRIMARY KEY,
	dataset_id             TEXT             NOT NULL REFERENCES datasets (id),
	position               BIGINT           NOT NULL,
	data_source_type       TEXT             NOT NULL,
	upload_file_id         TEXT,
	process_rule_id        TEXT,
	batch                  TEXT             NOT NULL,
	name                   TEXT             NOT NULL,
	created_from           TEXT             NOT NULL,
	created_by             TEXT             NOT NULL,
	created_at             BIGINT           NOT NULL,
	updated_at             BIGINT           NOT NULL,
	indexing_status        TEXT             NOT NULL,
	processing_started_at  BIGINT,
	parsing_completed_at   BIGINT,
	cleaning_completed_at  BIGINT,
	splitting_completed_at BIGINT,
	completed_at           BIGINT,
	paused_at              BIGINT,
	stopped_at             BIGINT,
	is_paused              BOOLEAN          NOT NULL,
	indexing_latency       DOUBLE PRECISION NOT NULL,
	error                  TEXT,
	enabled                BOOLEAN          NOT NULL,
	disabled_at            BIGINT,
	disabled_by            TEXT,
	archived               BOOLEAN          NOT NULL,
	archived_at            BIGINT,
	archived_by            TEXT,
	word_count             BIGINT           NOT NULL,
	tokens                 BIGINT           NOT NULL,
	doc_form               TEXT             NOT NULL,
	doc_language           TEXT             NOT NULL,
	doc_metadata           TEXT,
	generation             BIGINT           NOT NULL,
	indexing_generation    BIGINT           NOT NULL
);

CREATE INDEX documents_dataset_created ON documents (dataset_id, created_at, position);
CREATE INDEX documents_dataset_name ON documents (dataset_id, name);
CREATE INDEX documents_dataset_batch ON documents (dataset_id, batch);
CREATE INDEX documents_unfinished ON documents (created_at, id) WHERE indexing_status NOT IN ('completed', 'error');

CREATE TABLE document_segments (
	id              TEXT    NOT NULL PRIMARY KEY,
	dataset_id      TEXT    NOT NULL,
	document_id     TEXT    NOT NULL REFERENCES documents (id),
	generation      BIGINT  NOT NULL,
	position        BIGINT  NOT NULL,
	content         TEXT    NOT NULL,
	answer          TEXT,
	word_count      BIGINT  NOT NULL,
	tokens          BIGINT  NOT NULL,
	keywords        TEXT    NOT NULL,
	index_node_id   TEXT,
	index_node_hash TEXT,
	hit_count       BIGINT  NOT NULL,
	enabled         BOOLEAN NOT NULL,
	disabled_at     BIGINT,
	disabled_by     TEXT,
	status          TEXT    NOT NULL,
	created_by      TEXT    NOT NULL,
	created_at      BIGINT  NOT NULL,
	updated_by      TEXT,
	updated_at      BIGINT  NOT NULL,
	indexing_at     BIGINT,
	completed_at    BIGINT,
	error           TEXT,
	stopped_at      BIGINT
);

CREATE INDEX document_segments_document ON document_segments (document_id, generation, position);
CREATE UNIQUE INDEX document_segments_index_node ON document_segments (index_node_id);

CREATE TABLE child_chunks (
	id              TEXT   NOT NULL PRIMARY KEY,
	segment_id      TEXT   NOT NULL REFERENCES document_segments (id),
	dataset_id      TEXT   NOT NULL,
	document_id     TEXT   NOT NULL,
	generation      BIGINT NOT NULL,
	position        BIGINT NOT NULL,
	content         TEXT   NOT NULL,
	word_count      BIGINT NOT NULL,
	index_node_id   TEXT,
	index_node_hash TEXT,
	type            TEXT   NOT NULL,
	created_by      TEXT   NOT NULL,
	created_at      BIGINT NOT NULL,
	updated_at      BIGINT NOT NULL
);

CREATE INDEX child_chunks_segment ON child_chunks (segment_id, position);
CREATE INDEX child_chunks_document ON child_chunks (document_id, generation);
CREATE UNIQUE INDEX child_chunks_index_node ON child_chunks (index_node_id);

CREATE TABLE index_nodes (
	node_id        TEXT     NOT NULL PRIMARY KEY,
	dataset_id     TEXT     NOT NULL,
	document_id    TEXT     NOT NULL,
	segment_id     TEXT     NOT NULL,
	child_chunk_id TEXT,
	generation     BIGINT   NOT NULL,
	tsv            TSVECTOR NOT NULL
);

CREATE INDEX index_nodes_dataset ON index_nodes (dataset_id);
CREATE INDEX index_nodes_document ON index_nodes (document_id, generation);
CREATE INDEX index_nodes_segment ON index_nodes (segment_id);
CREATE INDEX index_nodes_child_chunk ON index_nodes (child_chunk_id);
CREATE INDEX index_nodes_tsv ON index_nodes USING GIN (tsv);

CREATE TABLE index_keywords (
	dataset_id TEXT NOT NULL,
	keyword    TEXT NOT NULL,
	node_id    TEXT NOT NULL,
	PRIMARY KEY (dataset_id, keyword, node_id)
);

CREATE INDEX index_keywords_node ON index_keywords (node_id);

CREATE TABLE index_vectors (
	node_id    TEXT  NOT NULL PRIMARY KEY,
	dataset_id TEXT  NOT NULL,
	vector     BYTEA NOT NULL
);
`,
}
