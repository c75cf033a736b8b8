package store

// migrationKnowledgeExtras creates tags, tag bindings, metadata fields and retriever resources.
//
// Tag names are unique per type (Dify: one "knowledge" tag of a name per workspace). A binding's
// target_id is the dataset it tags; like Dify's tag_bindings it is not a foreign key, so that
// the same table can later bind tags of other types to other targets. Deleting a dataset
// deletes its bindings and metadata fields ([Store.deleteDatasetExtras]).
//
// Metadata values are not stored here: they are keys of documents.doc_metadata (migration 3).
//
// retriever_resources keeps a copy of what was cited (names, content, score), not references,
// so a message's citations survive the deletion of the dataset, document or chunk they came
// from (Dify's message_retriever_resources does the same).
var migrationKnowledgeExtras = migration{
	version: 4,
	name:    "tags, metadata fields, retriever resources",
	sqlite: `
CREATE TABLE tags (
	id         TEXT    NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL,
	type       TEXT    NOT NULL CHECK (type IN ('knowledge')),
	created_by TEXT,
	created_at INTEGER NOT NULL,
	UNIQUE (type, name)
) STRICT;

CREATE INDEX tags_type_created ON tags (type, created_at, id);

CREATE TABLE tag_bindings (
	id         TEXT    NOT NULL PRIMARY KEY,
	tag_id     TEXT    NOT NULL REFERENCES tags (id),
	target_id  TEXT    NOT NULL,
	created_by TEXT,
	created_at INTEGER NOT NULL,
	UNIQUE (tag_id, target_id)
) STRICT;

CREATE INDEX tag_bindings_target_id ON tag_bindings (target_id);

CREATE TABLE dataset_metadata_fields (
	id         TEXT    NOT NULL PRIMARY KEY,
	dataset_id TEXT    NOT NULL REFERENCES datasets (id),
	name       TEXT    NOT NULL,
	type       TEXT    NOT NULL CHECK (type IN ('string', 'number', 'time')),
	created_by TEXT,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (dataset_id, name)
) STRICT;

CREATE TABLE retriever_resources (
	id               TEXT    NOT NULL PRIMARY KEY,
	message_id       TEXT    NOT NULL REFERENCES messages (id),
	position         INTEGER NOT NULL,
	dataset_id       TEXT    NOT NULL,
	dataset_name     TEXT    NOT NULL,
	document_id      TEXT    NOT NULL,
	document_name    TEXT    NOT NULL,
	data_source_type TEXT    NOT NULL,
	segment_id       TEXT    NOT NULL,
	segment_position INTEGER NOT NULL,
	index_node_hash  TEXT    NOT NULL,
	content          TEXT    NOT NULL,
	score            REAL    NOT NULL,
	hit_count        INTEGER NOT NULL,
	word_count       INTEGER NOT NULL,
	created_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX retriever_resources_message_position ON retriever_resources (message_id, position);
`,
	postgres: `
CREATE TABLE tags (
	id         TEXT   NOT NULL PRIMARY KEY,
	name       TEXT   NOT NULL,
	type       TEXT   NOT NULL CHECK (type IN ('knowledge')),
	created_by TEXT,
	created_at BIGINT NOT NULL,
	UNIQUE (type, name)
);

CREATE INDEX tags_type_created ON tags (type, created_at, id);

CREATE TABLE tag_bindings (
	id         TEXT   NOT NULL PRIMARY KEY,
	tag_id     TEXT   NOT NULL REFERENCES tags (id),
	target_id  TEXT   NOT NULL,
	created_by TEXT,
	created_at BIGINT NOT NULL,
	UNIQUE (tag_id, target_id)
);

CREATE INDEX tag_bindings_target_id ON tag_bindings (target_id);

CREATE TABLE dataset_metadata_fields (
	id         TEXT   NOT NULL PRIMARY KEY,
	dataset_id TEXT   NOT NULL REFERENCES datasets (id),
	name       TEXT   NOT NULL,
	type       TEXT   NOT NULL CHECK (type IN ('string', 'number', 'time')),
	created_by TEXT,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (dataset_id, name)
);

CREATE TABLE retriever_resources (
	id               TEXT             NOT NULL PRIMARY KEY,
	message_id       TEXT             NOT NULL REFERENCES messages (id),
	position         BIGINT           NOT NULL,
	dataset_id       TEXT             NOT NULL,
	dataset_name     TEXT             NOT NULL,
	document_id      TEXT             NOT NULL,
	document_name    TEXT             NOT NULL,
	data_source_type TEXT             NOT NULL,
	segment_id       TEXT             NOT NULL,
	segment_position BIGINT           NOT NULL,
	index_node_hash  TEXT             NOT NULL,
	content          TEXT             NOT NULL,
	score            DOUBLE PRECISION NOT NULL,
	hit_count        BIGINT           NOT NULL,
	word_count       BIGINT           NOT NULL,
	created_at       BIGINT           NOT NULL
);

CREATE INDEX retriever_resources_message_position ON retriever_resources (message_id, position);
`,
}
