// Package segment turns extracted document text into Dify-compatible
// segments (chunks): process-rule parsing and validation, text cleaning,
// chunk splitting, the per-segment fields Dify stores, and economy-mode
// keyword extraction.
//
// The behaviour mirrors Dify's cleaning, splitting, segment fields, keyword
// table and process_rule handling (docs/knowledge.md).
//
// Package-level state: the Chinese segmenter (gse, embedded dictionary) and
// the IDF table used by [Keywords] are loaded once, lazily, under a
// sync.Once the first time keywords are extracted from text that contains
// Han characters. Loading takes on the order of a second and tens of
// megabytes, paid by the first indexing job that needs it rather than by
// every server at start-up. Token counts use the shared counter of
// internal/tokens, which has its own lazy state. Everything else is
// immutable after package init.
package segment
