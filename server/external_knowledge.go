package server

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/knowledge"
)

// ExternalKnowledgeRetrieval answers POST /external-knowledge/retrieval: Dify's External
// Knowledge API over Parley's knowledge bases (knowledge.AnswerExternal). Its errors are the
// API's {error_code, error_msg} (errdialect.go).
func (s *Server) ExternalKnowledgeRetrieval(ctx context.Context, req gen.ExternalKnowledgeRetrievalRequestObject) (gen.ExternalKnowledgeRetrievalResponseObject, error) {
	b := req.Body
	q := knowledge.ExternalQuery{KnowledgeID: b.KnowledgeId, Query: b.Query,
		TopK: b.RetrievalSetting.TopK, ScoreThreshold: b.RetrievalSetting.ScoreThreshold}
	if mc := b.MetadataCondition; mc != nil {
		conds := make([]knowledge.ExternalCondition, len(mc.Conditions))
		for i, c := range mc.Conditions {
			names := []string{}
			if one, err := c.Name.AsExternalKnowledgeConditionName0(); err == nil {
				names = append(names, one)
			} else if many, err := c.Name.AsExternalKnowledgeConditionName1(); err == nil {
				names = many
			}
			var value any
			if c.Value != nil {
				if raw, err := c.Value.MarshalJSON(); err == nil {
					_ = json.Unmarshal(raw, &value)
				}
			}
			conds[i] = knowledge.ExternalCondition{Names: names, ComparisonOperator: string(c.ComparisonOperator), Value: value}
		}
		logical := "and"
		if mc.LogicalOperator != nil {
			logical = string(*mc.LogicalOperator)
		}
		q.Filter = knowledge.ExternalFilter(logical, conds)
	}
	answers, err := s.knowledge.AnswerExternal(ctx, q)
	if err != nil {
		return nil, err
	}
	out := gen.ExternalKnowledgeRetrieval200JSONResponse{Records: make([]gen.ExternalKnowledgeRecord, len(answers))}
	for i, a := range answers {
		out.Records[i] = gen.ExternalKnowledgeRecord{Content: a.Content, Score: a.Score, Title: a.Title, Metadata: a.Metadata}
	}
	return out, nil
}
