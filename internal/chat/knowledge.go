package chat

import (
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
)

// ResourceJSON is a retriever resource as Dify's message metadata stores it.
type ResourceJSON struct {
	ID              string  `json:"id"`
	MessageID       string  `json:"message_id"`
	Position        int     `json:"position"`
	DatasetID       string  `json:"dataset_id"`
	DatasetName     string  `json:"dataset_name"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	DataSourceType  string  `json:"data_source_type"`
	SegmentID       string  `json:"segment_id"`
	SegmentPosition int     `json:"segment_position"`
	IndexNodeHash   string  `json:"index_node_hash"`
	Content         string  `json:"content"`
	Summary         *string `json:"summary"`
	Score           float64 `json:"score"`
	HitCount        int     `json:"hit_count"`
	WordCount       int     `json:"word_count"`
	CreatedAt       int64   `json:"created_at"`
}

func resourceJSON(r store.RetrieverResource) ResourceJSON {
	return ResourceJSON{ID: r.ID, MessageID: r.MessageID, Position: r.Position, DatasetID: r.DatasetID,
		DatasetName: r.DatasetName, DocumentID: r.DocumentID, DocumentName: r.DocumentName,
		DataSourceType: r.DataSourceType, SegmentID: r.SegmentID, SegmentPosition: r.SegmentPosition,
		IndexNodeHash: r.IndexNodeHash, Content: r.Content, Score: r.Score, HitCount: r.HitCount,
		WordCount: r.WordCount, CreatedAt: r.CreatedAt.Unix()}
}

// withContext puts the knowledge context at the head of the system prompt, as Dify's chat
// prompt template does (context first, then the pre-prompt).
func withContext(prompt []providers.Message, context string) []providers.Message {
	if context == "" {
		return prompt
	}
	if len(prompt) > 0 && prompt[0].Role == providers.RoleSystem {
		out := append([]providers.Message(nil), prompt...)
		out[0].Content = context + "\n" + out[0].Content
		return out
	}
	return append([]providers.Message{{Role: providers.RoleSystem, Content: context}}, prompt...)
}
