package apps

import (
	"errors"
	"testing"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestAgentAppRegistry: an imported Agent app's agent starts as a draft; a server sees each
// publish, draft edit and archive made by another process on its next lookup, and runs the
// published configuration, never the draft.
func TestAgentAppRegistry(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		server, cli, _ := registries(t, e, nil)
		v1 := &AgentConfig{Name: "Desk", SystemPrompt: "one", Model: Model{Provider: "openai", Name: "gpt-4o"}}
		if _, err := cli.Create(ctx, &App{Name: "Agent", Mode: ModeAgent, Enabled: true}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("an Agent app without its agent: %v", err)
		}
		created, err := cli.Create(ctx, &App{Name: "Agent", Mode: ModeAgent, Enabled: true, Bound: &BoundAgent{Draft: v1}})
		if err != nil {
			t.Fatal(err)
		}
		get := func() *App {
			t.Helper()
			a, err := server.Get(ctx, created.ID)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		if a := get(); a.Bound == nil || a.Bound.Draft.SystemPrompt != "one" || a.Bound.Published != nil {
			t.Fatalf("imported: %+v", a.Bound)
		}
		if _, err := AgentRun(get(), "hi"); !errors.Is(err, ErrAgentNotPublished) {
			t.Fatalf("run of a draft: %v", err)
		}
		if _, err := AgentRun(get(), " \n"); !errors.Is(err, ErrQueryRequired) {
			t.Fatalf("blank query: %v", err)
		}
		p, err := cli.Publish(ctx, "Agent")
		if err != nil || !p.Versioned || p.Version != 1 {
			t.Fatalf("publish: %+v, %v", p, err)
		}
		v2 := *v1
		v2.SystemPrompt = "two"
		if err := cli.SaveAgentDraft(ctx, "Agent", &v2); err != nil {
			t.Fatal(err)
		}
		r, err := AgentRun(get(), "hi")
		if err != nil || r.PrePrompt != "one" || r.Model.Name != "gpt-4o" || r.Agent == nil || get().Bound.Draft.SystemPrompt != "two" {
			t.Fatalf("run with a newer draft: %+v, %v", r, err)
		}
		if p, err = cli.Publish(ctx, "Agent"); err != nil || p.Version != 2 {
			t.Fatalf("second publish: %+v, %v", p, err)
		}
		if r, _ = AgentRun(get(), "hi"); r.PrePrompt != "two" || get().Bound.Version != 2 {
			t.Fatalf("after publishing the draft: %q", r.PrePrompt)
		}
		if err := cli.ArchiveAgent(ctx, "Agent"); err != nil {
			t.Fatal(err)
		}
		if _, err := AgentRun(get(), "hi"); !errors.Is(err, ErrNoBoundAgent) {
			t.Fatalf("archived: %v", err)
		}
		if err := cli.ArchiveAgent(ctx, "Agent"); !errors.Is(err, ErrNoBoundAgent) {
			t.Fatalf("archive twice: %v", err)
		}
		if _, err := cli.Publish(ctx, "Agent"); !errors.Is(err, ErrNoBoundAgent) {
			t.Fatalf("publish without an agent: %v", err)
		}
	})
}
