package workflowtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/workflowtool"
)

// testApps are the apps of the server the tests find tools among.
var testApps = map[string]*apps.App{
	"Summarizer": {Name: "Summarizer", Mode: apps.ModeWorkflow, PublishedVersion: "v1", Description: "Summarizes a text.",
		UserInputForm: []apps.InputField{
			{Type: apps.InputParagraph, Variable: "text", Label: "Text", Required: true},
			{Type: apps.InputSelect, Variable: "style", Options: []string{"short", "long"}},
			{Type: apps.InputNumber, Variable: "words"},
			{Type: "file", Variable: "doc"},
		}},
	"Draft":   {Name: "Draft", Mode: apps.ModeWorkflow},
	"Chatbot": {Name: "Chatbot", Mode: apps.ModeChat},
}

func byName(_ context.Context, name string) (*apps.App, error) {
	if a, ok := testApps[name]; ok {
		return a, nil
	}
	return nil, apps.ErrNotFound
}

// TestFind: a workflow tool resolves to the published Workflow app named like its provider,
// else like the tool; its parameters are the app's form (file inputs left out).
func TestFind(t *testing.T) {
	s := workflowtool.New(workflowtool.Options{App: byName})
	ctx := context.Background()
	for _, ref := range []tools.Ref{
		{Type: tools.TypeWorkflow, ProviderID: "6145e242-98ad-4597-9b84-64cc95191212", ProviderName: "Summarizer", Name: "summarize"},
		{Type: tools.TypeWorkflow, ProviderName: "an old label", Name: "Summarizer"},
	} {
		tl, err := s.Find(ctx, ref)
		if err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
		var schema struct {
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		if err := json.Unmarshal(tl.Parameters(), &schema); err != nil || len(schema.Properties) != 3 || schema.Properties["words"]["type"] != "number" ||
			schema.Properties["doc"] != nil || len(schema.Required) != 1 || schema.Required[0] != "text" {
			t.Fatalf("parameters %s (%v)", tl.Parameters(), err)
		}
		if tl.Description() != "Summarizes a text." {
			t.Fatalf("description %q", tl.Description())
		}
	}
	for _, tc := range []struct {
		ref  tools.Ref
		want string
	}{
		{tools.Ref{Type: tools.TypeWorkflow, ProviderName: "Nowhere", Name: "nothing"}, `no Workflow app of this server is named "Nowhere" or "nothing"`},
		{tools.Ref{Type: tools.TypeWorkflow, ProviderName: "Draft"}, "is not published"},
		{tools.Ref{Type: tools.TypeWorkflow, ProviderName: "Chatbot"}, "is a chat app, not a Workflow app"},
		{tools.Ref{Type: tools.TypeAPI, ProviderName: "Summarizer"}, "not workflow tools"},
	} {
		if _, err := s.Find(ctx, tc.ref); !errors.Is(err, tools.ErrUnknownTool) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.ref, err, tc.want)
		}
	}
}

// TestInvoke: a call runs the app with the model's arguments over the configured values and
// answers with its outputs; a failed run is a failed answer; a workflow that calls itself as a
// tool stops at MaxDepth.
func TestInvoke(t *testing.T) {
	var got map[string]any
	var calls int
	var s *workflowtool.Set
	s = workflowtool.New(workflowtool.Options{App: byName,
		Run: func(ctx context.Context, app *apps.App, user string, inputs map[string]any) (workflowtool.Outcome, error) {
			calls++
			got = inputs
			switch inputs["text"] {
			case "fail":
				return workflowtool.Outcome{Status: "failed", Error: "node llm: the model call failed"}, nil
			case "recurse":
				// The workflow calls itself as a tool.
				tl, err := s.Find(ctx, tools.Ref{Type: tools.TypeWorkflow, ProviderName: "Summarizer"})
				if err != nil {
					return workflowtool.Outcome{}, err
				}
				res, err := tl.Invoke(ctx, json.RawMessage(`{"text": "recurse"}`))
				if err != nil {
					return workflowtool.Outcome{}, err
				}
				return workflowtool.Outcome{Status: "succeeded", Outputs: map[string]any{"inner": res.Text}}, nil
			}
			if user != workflowtool.User {
				t.Errorf("user %q", user)
			}
			return workflowtool.Outcome{Status: "succeeded", Outputs: map[string]any{"summary": "short " + inputs["text"].(string)}}, nil
		}})
	ctx := context.Background()
	tl, err := s.Find(ctx, tools.Ref{Type: tools.TypeWorkflow, ProviderName: "Summarizer", Configured: map[string]any{"style": "short", "words": ""}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Invoke(ctx, json.RawMessage(`{"text": "a story"}`))
	if err != nil || res.IsError || res.Text != `{"summary":"short a story"}` || string(res.Variables) != res.Text ||
		got["style"] != "short" || got["text"] != "a story" || got["words"] != nil {
		t.Fatalf("%+v %v, inputs %v", res, err, got)
	}
	if res, err := tl.Invoke(ctx, json.RawMessage(`{"text": "fail"}`)); err != nil || !res.IsError || !strings.Contains(res.Text, "the model call failed") {
		t.Fatalf("a failed run: %+v %v", res, err)
	}
	calls = 0
	res, err = tl.Invoke(ctx, json.RawMessage(`{"text": "recurse"}`))
	if err != nil || calls != workflowtool.MaxDepth || !strings.Contains(res.Text, "called as a tool more than 5 deep") {
		t.Fatalf("recursion: %d runs, %+v %v", calls, res, err)
	}
	if res, _ := tl.Invoke(ctx, json.RawMessage(`[1]`)); !res.IsError {
		t.Fatalf("arguments that are not an object: %+v", res)
	}
}
