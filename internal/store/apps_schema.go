package store

// migrationImportedApps lets the apps table hold apps defined in the database (imported from
// Dify DSL files) beside those of the config file, and keeps the published versions of the kinds
// that have them.
//
// A config app's row holds only its id, name and mode (the file is its definition); an imported
// app's row holds its definition as JSON in `definition`. `revision` grows on every change of a
// row, so a server can tell with one indexed read whether the app it holds is still current.
//
// Apps are never deleted from the table: conversations, messages and keys refer to them. A
// deleted app gets `deleted_at` and gives up its name (the name becomes "deleted:<id>"), so the
// name can be used again.
//
// app_versions keeps immutable snapshots of a definition; `published_version_id` names the one
// the API runs for the kinds that are published (Agents, workflow graphs).
var migrationImportedApps = migration{
	version: 6,
	name:    "imported apps, app versions",
	sqlite: `
ALTER TABLE apps ADD COLUMN source TEXT NOT NULL DEFAULT 'config' CHECK (source IN ('config', 'import'));
ALTER TABLE apps ADD COLUMN definition TEXT;
ALTER TABLE apps ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE apps ADD COLUMN deleted_at INTEGER;
ALTER TABLE apps ADD COLUMN published_version_id TEXT;

CREATE TABLE app_versions (
	id         TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL REFERENCES apps (id),
	version    INTEGER NOT NULL,
	definition TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	UNIQUE (app_id, version)
) STRICT;
`,
	postgres: `
ALTER TABLE apps ADD COLUMN source TEXT NOT NULL DEFAULT 'config' CHECK (source IN ('config', 'import'));
ALTER TABLE apps ADD COLUMN definition TEXT;
ALTER TABLE apps ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
ALTER TABLE apps ADD COLUMN deleted_at BIGINT;
ALTER TABLE apps ADD COLUMN published_version_id TEXT;

CREATE TABLE app_versions (
	id         TEXT   NOT NULL PRIMARY KEY,
	app_id     TEXT   NOT NULL REFERENCES apps (id),
	version    BIGINT NOT NULL,
	definition TEXT   NOT NULL,
	created_at BIGINT NOT NULL,
	UNIQUE (app_id, version)
);
`,
}
