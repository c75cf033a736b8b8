package dsl

import (
	"fmt"
	"maps"
	"slices"
)

// exportWorkflow writes the workflow section of a Chatflow: its graph as the import kept it
// (model and knowledge base references already name this server's models and knowledge bases,
// as a Chatbot's export names them), its features in Dify's shape, and its environment and
// conversation variables.
func (e exporter) exportWorkflow() (map[string]any, error) {
	w := e.a.Workflow
	if w == nil || w.Graph == nil {
		return nil, fmt.Errorf("the %s app %q has no workflow graph to export", e.a.Mode, e.a.Name)
	}
	const p = "workflow"
	fp := p + ".features"
	a, f := e.a, e.a.Features
	features := map[string]any{
		"opening_statement":                a.OpeningStatement,
		"suggested_questions":              stringList(a.SuggestedQuestions),
		"suggested_questions_after_answer": e.toggle(fp+".suggested_questions_after_answer", a.SuggestedQuestionsAfterAnswer),
		"speech_to_text":                   e.toggle(fp+".speech_to_text", f.SpeechToText.Enabled),
		"retriever_resource":               e.toggle(fp+".retriever_resource", f.RetrieverResource.Enabled),
		"text_to_speech":                   e.textToSpeech(fp),
		"sensitive_word_avoidance":         e.moderation(fp),
		"file_upload":                      e.fileUpload(fp),
	}
	// Dify's workflow features have neither more_like_this nor annotation_reply (a Chatflow's
	// annotation reply is set apart from its DSL); they are written only when on.
	if f.MoreLikeThis.Enabled {
		features["more_like_this"] = e.toggle(fp+".more_like_this", true)
	}
	if f.AnnotationReply.Enabled {
		features["annotation_reply"] = e.annotationReply(fp)
	}
	return e.with(p, map[string]any{
		"graph":                  withUnmappedDatasets(w.Graph),
		"features":               e.with(fp, features),
		"environment_variables":  variables(w.EnvironmentVariables),
		"conversation_variables": variables(w.ConversationVariables),
	}), nil
}

func variables(vs []map[string]any) []any {
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		out = append(out, maps.Clone(v))
	}
	return out
}

// withUnmappedDatasets returns graph with the dataset references its knowledge-retrieval nodes
// could not map on import written back into their dataset_ids, after the knowledge bases that
// did resolve (see resolveNodeDatasets). graph is not changed; what is rewritten is copied.
func withUnmappedDatasets(graph map[string]any) map[string]any {
	nodes, _ := graph["nodes"].([]any)
	var out []any
	for i, n := range nodes {
		node, _ := n.(map[string]any)
		data, _ := node["data"].(map[string]any)
		unmapped, ok := data[unmappedDatasetIDs].([]any)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(nodes)
		}
		d := maps.Clone(data)
		delete(d, unmappedDatasetIDs)
		d["dataset_ids"] = slices.Concat(list(data["dataset_ids"]), unmapped)
		c := maps.Clone(node)
		c["data"] = d
		out[i] = c
	}
	if out == nil {
		return graph
	}
	g := maps.Clone(graph)
	g["nodes"] = out
	return g
}
