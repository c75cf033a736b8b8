package knowledge

import (
	"encoding/json"
	"fmt"
)

// Search methods.
const (
	SearchKeyword  = "keyword_search"
	SearchSemantic = "semantic_search"
	SearchFullText = "full_text_search"
	SearchHybrid   = "hybrid_search"
)

// Reranking modes.
const (
	RerankModel    = "reranking_model"
	RerankWeighted = "weighted_score"
)

// RetrievalModel is Dify's retrieval_model object.
type RetrievalModel struct {
	SearchMethod          string          `json:"search_method"`
	RerankingEnable       bool            `json:"reranking_enable"`
	RerankingMode         *string         `json:"reranking_mode,omitempty"`
	RerankingModel        RerankingModel  `json:"reranking_model"`
	Weights               *Weights        `json:"weights,omitempty"`
	TopK                  int             `json:"top_k"`
	ScoreThresholdEnabled bool            `json:"score_threshold_enabled"`
	ScoreThreshold        *float64        `json:"score_threshold,omitempty"`
	MetadataFiltering     *MetadataFilter `json:"metadata_filtering_conditions,omitempty"`
}

// RerankingModel names a rerank model.
type RerankingModel struct {
	ProviderName string `json:"reranking_provider_name"`
	ModelName    string `json:"reranking_model_name"`
}

// Weights are the weighted_score fusion weights of hybrid search.
type Weights struct {
	WeightType     string         `json:"weight_type,omitempty"`
	VectorSetting  *VectorSetting `json:"vector_setting,omitempty"`
	KeywordSetting *struct {
		KeywordWeight float64 `json:"keyword_weight"`
	} `json:"keyword_setting,omitempty"`
}

// VectorSetting is the semantic half of Weights.
type VectorSetting struct {
	VectorWeight          float64 `json:"vector_weight"`
	EmbeddingProviderName string  `json:"embedding_provider_name"`
	EmbeddingModelName    string  `json:"embedding_model_name"`
}

// MetadataFilter is metadata_filtering_conditions.
type MetadataFilter struct {
	LogicalOperator string              `json:"logical_operator"`
	Conditions      []MetadataCondition `json:"conditions"`
}

// MetadataCondition is one metadata filter condition.
type MetadataCondition struct {
	Name               string `json:"name"`
	ComparisonOperator string `json:"comparison_operator"`
	Value              any    `json:"value"`
	// anyOf, when set, are the fields the condition is tried on, Name first: it holds when it
	// holds for one of them (an External Knowledge API condition naming several).
	anyOf []string
}

// DefaultRetrievalModel is what a dataset without a stored retrieval model reports, and the base
// stored models are merged over (top_k 2).
func DefaultRetrievalModel() RetrievalModel {
	return RetrievalModel{SearchMethod: SearchSemantic, TopK: 2}
}

// weights returns the vector and keyword weights of weighted fusion (Dify's UI default 0.7/0.3).
func (m RetrievalModel) weights() (vector, keyword float64) {
	vector, keyword = 0.7, 0.3
	if w := m.Weights; w != nil {
		switch w.WeightType {
		case "keyword_first":
			vector, keyword = 0.3, 0.7
		case "semantic_first":
		default:
			if w.VectorSetting != nil {
				vector = w.VectorSetting.VectorWeight
			}
			if w.KeywordSetting != nil {
				keyword = w.KeywordSetting.KeywordWeight
			}
		}
	}
	return vector, keyword
}

// parseRetrievalModel decodes raw over the defaults (top_k defaultTopK). Null or absent gives
// the defaults.
func parseRetrievalModel(raw json.RawMessage, defaultTopK int) (RetrievalModel, error) {
	m := DefaultRetrievalModel()
	m.TopK = defaultTopK
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, invalidParam(fmt.Sprintf("retrieval_model is invalid: %v", err))
	}
	switch m.SearchMethod {
	case SearchKeyword, SearchSemantic, SearchFullText, SearchHybrid:
	case "":
		m.SearchMethod = SearchSemantic
	default:
		return m, invalidParam(fmt.Sprintf("Retrieval method %s is invalid", m.SearchMethod))
	}
	if m.TopK <= 0 {
		m.TopK = defaultTopK
	}
	return m, nil
}
