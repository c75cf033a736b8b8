package knowledge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/store"
)

// ChatTopK is how many chunks a chat message retrieves across an app's knowledge bases (Dify's
// multiple-retrieval default).
const ChatTopK = 4

// contextPrompt is Dify's chat context template; the retrieved chunks replace {{#context#}}.
const contextPrompt = "Use the following context as your learned knowledge, inside <context></context> XML tags.\n\n" +
	"<context>\n{{#context#}}\n</context>\n\n" +
	"When answer to user:\n" +
	"- If you don't know, just say that you don't know.\n" +
	"- If you don't know when you are not sure, ask for clarification.\n" +
	"Avoid mentioning that you obtained the information from the context.\n" +
	"And answer according to the language of the user's question.\n"

// ChatContext is what a chat message retrieved: the chunks as retriever resources (position,
// score and content filled in; no id or message yet) and the context for the prompt.
type ChatContext struct {
	Resources []store.RetrieverResource
	// Prompt is the chunks in Dify's context template, as a simple prompt takes them.
	Prompt string
	// Text is the chunks alone, one after the other, as an advanced prompt's {{#context#}}
	// takes them.
	Text string
}

// RetrieveForChat retrieves the chunks answering query from the named knowledge bases (unknown
// names and datasets without documents are skipped), counts a hit on each, and returns them
// with the prompt context. Single dataset: its own retrieval model; several: semantic/keyword
// with top_k ChatTopK. An external knowledge base is searched by its external knowledge API with
// its own setting (see Retrieve); its records are cited like chunks, with data_source_type
// `external`, and a failing API fails the retrieval.
func (s *Service) RetrieveForChat(ctx context.Context, names []string, query string) (ChatContext, error) {
	var ds []store.Dataset
	for _, n := range names {
		d, err := s.st.DatasetByName(ctx, n)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return ChatContext{}, fmt.Errorf("knowledge: chat dataset %q: %w", n, err)
		}
		if d.IndexingTechnique != "" || d.Provider == store.DatasetProviderExternal {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 || strings.TrimSpace(query) == "" {
		return ChatContext{}, nil
	}
	rm := DefaultRetrievalModel()
	rm.TopK = ChatTopK
	if len(ds) == 1 {
		var err error
		if rm, err = parseRetrievalModel(ds[0].RetrievalModel, ChatTopK); err != nil {
			return ChatContext{}, err
		}
	}
	records, err := s.Retrieve(ctx, ds, query, rm)
	if err != nil {
		return ChatContext{}, err
	}
	if len(records) == 0 {
		return ChatContext{}, nil
	}
	segIDs := make([]string, 0, len(records))
	var text strings.Builder
	out := ChatContext{Resources: make([]store.RetrieverResource, len(records))}
	for i, r := range records {
		content := chunkText(r.Segment)
		if i > 0 {
			text.WriteString("\n")
		}
		text.WriteString(content)
		hits := r.Segment.HitCount
		if r.External == nil {
			// An external record has no chunk here to count a hit on.
			segIDs = append(segIDs, r.Segment.ID)
			hits++
		}
		out.Resources[i] = store.RetrieverResource{Position: i + 1, DatasetID: r.Dataset.ID, DatasetName: r.Dataset.Name,
			DocumentID: r.Document.ID, DocumentName: r.Document.Name, DataSourceType: r.Document.DataSourceType,
			SegmentID: r.Segment.ID, SegmentPosition: r.Segment.Position, IndexNodeHash: r.Segment.IndexNodeHash,
			Content: content, Score: r.Score, HitCount: hits, WordCount: r.Segment.WordCount}
	}
	if len(segIDs) > 0 {
		if err := s.st.IncrementHitCounts(ctx, segIDs); err != nil {
			return ChatContext{}, fmt.Errorf("knowledge: hit counts: %w", err)
		}
	}
	out.Text = text.String()
	out.Prompt = strings.Replace(contextPrompt, "{{#context#}}", out.Text, 1)
	return out, nil
}

// chunkText is a chunk as a prompt's context cites it: a Q&A chunk as its question and answer.
func chunkText(sg store.Segment) string {
	if sg.Answer != "" {
		return "question:" + sg.Content + " \nanswer:" + sg.Answer
	}
	return sg.Content
}
