package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tools"
)

// Knowledge retrieves chunks from knowledge bases; *knowledge.Service implements it.
type Knowledge interface {
	RetrieveForChat(ctx context.Context, names []string, query string) (knowledge.ChatContext, error)
}

// An agent's knowledge bases are tools, as in Dify: one per knowledge base, which the model calls
// with a query and which answers with the chunks found. The chunks it returned are the answer's
// retriever resources when the app cites its sources.

var datasetParameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string",` +
	`"description":"Query for the dataset to be used to retrieve the dataset."}},"required":["query"]}`)

// datasetTool searches one knowledge base.
type datasetTool struct {
	k    Knowledge
	kb   string
	name string
	// found receives the chunks of each search.
	found func([]store.RetrieverResource)
}

// datasetToolName is the model-facing name of the tool of knowledge base kb: "dataset_" and the
// name with every character outside [A-Za-z0-9_] replaced by "_", at most 64 characters.
func datasetToolName(kb string) string {
	var b strings.Builder
	b.WriteString("dataset_")
	for _, r := range kb {
		if r < 128 && (r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()[:min(b.Len(), 64)]
}

func (d *datasetTool) Identity() tools.Identity {
	return tools.Identity{Provider: "dataset", Name: d.name, Label: map[string]string{"en_US": d.name, "zh_Hans": d.name}}
}

func (d *datasetTool) Description() string {
	return "useful for when you want to answer queries about the " + d.kb
}

func (d *datasetTool) Parameters() json.RawMessage { return datasetParameters }

func (d *datasetTool) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var args struct {
		Query any `json:"query"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return tools.Result{Text: fmt.Sprintf("%v: the arguments must be a JSON object", tools.ErrBadArguments), IsError: true}, nil
	}
	q, ok := args.Query.(string)
	if !ok || strings.TrimSpace(q) == "" {
		return tools.Result{Text: fmt.Sprintf("%v: query is required", tools.ErrBadArguments), IsError: true}, nil
	}
	kctx, err := d.k.RetrieveForChat(ctx, []string{d.kb}, q)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, context.Cause(ctx)
		}
		// The model sees the failure (an external knowledge base's API down, say) and may go
		// on without it; its client-safe text, when it has one, keeps addresses out of the
		// conversation.
		msg, ok := safeerr.Message(err)
		if !ok {
			msg = err.Error()
		}
		return tools.Result{Text: msg, IsError: true}, nil
	}
	if d.found != nil {
		d.found(kctx.Resources)
	}
	return tools.Result{Text: kctx.Text}, nil
}
