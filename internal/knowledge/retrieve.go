package knowledge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tracing"
)

// MaxQueryLength is the longest retrieval query, in characters.
const MaxQueryLength = 250

// ChildHit is a matching child chunk of a hierarchical record.
type ChildHit struct {
	store.ChildChunk
	Score float64
}

// Record is one retrieval result: a segment (the parent chunk, for hierarchical documents) with
// its document and dataset, its score and, for hierarchical documents, the matching children.
type Record struct {
	Segment     store.Segment
	Document    store.Document
	Dataset     store.Dataset
	ChildChunks []ChildHit
	Score       float64
	// External is what the external knowledge API answered, for a record of an external
	// knowledge base (whose Segment and Document stand for the record; see externalHit); nil
	// for a local one.
	External *ExternalRecord
}

// RetrieveInput is the body of POST /datasets/{id}/retrieve.
type RetrieveInput struct {
	Query          string
	RetrievalModel json.RawMessage
	AttachmentIDs  []string
	// ExternalRetrievalModel ({top_k, score_threshold, score_threshold_enabled}) and
	// MetadataFilteringConditions are those of Dify's external hit testing; they apply to an
	// external knowledge base, which also takes top_k and the threshold of RetrievalModel.
	ExternalRetrievalModel      json.RawMessage
	MetadataFilteringConditions json.RawMessage
}

// RetrieveDataset is hit testing on one dataset: the body's retrieval model, else the
// dataset's, else semantic search with top_k 4. Hit counts are not changed.
func (s *Service) RetrieveDataset(ctx context.Context, datasetID string, in RetrieveInput) ([]Record, error) {
	d, err := s.dataset(ctx, datasetID)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Query) == "" {
		if len(in.AttachmentIDs) > 0 {
			return nil, invalidParam("Image queries need a multimodal knowledge base, which Parley does not support.")
		}
		return nil, invalidParam("Query or attachment_ids is required")
	}
	if utf8.RuneCountInString(in.Query) > MaxQueryLength {
		return nil, invalidParam(fmt.Sprintf("Query cannot exceed %d characters", MaxQueryLength))
	}
	if d.Provider == store.DatasetProviderExternal {
		return s.retrieveExternalDataset(ctx, d, in)
	}
	if d.IndexingTechnique == "" {
		return nil, ErrNotInitialized
	}
	raw := in.RetrievalModel
	if len(raw) == 0 || string(raw) == "null" {
		raw = d.RetrievalModel
	}
	rm, err := parseRetrievalModel(raw, 4)
	if err != nil {
		return nil, err
	}
	return s.Retrieve(ctx, []store.Dataset{d}, in.Query, rm)
}

// Retrieve searches datasets for query with rm. Economy datasets are always searched by
// keyword. Results are best first, at most rm.TopK. Every retrieval (a chat's, a workflow
// node's, a hit test) is a span.
//
// External knowledge bases among datasets are searched by their external knowledge APIs, each
// with its own setting (top_k, score threshold) and rm's metadata filter, at the same time as
// the local ones; their records join the others by score. The first that fails fails the
// retrieval.
func (s *Service) Retrieve(ctx context.Context, datasets []store.Dataset, query string, rm RetrievalModel) (records []Record, err error) {
	if rm.TopK <= 0 {
		rm.TopK = 4
	}
	ctx, span := tracing.Start(ctx, "retrieval", trace.SpanKindInternal)
	defer func() { endRetrieval(span, datasets, query, rm, len(records), err) }()
	var local, external []store.Dataset
	for _, d := range datasets {
		if d.Provider == store.DatasetProviderExternal {
			external = append(external, d)
		} else {
			local = append(local, d)
		}
	}
	fetched := s.startExternal(ctx, external, query, rm)
	records, err = s.retrieveLocal(ctx, local, query, rm)
	ext, extErr := fetched()
	if err != nil {
		return nil, err
	}
	if extErr != nil {
		return nil, extErr
	}
	if len(ext) > 0 {
		records = append(records, ext...)
		sortRecords(records)
	}
	if rm.ScoreThresholdEnabled && rm.ScoreThreshold != nil {
		records = slices.DeleteFunc(records, func(r Record) bool { return r.Score < *rm.ScoreThreshold })
	}
	if len(records) > rm.TopK {
		records = records[:rm.TopK]
	}
	return records, nil
}

// startExternal starts the retrievals from the external knowledge bases, at once and in
// parallel, each with its own setting and rm's metadata filter; the function it returns waits
// for them and gives their records, or the first failure in the order of datasets.
func (s *Service) startExternal(ctx context.Context, datasets []store.Dataset, query string, rm RetrievalModel) func() ([]Record, error) {
	if len(datasets) == 0 {
		return func() ([]Record, error) { return nil, nil }
	}
	type result struct {
		recs []Record
		err  error
	}
	results := make([]result, len(datasets))
	var wg sync.WaitGroup
	for i, d := range datasets {
		wg.Go(func() {
			es, err := parseExternalSetting(d.RetrievalModel)
			if err != nil {
				results[i].err = fmt.Errorf("knowledge: setting of external knowledge base %s: %w", d.ID, err)
				return
			}
			results[i].recs, results[i].err = s.retrieveExternal(ctx, d, query, es, rm.MetadataFiltering)
		})
	}
	return func() ([]Record, error) {
		wg.Wait()
		var out []Record
		for _, r := range results {
			if r.err != nil {
				return nil, r.err
			}
			out = append(out, r.recs...)
		}
		return out, nil
	}
}

// retrieveExternalDataset is hit testing on an external knowledge base: the members of the
// request's external_retrieval_model (else the top_k and threshold of its retrieval_model) over
// the knowledge base's own setting; the metadata filter of either.
func (s *Service) retrieveExternalDataset(ctx context.Context, d store.Dataset, in RetrieveInput) ([]Record, error) {
	es, err := parseExternalSetting(d.RetrievalModel)
	if err != nil {
		return nil, err
	}
	for _, r := range []json.RawMessage{in.ExternalRetrievalModel, in.RetrievalModel} {
		if len(r) == 0 || string(r) == "null" {
			continue
		}
		base, _ := json.Marshal(es)
		merged, err := mergeJSON(base, r)
		if err != nil {
			return nil, invalidParam(fmt.Sprintf("external_retrieval_model is invalid: %v", err))
		}
		if es, err = parseExternalSetting(merged); err != nil {
			return nil, err
		}
		break
	}
	var filter *MetadataFilter
	if f := in.MetadataFilteringConditions; len(f) > 0 && string(f) != "null" {
		filter = new(MetadataFilter)
		if err := json.Unmarshal(f, filter); err != nil {
			return nil, invalidParam(fmt.Sprintf("metadata_filtering_conditions is invalid: %v", err))
		}
	} else if len(in.RetrievalModel) > 0 && string(in.RetrievalModel) != "null" {
		rm, err := parseRetrievalModel(in.RetrievalModel, es.TopK)
		if err != nil {
			return nil, err
		}
		filter = rm.MetadataFiltering
	}
	d.RetrievalModel, _ = json.Marshal(es)
	threshold := es.ScoreThreshold
	rm := RetrievalModel{SearchMethod: SearchSemantic, TopK: es.TopK, ScoreThresholdEnabled: es.ScoreThresholdEnabled,
		ScoreThreshold: &threshold, MetadataFiltering: filter}
	return s.Retrieve(ctx, []store.Dataset{d}, in.Query, rm)
}

// retrieveLocal is Retrieve over knowledge bases of Parley's own: their records best first,
// at most rm.TopK of them, above rm's threshold.
func (s *Service) retrieveLocal(ctx context.Context, datasets []store.Dataset, query string, rm RetrievalModel) ([]Record, error) {
	var economy, hq []store.Dataset
	for _, d := range datasets {
		switch d.IndexingTechnique {
		case store.TechniqueEconomy:
			economy = append(economy, d)
		case store.TechniqueHighQuality:
			hq = append(hq, d)
		}
	}
	filtered := rm.MetadataFiltering != nil && len(rm.MetadataFiltering.Conditions) > 0
	want := rm.TopK
	if filtered {
		want *= 4
	}
	scores := map[string]float64{}
	add := func(hits []store.NodeHit) {
		for _, h := range hits {
			if old, ok := scores[h.NodeID]; !ok || h.Score > old {
				scores[h.NodeID] = h.Score
			}
		}
	}
	if len(economy) > 0 {
		hits, err := s.st.SearchKeywords(ctx, ids(economy), segment.Keywords(query, segment.DefaultKeywordNumber), want)
		if err != nil {
			return nil, fmt.Errorf("knowledge: keyword search: %w", err)
		}
		add(hits)
	}
	var qvecs map[string][]float32 // by dataset id
	if len(hq) > 0 {
		method := rm.SearchMethod
		if method == SearchKeyword {
			method = SearchFullText // high-quality datasets have no keyword table
		}
		candidates := want
		if method == SearchHybrid {
			candidates = min(max(want, 50), 200)
		}
		if method == SearchSemantic || method == SearchHybrid {
			var err error
			if qvecs, err = s.queryVectors(ctx, hq, query); err != nil {
				return nil, err
			}
			for _, d := range hq {
				minScore := math.Inf(-1)
				if rm.ScoreThresholdEnabled && rm.ScoreThreshold != nil && method == SearchSemantic && !rm.RerankingEnable {
					minScore = *rm.ScoreThreshold
				}
				hits, err := s.vectors.Search(ctx, []string{d.ID}, qvecs[d.ID], candidates, minScore)
				if err != nil {
					return nil, fmt.Errorf("knowledge: semantic search: %w", err)
				}
				add(hits)
			}
		}
		if method == SearchFullText || method == SearchHybrid {
			hits, err := s.st.SearchFullText(ctx, ids(hq), segment.QueryTerms(query), candidates)
			if err != nil {
				return nil, fmt.Errorf("knowledge: full-text search: %w", err)
			}
			add(hits)
		}
	}
	if len(scores) == 0 {
		return []Record{}, nil
	}
	nodeIDs := make([]string, 0, len(scores))
	for id := range scores {
		nodeIDs = append(nodeIDs, id)
	}
	hits, err := s.st.ResolveHits(ctx, nodeIDs)
	if err != nil {
		return nil, fmt.Errorf("knowledge: resolve hits: %w", err)
	}
	if filtered {
		for id, h := range hits {
			if !matchMetadata(h.Document, *rm.MetadataFiltering) {
				delete(hits, id)
			}
		}
	}
	if err := s.rescore(ctx, hq, query, rm, hits, scores, qvecs); err != nil {
		return nil, err
	}
	records := group(hits, scores)
	if rm.ScoreThresholdEnabled && rm.ScoreThreshold != nil {
		records = slices.DeleteFunc(records, func(r Record) bool { return r.Score < *rm.ScoreThreshold })
	}
	if len(records) > rm.TopK {
		records = records[:rm.TopK]
	}
	return records, nil
}

// endRetrieval ends a retrieval's span (the retrieval span of the GenAI conventions) with what
// was searched, how (the methods the datasets were searched with, as Retrieve chooses them), and
// how many records were found.
func endRetrieval(span trace.Span, datasets []store.Dataset, query string, rm RetrievalModel, hits int, err error) {
	if span.IsRecording() {
		names := make([]string, len(datasets))
		var methods []string
		for i, d := range datasets {
			names[i] = d.Name
			m := rm.SearchMethod
			switch {
			case d.Provider == store.DatasetProviderExternal:
				m = "external"
			case d.IndexingTechnique == store.TechniqueEconomy:
				m = SearchKeyword
			case m == SearchKeyword:
				m = SearchFullText
			}
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
		if len(datasets) == 1 {
			span.SetName("retrieval " + datasets[0].Name)
			span.SetAttributes(tracing.GenAIDataSourceID.String(datasets[0].ID))
		}
		span.SetAttributes(tracing.GenAIOperation.String("retrieval"), tracing.KnowledgeDatasets.StringSlice(names),
			tracing.KnowledgeDatasetIDs.StringSlice(ids(datasets)), tracing.KnowledgeMethod.StringSlice(methods),
			tracing.KnowledgeTopK.Int(rm.TopK), tracing.KnowledgeHits.Int(hits))
		if tracing.CaptureContent() {
			span.SetAttributes(tracing.GenAIRetrievalQuery.String(query))
		}
		tracing.Fail(span, err)
	}
	span.End()
}

func ids(ds []store.Dataset) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// queryVectors embeds the query once per distinct embedding model.
func (s *Service) queryVectors(ctx context.Context, ds []store.Dataset, query string) (map[string][]float32, error) {
	out := map[string][]float32{}
	byModel := map[string][]float32{}
	for _, d := range ds {
		key := d.EmbeddingModelProvider + "\x00" + d.EmbeddingModel
		v, ok := byModel[key]
		if !ok {
			embed, err := s.embedder(d)
			if err != nil {
				return nil, err
			}
			vecs, err := embed(ctx, []string{query})
			if err != nil {
				return nil, err
			}
			v = vecs[0]
			byModel[key] = v
		}
		out[d.ID] = v
	}
	return out, nil
}

// rescore applies reranking to high-quality hits: a rerank model when one is enabled, else, for
// hybrid search, Dify's weighted score (vector weight × cosine + keyword weight × TF-IDF
// keyword similarity).
func (s *Service) rescore(ctx context.Context, hq []store.Dataset, query string, rm RetrievalModel, hits map[string]store.Hit, scores map[string]float64, qvecs map[string][]float32) error {
	if len(hq) == 0 || len(hits) == 0 {
		return nil
	}
	useModel := rm.RerankingEnable && rm.RerankingModel.ModelName != "" &&
		(rm.RerankingMode == nil || *rm.RerankingMode == RerankModel)
	if useModel {
		return s.rerankModel(ctx, query, rm, hits, scores)
	}
	if rm.SearchMethod != SearchHybrid {
		return nil
	}
	vw, kw := rm.weights()
	nodeIDs := make([]string, 0, len(hits))
	for id, h := range hits {
		if h.Dataset.IndexingTechnique == store.TechniqueHighQuality {
			nodeIDs = append(nodeIDs, id)
		}
	}
	slices.Sort(nodeIDs)
	vecs, err := s.st.NodeVectors(ctx, nodeIDs)
	if err != nil {
		return fmt.Errorf("knowledge: node vectors: %w", err)
	}
	texts := make([]string, len(nodeIDs))
	for i, id := range nodeIDs {
		texts[i] = hitText(hits[id])
	}
	ksim := keywordSimilarity(query, texts)
	for i, id := range nodeIDs {
		cos := 0.0
		if v, q := vecs[id], qvecs[hits[id].Dataset.ID]; len(v) == len(q) && len(q) > 0 {
			cos = dot(v, q)
		}
		scores[id] = vw*cos + kw*ksim[i]
	}
	return nil
}

func hitText(h store.Hit) string {
	if h.ChildChunk != nil {
		return h.ChildChunk.Content
	}
	return h.Segment.Content
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func (s *Service) rerankModel(ctx context.Context, query string, rm RetrievalModel, hits map[string]store.Hit, scores map[string]float64) error {
	spec, err := s.catalog.Lookup(models.TypeRerank, providerName(rm.RerankingModel.ProviderName), rm.RerankingModel.ModelName)
	if err != nil {
		return invalidParam("Invalid rerank model: " + rm.RerankingModel.ModelName).withCause(err)
	}
	client, err := s.models.Reranker(spec)
	if err != nil {
		return err
	}
	nodeIDs := make([]string, 0, len(hits))
	for id := range hits {
		nodeIDs = append(nodeIDs, id)
	}
	slices.Sort(nodeIDs)
	docs := make([]string, len(nodeIDs))
	for i, id := range nodeIDs {
		docs[i] = hitText(hits[id])
	}
	results, _, err := client.Rerank(ctx, spec.Name, query, docs, len(docs))
	if err != nil {
		return err
	}
	ranked := map[string]bool{}
	for _, r := range results {
		if r.Index >= 0 && r.Index < len(nodeIDs) {
			scores[nodeIDs[r.Index]] = r.Score
			ranked[nodeIDs[r.Index]] = true
		}
	}
	for _, id := range nodeIDs {
		if !ranked[id] {
			delete(hits, id)
		}
	}
	return nil
}

// keywordSimilarity is the cosine similarity of TF-IDF vectors of the query's and each text's
// keywords, IDF over the texts (Dify's weighted rerank: idf = ln((1+N)/(1+df)) + 1).
func keywordSimilarity(query string, texts []string) []float64 {
	qk := segment.Keywords(query, segment.DefaultKeywordNumber)
	tk := segment.KeywordsEach(texts, segment.DefaultKeywordNumber)
	df := map[string]int{}
	for _, ks := range tk {
		seen := map[string]bool{}
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				df[k]++
			}
		}
	}
	n := float64(len(texts))
	idf := func(k string) float64 { return math.Log((1+n)/(1+float64(df[k]))) + 1 }
	vec := func(ks []string) map[string]float64 {
		v := map[string]float64{}
		for _, k := range ks {
			v[k]++
		}
		for k := range v {
			v[k] *= idf(k)
		}
		return v
	}
	q := vec(qk)
	var qn float64
	for _, x := range q {
		qn += x * x
	}
	out := make([]float64, len(texts))
	for i, ks := range tk {
		t := vec(ks)
		var dotp, tn float64
		for k, x := range t {
			tn += x * x
			dotp += x * q[k]
		}
		if qn > 0 && tn > 0 {
			out[i] = dotp / math.Sqrt(qn*tn)
		}
	}
	return out
}

// group turns node hits into records: one per segment, a hierarchical parent scored by its best
// child with the matching children listed best first; records best first.
func group(hits map[string]store.Hit, scores map[string]float64) []Record {
	bySeg := map[string]*Record{}
	var order []*Record
	for id, h := range hits {
		sc := scores[id]
		r, ok := bySeg[h.Segment.ID]
		if !ok {
			r = &Record{Segment: h.Segment, Document: h.Document, Dataset: h.Dataset, Score: sc}
			bySeg[h.Segment.ID] = r
			order = append(order, r)
		}
		if h.ChildChunk != nil {
			r.ChildChunks = append(r.ChildChunks, ChildHit{ChildChunk: *h.ChildChunk, Score: sc})
		}
		r.Score = max(r.Score, sc)
	}
	out := make([]Record, len(order))
	for i, r := range order {
		slices.SortFunc(r.ChildChunks, func(a, b ChildHit) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Position, b.Position))
		})
		out[i] = *r
	}
	sortRecords(out)
	return out
}

// sortRecords orders records best first, ties by chunk id.
func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Segment.ID, b.Segment.ID))
	})
}

// matchMetadata evaluates metadata filtering conditions on a document's custom metadata.
func matchMetadata(doc store.Document, f MetadataFilter) bool {
	var meta map[string]any
	_ = json.Unmarshal(doc.DocMetadata, &meta)
	or := strings.EqualFold(f.LogicalOperator, "or")
	for _, c := range f.Conditions {
		ok := matchCondition(meta[c.Name], c)
		for _, name := range c.anyOf {
			ok = ok || matchCondition(meta[name], c)
		}
		if or && ok {
			return true
		}
		if !or && !ok {
			return false
		}
	}
	return !or
}

func matchCondition(v any, c MetadataCondition) bool {
	str := func(x any) string {
		if x == nil {
			return ""
		}
		if s, ok := x.(string); ok {
			return s
		}
		return fmt.Sprint(x)
	}
	num := func(x any) (float64, bool) {
		switch t := x.(type) {
		case float64:
			return t, true
		case string:
			var f float64
			_, err := fmt.Sscan(t, &f)
			return f, err == nil
		}
		return 0, false
	}
	s, want := str(v), str(c.Value)
	switch c.ComparisonOperator {
	case "contains":
		return strings.Contains(s, want)
	case "not contains":
		return !strings.Contains(s, want)
	case "start with":
		return strings.HasPrefix(s, want)
	case "end with":
		return strings.HasSuffix(s, want)
	case "is", "=":
		if a, ok := num(v); ok {
			if b, ok := num(c.Value); ok {
				return a == b
			}
		}
		return s == want
	case "is not", "≠":
		return s != want
	case "empty":
		return s == ""
	case "not empty":
		return s != ""
	case "in", "not in":
		var list []string
		switch t := c.Value.(type) {
		case []any:
			for _, x := range t {
				list = append(list, str(x))
			}
		case string:
			for _, x := range strings.Split(t, ",") {
				list = append(list, strings.TrimSpace(x))
			}
		}
		in := slices.Contains(list, s)
		return in == (c.ComparisonOperator == "in")
	case ">", "<", "≥", "≤", "before", "after":
		a, ok1 := num(v)
		b, ok2 := num(c.Value)
		if !ok1 || !ok2 {
			return false
		}
		switch c.ComparisonOperator {
		case ">", "after":
			return a > b
		case "<", "before":
			return a < b
		case "≥":
			return a >= b
		default:
			return a <= b
		}
	}
	return false
}
