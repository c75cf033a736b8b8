package knowledge

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// Store is the persistence the knowledge service needs; *store.Store implements it on SQLite
// and PostgreSQL. Errors wrap store.ErrNotFound for a missing row and store.ErrConflict for a
// duplicate name.
type Store interface {
	// Datasets.
	CreateDataset(ctx context.Context, d store.Dataset) (store.Dataset, error)
	Dataset(ctx context.Context, id string) (store.Dataset, error)
	DatasetByName(ctx context.Context, name string) (store.Dataset, error)
	ListDatasets(ctx context.Context, q store.DatasetQuery) (items []store.Dataset, total int, err error)
	UpdateDataset(ctx context.Context, d store.Dataset) error
	// DeleteDataset removes the dataset and everything under it (documents, chunks, index rows,
	// process rules, metadata fields, tag bindings).
	DeleteDataset(ctx context.Context, id string) error
	DatasetStats(ctx context.Context, ids []string) (map[string]store.DatasetStats, error)

	// Process rules.
	CreateProcessRule(ctx context.Context, r store.ProcessRule) (store.ProcessRule, error)
	ProcessRule(ctx context.Context, id string) (store.ProcessRule, error)
	LatestProcessRule(ctx context.Context, datasetID string) (store.ProcessRule, error)

	// Documents.
	CreateDocument(ctx context.Context, d store.Document) (store.Document, error)
	Document(ctx context.Context, datasetID, id string) (store.Document, error)
	// DocumentByName finds the newest enabled upload_file document with this name.
	DocumentByName(ctx context.Context, datasetID, name string) (store.Document, error)
	ListDocuments(ctx context.Context, q store.DocumentQuery) (items []store.Document, total int, err error)
	// UpdateDocument writes every column of the document row.
	UpdateDocument(ctx context.Context, d store.Document) error
	// DeleteDocument removes the document, its chunks of every generation and their index rows.
	DeleteDocument(ctx context.Context, datasetID, id string) error
	DocumentsByBatch(ctx context.Context, datasetID, batch string) ([]store.Document, error)
	// UnfinishedDocuments lists documents of every dataset whose indexing neither completed nor
	// failed and is not paused, oldest first: the work to resume after a restart.
	UnfinishedDocuments(ctx context.Context) ([]store.Document, error)
	DocumentStats(ctx context.Context, ids []string) (map[string]store.DocumentStats, error)
	IndexingProgress(ctx context.Context, ids []string) (map[string]store.IndexingProgress, error)

	// Indexing.
	// ClearGeneration deletes the document's chunks, child chunks and index rows of one
	// generation.
	ClearGeneration(ctx context.Context, documentID string, generation int) error
	// AddSegments inserts segments and child chunks (any generation) in one transaction.
	AddSegments(ctx context.Context, segs []store.Segment, children []store.ChildChunk) error
	// IndexNodes writes the keyword, full-text and vector rows of nodes and marks their
	// segments completed at the given time, in one transaction.
	IndexNodes(ctx context.Context, nodes []store.IndexNode, at time.Time) error
	// SwapGeneration writes the document row d (whose Generation is the new one) and deletes
	// the document's chunks and index rows of every other generation, in one transaction.
	SwapGeneration(ctx context.Context, d store.Document) error

	// Segments and child chunks (of the served generation).
	Segment(ctx context.Context, documentID, id string) (store.Segment, error)
	ListSegments(ctx context.Context, q store.SegmentQuery) (items []store.Segment, total int, err error)
	MaxSegmentPosition(ctx context.Context, documentID string, generation int) (int, error)
	// UpdateSegment writes the segment row and replaces its index rows with nodes (none: the
	// segment leaves the index).
	UpdateSegment(ctx context.Context, s store.Segment, nodes []store.IndexNode) error
	DeleteSegment(ctx context.Context, documentID, id string) error
	ChildChunks(ctx context.Context, segmentIDs []string) (map[string][]store.ChildChunk, error)
	ListChildChunks(ctx context.Context, segmentID, keyword string, page, limit int) (items []store.ChildChunk, total int, err error)
	ChildChunk(ctx context.Context, segmentID, id string) (store.ChildChunk, error)
	// UpdateChildChunk writes the row and replaces its index rows with node.
	UpdateChildChunk(ctx context.Context, c store.ChildChunk, node store.IndexNode) error
	DeleteChildChunk(ctx context.Context, segmentID, id string) error

	// Search. Every search sees only searchable nodes (see store.SearchableNode) of the given
	// datasets.
	SearchKeywords(ctx context.Context, datasetIDs, keywords []string, topK int) ([]store.NodeHit, error)
	SearchFullText(ctx context.Context, datasetIDs, terms []string, topK int) ([]store.NodeHit, error)
	// IndexVersion changes whenever the set of searchable nodes of the dataset or their
	// vectors change.
	IndexVersion(ctx context.Context, datasetID string) (int64, error)
	SearchableVectors(ctx context.Context, datasetID string) (version int64, nodes []store.SearchableNode, err error)
	NodeVectors(ctx context.Context, nodeIDs []string) (map[string][]float32, error)
	// ResolveHits loads the segment, child chunk, document and dataset of each node id that is
	// still searchable; others are left out.
	ResolveHits(ctx context.Context, nodeIDs []string) (map[string]store.Hit, error)
	IncrementHitCounts(ctx context.Context, segmentIDs []string) error

	// Tags.
	CreateTag(ctx context.Context, t store.Tag) (store.Tag, error)
	Tag(ctx context.Context, id string) (store.Tag, error)
	ListTags(ctx context.Context, keyword string) ([]store.Tag, error)
	RenameTag(ctx context.Context, id, name string) (store.Tag, error)
	DeleteTag(ctx context.Context, id string) error
	// BindTags binds existing tags to the dataset; unknown tag ids are ignored.
	BindTags(ctx context.Context, tagIDs []string, datasetID, by string) error
	UnbindTags(ctx context.Context, tagIDs []string, datasetID string) error
	DatasetTags(ctx context.Context, datasetIDs []string) (map[string][]store.Tag, error)

	// Metadata fields.
	CreateMetadataField(ctx context.Context, f store.MetadataField) (store.MetadataField, error)
	MetadataField(ctx context.Context, datasetID, id string) (store.MetadataField, error)
	ListMetadataFields(ctx context.Context, datasetID string) ([]store.MetadataField, error)
	// MetadataFieldCounts counts the documents holding a value for each field, by field id.
	MetadataFieldCounts(ctx context.Context, datasetID string) (map[string]int, error)
	// RenameMetadataField renames the field and the key of its values in the documents.
	RenameMetadataField(ctx context.Context, datasetID, id, name string) (store.MetadataField, error)
	// DeleteMetadataField deletes the field and its values from the documents.
	DeleteMetadataField(ctx context.Context, datasetID, id string) error

	// External knowledge APIs (the services external knowledge bases retrieve from).
	CreateExternalKnowledgeAPI(ctx context.Context, a store.ExternalKnowledgeAPI) (store.ExternalKnowledgeAPI, error)
	ExternalKnowledgeAPI(ctx context.Context, id string) (store.ExternalKnowledgeAPI, error)
	ExternalKnowledgeAPIByName(ctx context.Context, name string) (store.ExternalKnowledgeAPI, error)
	ListExternalKnowledgeAPIs(ctx context.Context) ([]store.ExternalKnowledgeAPI, error)
	UpdateExternalKnowledgeAPI(ctx context.Context, a store.ExternalKnowledgeAPI) error
	// DeleteExternalKnowledgeAPI refuses (store.ErrConflict) an API knowledge bases are bound to.
	DeleteExternalKnowledgeAPI(ctx context.Context, id string) error
	ExternalKnowledgeAPIUsage(ctx context.Context, id string) (int, error)

	// Retriever resources of chat messages.
	AddRetrieverResources(ctx context.Context, rs []store.RetrieverResource) error
	RetrieverResources(ctx context.Context, messageIDs []string) (map[string][]store.RetrieverResource, error)
}
