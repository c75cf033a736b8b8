package store

import (
	"encoding/json"
	"time"
)

// Knowledge records: datasets (knowledge bases), their documents, the chunks (segments) and
// child chunks documents are split into, and the search index rows built from chunks.
//
// Content versions. A document's chunks carry a Generation. Document.Generation is the one
// searches see; indexing writes a new generation (Document.IndexingGeneration) beside it and
// [Store.SwapGeneration] makes it visible and drops the old one in one transaction, so a search
// sees the old chunks or the new ones, never a mix.

// Dataset permissions and providers (Dify's values).
const (
	PermissionOnlyMe         = "only_me"
	PermissionAllTeamMembers = "all_team_members"
	PermissionPartialMembers = "partial_members"
	DatasetProviderVendor    = "vendor"
)

// Indexing techniques.
const (
	TechniqueHighQuality = "high_quality"
	TechniqueEconomy     = "economy"
)

// Document indexing statuses (Dify's values).
const (
	IndexingWaiting   = "waiting"
	IndexingParsing   = "parsing"
	IndexingCleaning  = "cleaning"
	IndexingSplitting = "splitting"
	IndexingIndexing  = "indexing"
	IndexingCompleted = "completed"
	IndexingError     = "error"
	IndexingPaused    = "paused"
)

// Segment statuses.
const (
	SegmentWaiting   = "waiting"
	SegmentIndexing  = "indexing"
	SegmentCompleted = "completed"
	SegmentError     = "error"
	SegmentReSegment = "re_segment"
)

// Child chunk types.
const (
	ChildChunkAutomatic  = "automatic"
	ChildChunkCustomized = "customized"
)

// Dataset is a knowledge base.
type Dataset struct {
	ID          string
	Name        string
	Description string
	// Provider is DatasetProviderVendor, or DatasetProviderExternal for an external knowledge
	// base, which has no documents and retrieves from its external knowledge API.
	Provider   string
	Permission string
	// DataSourceType is set from the first document ("upload_file"); "" means null.
	DataSourceType string
	// IndexingTechnique is TechniqueHighQuality, TechniqueEconomy or "" (null, until the first
	// document sets it).
	IndexingTechnique string
	// EmbeddingModel and EmbeddingModelProvider name the text-embedding model of a
	// high-quality dataset ("" when none).
	EmbeddingModel         string
	EmbeddingModelProvider string
	// RetrievalModel is the stored retrieval_model JSON object, or nil.
	RetrievalModel json.RawMessage
	// DocForm is the chunk structure (text_model, hierarchical_model, qa_model) or "".
	DocForm             string
	BuiltInFieldEnabled bool
	EnableAPI           bool
	// KeywordNumber is how many keywords economy indexing extracts per chunk (default 10).
	KeywordNumber int
	// ExternalKnowledgeAPIID and ExternalKnowledgeID bind an external knowledge base: the
	// external knowledge API it retrieves from, and the id of its knowledge there ("" for a
	// vendor dataset).
	ExternalKnowledgeAPIID string
	ExternalKnowledgeID    string
	CreatedBy              string
	UpdatedBy              string
	CreatedAt              time.Time
	UpdatedAt              time.Time
}

// DatasetStats are counts derived from a dataset's documents.
type DatasetStats struct {
	// DocumentCount counts all documents; AvailableDocumentCount those completed, enabled and
	// not archived.
	DocumentCount          int
	AvailableDocumentCount int
	// WordCount sums the documents' word counts.
	WordCount int
}

// DatasetQuery selects a page of datasets.
type DatasetQuery struct {
	// Keyword filters by name (case-insensitive substring) when not "".
	Keyword string
	// TagIDs keeps datasets bound to any of these tags when not empty.
	TagIDs []string
	// Page is 1-based; Limit is the page size (both positive).
	Page, Limit int
}

// ProcessRule is a stored process rule: the mode and the rules JSON as the client gave them
// (after validation).
type ProcessRule struct {
	ID        string
	DatasetID string
	Mode      string
	// Rules is the rules JSON object, or nil (automatic mode).
	Rules     json.RawMessage
	CreatedBy string
	CreatedAt time.Time
}

// Document is a document of a dataset.
type Document struct {
	ID        string
	DatasetID string
	// Position is 1-based per dataset; CreateDocument assigns max+1 when 0.
	Position       int
	DataSourceType string
	// UploadFileID is the upload_files row holding the document's source bytes.
	UploadFileID  string
	ProcessRuleID string
	// Batch is the indexing batch id the document was created in.
	Batch       string
	Name        string
	CreatedFrom string
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time

	IndexingStatus string
	// Indexing timestamps; nil means null.
	ProcessingStartedAt  *time.Time
	ParsingCompletedAt   *time.Time
	CleaningCompletedAt  *time.Time
	SplittingCompletedAt *time.Time
	CompletedAt          *time.Time
	PausedAt             *time.Time
	StoppedAt            *time.Time
	IsPaused             bool
	// IndexingLatency is seconds from processing start to completion.
	IndexingLatency float64
	// Error is the indexing error, "" for null.
	Error string

	Enabled    bool
	DisabledAt *time.Time
	DisabledBy string
	Archived   bool
	ArchivedAt *time.Time
	ArchivedBy string

	// WordCount is characters of extracted text; Tokens sums the chunks' tokens.
	WordCount   int
	Tokens      int
	DocForm     string
	DocLanguage string
	// DocMetadata is the JSON object of custom metadata values keyed by field name, or nil.
	DocMetadata json.RawMessage

	// Generation is the content version searches see (0 before the first indexing completes);
	// IndexingGeneration is the version being built (equal to Generation when none is).
	Generation         int
	IndexingGeneration int
}

// DocumentQuery selects a page of a dataset's documents, newest first (created_at DESC,
// position DESC).
type DocumentQuery struct {
	DatasetID string
	// Keyword filters by name (case-insensitive substring) when not "".
	Keyword string
	// DisplayStatus filters by derived display status when not "" (queuing, indexing, paused,
	// error, available, disabled, archived).
	DisplayStatus string
	Page, Limit   int
}

// DocumentStats are counts derived from a document's chunks of its served generation.
type DocumentStats struct {
	SegmentCount int
	HitCount     int
}

// IndexingProgress counts the chunks of the generation being built (or, when none is, the
// served one): Completed are those with CompletedAt set; segments in status re_segment are
// not counted.
type IndexingProgress struct {
	Completed int
	Total     int
}

// Segment is a chunk of a document.
type Segment struct {
	ID         string
	DatasetID  string
	DocumentID string
	Generation int
	Position   int
	Content    string
	Answer     string
	// WordCount is characters of content (+ answer); Tokens the embedding tokens (0 economy).
	WordCount     int
	Tokens        int
	Keywords      []string
	IndexNodeID   string
	IndexNodeHash string
	HitCount      int
	Enabled       bool
	DisabledAt    *time.Time
	DisabledBy    string
	Status        string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedBy     string
	UpdatedAt     time.Time
	IndexingAt    *time.Time
	CompletedAt   *time.Time
	Error         string
	StoppedAt     *time.Time
}

// SegmentQuery selects a page of a document's segments of its served generation, by position.
type SegmentQuery struct {
	DocumentID string
	// Statuses keeps segments with any of these statuses when not empty.
	Statuses []string
	// Keyword filters by content (case-insensitive substring) when not "".
	Keyword     string
	Page, Limit int
}

// ChildChunk is a chunk of a parent segment (hierarchical documents).
type ChildChunk struct {
	ID            string
	SegmentID     string
	DatasetID     string
	DocumentID    string
	Generation    int
	Position      int
	Content       string
	WordCount     int
	IndexNodeID   string
	IndexNodeHash string
	// Type is ChildChunkAutomatic or ChildChunkCustomized.
	Type      string
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IndexNode is one searchable unit: a segment of a text document, or a child chunk of a
// hierarchical one. NodeID is the segment's or child chunk's IndexNodeID.
type IndexNode struct {
	NodeID     string
	DatasetID  string
	DocumentID string
	SegmentID  string
	// ChildChunkID is "" for a segment node.
	ChildChunkID string
	Generation   int
	// Keywords feed the economy keyword table.
	Keywords []string
	// Terms is the text for full-text search, already split into space-separated terms
	// (CJK text pre-segmented), lower-cased.
	Terms string
	// Vector is the normalised embedding, nil for economy datasets.
	Vector []float32
	// Tokens is the node's embedding token count. The segment row carries its own keywords
	// and tokens, written with the segment, unless SegmentKeywords is set.
	Tokens int
	// SegmentKeywords makes IndexNodes store Keywords on the node's segment too: indexing
	// writes a document's segments first (so its progress has a total) and extracts their
	// keywords while earlier batches are being written.
	SegmentKeywords bool
}

// NodeHit is a search hit on an index node.
type NodeHit struct {
	NodeID string
	Score  float64
}

// SearchableNode is an index node that searches may return: its segment is completed and
// enabled, its generation is the document's served one, and the document is enabled and not
// archived. The in-process vector index is built from these.
type SearchableNode struct {
	NodeID     string
	DocumentID string
	SegmentID  string
	Vector     []float32
}

// Hit is a search hit resolved to its segment (and child chunk, for hierarchical documents)
// with the document and dataset it belongs to.
type Hit struct {
	NodeID     string
	Segment    Segment
	ChildChunk *ChildChunk
	Document   Document
	Dataset    Dataset
}

// Tag is a workspace tag of type "knowledge".
type Tag struct {
	ID           string
	Name         string
	Type         string
	BindingCount int
	CreatedBy    string
	CreatedAt    time.Time
}

// MetadataField is a custom metadata field of a dataset.
type MetadataField struct {
	ID        string
	DatasetID string
	Name      string
	// Type is string, number or time.
	Type      string
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RetrieverResource is a chunk used to answer a chat message.
type RetrieverResource struct {
	ID              string
	MessageID       string
	Position        int
	DatasetID       string
	DatasetName     string
	DocumentID      string
	DocumentName    string
	DataSourceType  string
	SegmentID       string
	SegmentPosition int
	IndexNodeHash   string
	Content         string
	Score           float64
	HitCount        int
	WordCount       int
	CreatedAt       time.Time
}
