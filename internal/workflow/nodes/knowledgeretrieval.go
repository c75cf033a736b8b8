package nodes

import (
	"context"

	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Knowledge retrieves chunks from knowledge bases; *knowledge.Service implements it.
type Knowledge interface {
	RetrieveForChat(ctx context.Context, names []string, query string) (knowledge.ChatContext, error)
}

// knowledgeRetrieval searches its knowledge bases (dataset_ids, rewritten to Parley knowledge
// base names at import) with the query and outputs the chunks found as `result`: objects with
// `content`, `title` (the document's name) and `metadata` (where the chunk comes from and its
// score), as Dify's node does. An LLM that takes this result as its context cites the chunks.
// Retrieval follows the knowledge bases' own settings (Parley's chat retrieval), not the node's
// retrieval mode, top k or reranking.
type knowledgeRetrieval struct {
	kb    Knowledge
	query []string
	names []string
}

func (d Deps) newKnowledgeRetrieval(n *workflow.Node) (workflow.NodeRunner, error) {
	k := &knowledgeRetrieval{kb: d.Knowledge, query: workflow.Selector(n.Data["query_variable_selector"])}
	for _, v := range list(n.Data["dataset_ids"]) {
		if s := str(v); s != "" {
			k.names = append(k.names, s)
		}
	}
	if k.kb == nil {
		return nil, configError("knowledge bases are not available")
	}
	return k, nil
}

func (k *knowledgeRetrieval) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	qv, _ := x.Pool.Get(k.query)
	query := value.Text(qv)
	res := workflow.Result{Inputs: map[string]any{"query": query}}
	if query == "" || len(k.names) == 0 {
		res.Outputs = map[string]any{"result": []any{}}
		return res, nil
	}
	cc, err := k.kb.RetrieveForChat(ctx, k.names, query)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		// The node's error is shown to the client: a knowledge error's client-safe text (an
		// external knowledge base's failing API named, not its address).
		msg, ok := safeerr.Message(err)
		if !ok {
			msg = err.Error()
		}
		return res, workflow.Errorf("KnowledgeRetrievalNodeError", "%s", msg)
	}
	out := make([]any, len(cc.Resources))
	for i, r := range cc.Resources {
		out[i] = value.ObjectOf(
			"metadata", value.ObjectOf("_source", "knowledge", "position", int64(r.Position), "dataset_id", r.DatasetID,
				"dataset_name", r.DatasetName, "document_id", r.DocumentID, "document_name", r.DocumentName,
				"data_source_type", r.DataSourceType, "segment_id", r.SegmentID, "retriever_from", "workflow",
				"score", r.Score, "hit_count", int64(r.HitCount), "word_count", int64(r.WordCount),
				"segment_position", int64(r.SegmentPosition), "index_node_hash", r.IndexNodeHash),
			"title", r.DocumentName, "content", r.Content)
	}
	res.Outputs = map[string]any{"result": out}
	return res, nil
}

// resourceOf reads back the citation of a chunk of a knowledge-retrieval result.
func resourceOf(item *value.Object) (store.RetrieverResource, bool) {
	mv, _ := item.Get("metadata")
	meta, ok := mv.(*value.Object)
	if !ok {
		return store.RetrieverResource{}, false
	}
	if src, _ := meta.Get("_source"); src != "knowledge" {
		return store.RetrieverResource{}, false
	}
	text := func(k string) string {
		v, _ := meta.Get(k)
		return value.Text(v)
	}
	num := func(k string) int {
		v, _ := meta.Get(k)
		switch n := v.(type) {
		case int64:
			return int(n)
		case float64:
			return int(n)
		}
		return 0
	}
	content, _ := item.Get("content")
	score, _ := meta.Get("score")
	f, _ := score.(float64)
	return store.RetrieverResource{Position: num("position"), DatasetID: text("dataset_id"), DatasetName: text("dataset_name"),
		DocumentID: text("document_id"), DocumentName: text("document_name"), DataSourceType: text("data_source_type"),
		SegmentID: text("segment_id"), SegmentPosition: num("segment_position"), IndexNodeHash: text("index_node_hash"),
		Content: value.Text(content), Score: f, HitCount: num("hit_count"), WordCount: num("word_count")}, true
}
