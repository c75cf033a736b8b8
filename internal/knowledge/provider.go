package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// Parley serves its knowledge bases as Dify's External Knowledge API too (POST
// /v1/external-knowledge/retrieval, with a knowledge-base key), so that a Dify instance, another
// Parley, or anything else that speaks the API can use them as external knowledge.

// ExternalQuery is a request of the External Knowledge API: the knowledge base (its id), the
// query, how many records and above which score, and a metadata filter (nil: none).
type ExternalQuery struct {
	KnowledgeID    string
	Query          string
	TopK           int
	ScoreThreshold float64
	Filter         *MetadataFilter
}

// ExternalAnswer is one record of the External Knowledge API's answer.
type ExternalAnswer struct {
	Content  string
	Score    float64
	Title    string
	Metadata map[string]any
}

// AnswerExternal answers an External Knowledge API request from one of Parley's knowledge
// bases: searched with its own retrieval model (search method, reranking), with the request's
// top_k, threshold (0: none, as Dify sends a disabled one) and metadata filter. A knowledge base
// that does not exist, or is itself external (Parley does not relay another service, which
// could make a loop), is ErrKnowledgeNotFound; one without an index yet answers no records.
// Hit counts are not changed, as in hit testing.
func (s *Service) AnswerExternal(ctx context.Context, q ExternalQuery) ([]ExternalAnswer, error) {
	d, err := s.dataset(ctx, q.KnowledgeID)
	if errors.Is(err, ErrDatasetNotFound) || err == nil && d.Provider == store.DatasetProviderExternal {
		return nil, ErrKnowledgeNotFound
	}
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Query) == "" {
		return nil, invalidParam("query is required")
	}
	switch {
	case q.TopK < 1 || q.TopK > config.MaxExternalTopK:
		return nil, invalidParam(fmt.Sprintf("retrieval_setting.top_k must be from 1 to %d", config.MaxExternalTopK))
	case math.IsNaN(q.ScoreThreshold) || q.ScoreThreshold < 0 || q.ScoreThreshold > 1:
		return nil, invalidParam("retrieval_setting.score_threshold must be from 0 to 1")
	}
	if d.IndexingTechnique == "" {
		return []ExternalAnswer{}, nil
	}
	rm, err := parseRetrievalModel(d.RetrievalModel, q.TopK)
	if err != nil {
		return nil, err
	}
	rm.TopK = q.TopK
	rm.ScoreThresholdEnabled, rm.ScoreThreshold = q.ScoreThreshold > 0, &q.ScoreThreshold
	rm.MetadataFiltering = q.Filter
	records, err := s.Retrieve(ctx, []store.Dataset{d}, q.Query, rm)
	if err != nil {
		return nil, err
	}
	out := make([]ExternalAnswer, len(records))
	for i, r := range records {
		meta := map[string]any{}
		if len(r.Document.DocMetadata) > 0 {
			_ = json.Unmarshal(r.Document.DocMetadata, &meta)
		}
		// Where the record comes from, under Dify's names: a Dify client cites document_id.
		maps.Copy(meta, map[string]any{
			"dataset_id": d.ID, "dataset_name": d.Name, "document_id": r.Document.ID, "document_name": r.Document.Name,
			"segment_id": r.Segment.ID, "segment_position": r.Segment.Position, "data_source_type": r.Document.DataSourceType,
		})
		out[i] = ExternalAnswer{Content: chunkText(r.Segment), Score: r.Score, Title: r.Document.Name, Metadata: meta}
	}
	return out, nil
}

// ExternalCondition is one metadata condition of an External Knowledge API request: Dify sends
// one field name, its documentation a list of them (the condition holds when it holds for any).
type ExternalCondition struct {
	Names              []string
	ComparisonOperator string
	Value              any
}

// ExternalFilter is the metadata filter of conditions joined by logical (and, the default, or
// or).
func ExternalFilter(logical string, conds []ExternalCondition) *MetadataFilter {
	if len(conds) == 0 {
		return nil
	}
	f := &MetadataFilter{LogicalOperator: logical, Conditions: make([]MetadataCondition, len(conds))}
	for i, c := range conds {
		mc := MetadataCondition{ComparisonOperator: c.ComparisonOperator, Value: c.Value}
		if len(c.Names) > 0 {
			mc.Name = c.Names[0]
		}
		if len(c.Names) > 1 {
			mc.anyOf = c.Names
		}
		f.Conditions[i] = mc
	}
	return f
}
