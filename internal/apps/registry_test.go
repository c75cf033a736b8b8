package apps

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
)

func TestRegistry(t *testing.T) {
	r, err := NewRegistry([]config.App{{Name: "c", Mode: "chat", MaxActiveRequests: 3}, {Name: "w", Mode: "workflow"}},
		map[string]string{"c": "id-c", "w": "id-w"}, func(n int) int { return n * 2 })
	if err != nil {
		t.Fatal(err)
	}
	c, ok := r.ByID("id-c")
	if !ok || !c.IsChat() || c.MaxActiveRequests != 6 || c.StreamingOnly() || c.Source != SourceConfig {
		t.Fatalf("chat app: %+v", c)
	}
	if w, _ := r.ByID("id-w"); w.IsChat() {
		t.Fatal("workflow app on chat routes")
	}
	if got, err := r.Get(t.Context(), "id-c"); err != nil || got != c {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if _, err := r.Get(t.Context(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(nope) = %v", err)
	}
	if _, err := NewRegistry([]config.App{{Name: "x"}}, nil, func(int) int { return 0 }); err == nil {
		t.Fatal("missing id accepted")
	}
}

// registries opens a store on e with the config apps of cfg synced, and returns two registries
// over it, as a server and a CLI process would have.
func registries(t *testing.T, e storetest.Engine, cfg []config.App) (server, cli *Registry, st *store.Store) {
	t.Helper()
	st = testdb.Open(t, e)
	specs := make([]store.AppSpec, 0, len(cfg))
	for _, a := range cfg {
		specs = append(specs, store.AppSpec{Name: a.Name, Mode: a.Mode})
	}
	synced, err := st.SyncApps(t.Context(), specs)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for n, a := range synced {
		ids[n] = a.ID
	}
	limit := func(n int) int { return max(n, 7) }
	server, err = NewRegistry(cfg, ids, limit)
	if err != nil {
		t.Fatal(err)
	}
	cli, err = NewRegistry(cfg, ids, limit)
	if err != nil {
		t.Fatal(err)
	}
	return server.WithStore(st), cli.WithStore(st), st
}

func sampleImport() *App {
	score := 0.5
	return &App{
		Name: "Support Bot", Mode: ModeChat, Description: "Helps.", Enabled: true, Source: SourceImport,
		Icon:       Icon{Type: "emoji", Icon: "🤖", Background: "#FFEAD5"},
		Model:      Model{Provider: "openai", Name: "gpt-4o-mini", Mode: "chat", Parameters: map[string]any{"temperature": 0.3, "max_tokens": 512, "stop": []any{"END"}}},
		PromptType: PromptSimple, PrePrompt: "You help {{company}}.",
		OpeningStatement: "Hi!", SuggestedQuestions: []string{"What?"}, SuggestedQuestionsAfterAnswer: true,
		Features: Features{RetrieverResource: Toggle{Enabled: true}, TextToSpeech: TextToSpeech{Voice: "alloy"},
			SensitiveWordAvoidance: SensitiveWordAvoidance{Type: "keywords", Config: map[string]any{"keywords": "a\nb", "n": 2}}},
		UserInputForm:  []InputField{{Type: InputText, Variable: "company", Label: "Company", Required: true, MaxLength: 64, Extra: map[string]any{"hide": false}}},
		KnowledgeBases: []string{"handbook"},
		Retrieval:      Retrieval{Mode: "multiple", TopK: 4, ScoreThreshold: &score},
		DSLVersion:     "0.6.0",
		Extra:          map[string]map[string]any{"model_config": {"external_data_tools": []any{map[string]any{"enabled": false, "n": 1}}}},
	}
}

func TestRegistryImported(t *testing.T) {
	t.Parallel()
	cfg := []config.App{{Name: "chatbot", Mode: "chat", Enabled: true, KnowledgeBases: []string{"handbook"}}}
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		server, cli, st := registries(t, e, cfg)

		want := sampleImport()
		created, err := cli.Create(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if created.ID == "" || created.Source != SourceImport || created.MaxActiveRequests != 7 {
			t.Fatalf("created %+v", created)
		}
		// The server, which never saw the import, serves it at once, field for field.
		got, err := server.Get(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(got.CreatedAt) > time.Minute || got.CreatedAt.After(time.Now()) {
			t.Fatalf("created at %v", got.CreatedAt)
		}
		want.ID, want.MaxActiveRequests, want.CreatedAt = created.ID, 7, got.CreatedAt
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("served app differs from the import:\n got %#v\nwant %#v", got, want)
		}
		if again, _ := server.Get(ctx, created.ID); again != got {
			t.Fatal("an unchanged app was decoded again")
		}
		if byName, err := server.ByName(ctx, "Support Bot"); err != nil || byName.ID != created.ID {
			t.Fatalf("ByName = %+v, %v", byName, err)
		}
		list, err := server.List(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "chatbot" || list[1].Name != "Support Bot" {
			t.Fatalf("List = %v, %v", list, err)
		}
		if n, err := server.UsingKnowledgeBase(ctx, "handbook"); err != nil || n != 2 {
			t.Fatalf("UsingKnowledgeBase = %d, %v", n, err)
		}

		// Names are unique across sources.
		for name, wantMsg := range map[string]string{"chatbot": "by an app of the config file", "Support Bot": "by an imported app"} {
			a := sampleImport()
			a.Name = name
			if _, err := cli.Create(ctx, a); !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), wantMsg) {
				t.Errorf("Create(%q) err = %v", name, err)
			}
		}
		for _, bad := range []string{"", " padded", "tab\there", strings.Repeat("x", 256)} {
			a := sampleImport()
			a.Name = bad
			if _, err := cli.Create(ctx, a); !errors.Is(err, ErrInvalid) {
				t.Errorf("Create(%q) err = %v, want ErrInvalid", bad, err)
			}
		}

		// Chat apps have no versions: publishing is accepted and changes nothing.
		p, err := cli.Publish(ctx, "Support Bot")
		if err != nil || p.Versioned || p.App.ID != created.ID {
			t.Fatalf("Publish(chat) = %+v, %v", p, err)
		}
		if _, err := cli.Publish(ctx, "chatbot"); !errors.Is(err, ErrConfigApp) {
			t.Fatalf("Publish(config app) err = %v", err)
		}
		if err := cli.Delete(ctx, "chatbot"); !errors.Is(err, ErrConfigApp) {
			t.Fatalf("Delete(config app) err = %v", err)
		}

		// Deleting from the CLI's registry: the server stops serving the app at once.
		if err := cli.Delete(ctx, "Support Bot"); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Get(ctx, created.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after delete err = %v", err)
		}
		if _, ok := server.ByID(created.ID); ok {
			t.Fatal("ByID still holds a deleted app")
		}
		if err := cli.Delete(ctx, "Support Bot"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Delete err = %v", err)
		}
		if list, _ := server.List(ctx); len(list) != 1 {
			t.Fatalf("List after delete = %v", list)
		}
		if n, _ := server.UsingKnowledgeBase(ctx, "handbook"); n != 1 {
			t.Fatalf("UsingKnowledgeBase after delete = %d", n)
		}

		// A versioned kind: each publish is a new version, and the server sees it.
		flow := &App{Name: "flow", Mode: ModeWorkflow, Enabled: true, Workflow: &Workflow{Graph: map[string]any{"nodes": []any{}}}}
		flow, err = cli.Create(ctx, flow)
		if err != nil {
			t.Fatal(err)
		}
		if served, _ := server.Get(ctx, flow.ID); served.PublishedVersion != "" {
			t.Fatalf("unpublished flow has version %q", served.PublishedVersion)
		}
		for n := int64(1); n <= 2; n++ {
			p, err := cli.Publish(ctx, "flow")
			if err != nil || !p.Versioned || p.Version != n || p.App.PublishedVersion != p.VersionID {
				t.Fatalf("Publish(flow) #%d = %+v, %v", n, p, err)
			}
			if served, _ := server.Get(ctx, flow.ID); served.PublishedVersion != p.VersionID {
				t.Fatalf("server serves version %q, want %q", served.PublishedVersion, p.VersionID)
			}
		}

		// A config app the file no longer declares keeps its name until deleted, and is not served.
		gone, _ := registriesWithout(t, st)
		if _, err := gone.Get(ctx, server.names["chatbot"].ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("orphan config app served: %v", err)
		}
		if _, err := gone.Create(ctx, &App{Name: "chatbot", Mode: ModeChat}); !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "config file declared before") {
			t.Fatalf("import over an orphan config app: %v", err)
		}
		if err := gone.Delete(ctx, "chatbot"); err != nil {
			t.Fatal(err)
		}
		if _, err := gone.Create(ctx, &App{Name: "chatbot", Mode: ModeChat}); err != nil {
			t.Fatal(err)
		}
	})
}

// registriesWithout is a registry over st whose config file declares no apps.
func registriesWithout(t *testing.T, st *store.Store) (*Registry, error) {
	t.Helper()
	r, err := NewRegistry(nil, nil, func(n int) int { return n })
	if err != nil {
		t.Fatal(err)
	}
	return r.WithStore(st), nil
}

func TestDefinitionNumbers(t *testing.T) {
	a := &App{Name: "n", Mode: ModeChat, Model: Model{Parameters: map[string]any{"max_tokens": 512, "temperature": 0.5, "big": 1 << 40}},
		Agent: &Agent{Tools: []Tool{{Parameters: map[string]any{"nested": []any{map[string]any{"k": 3}}}}}}}
	def, err := encodeDefinition(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeDefinition(def)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Model.Parameters, a.Model.Parameters) || !reflect.DeepEqual(got.Agent.Tools[0].Parameters, a.Agent.Tools[0].Parameters) {
		t.Fatalf("numbers changed: %#v %#v", got.Model.Parameters, got.Agent.Tools[0].Parameters)
	}
}

// BenchmarkRegistryGet is the per-request cost of finding the request's app: a config app (a
// map read), an imported one (a revision read from the store, then the cached app) and an Agent
// app (the same read: its bound agent is cached with it), on each engine.
func BenchmarkRegistryGet(b *testing.B) {
	for _, engine := range []string{storetest.SQLite, storetest.Postgres} {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			e := storetest.NewEngine(b, engine)
			st := testdb.Open(b, e)
			synced, err := st.SyncApps(ctx, []store.AppSpec{{Name: "c", Mode: "chat"}})
			if err != nil {
				b.Fatal(err)
			}
			r, err := NewRegistry([]config.App{{Name: "c", Mode: "chat", Enabled: true}}, map[string]string{"c": synced["c"].ID}, func(n int) int { return n })
			if err != nil {
				b.Fatal(err)
			}
			r.WithStore(st)
			imp, err := r.Create(ctx, sampleImport())
			if err != nil {
				b.Fatal(err)
			}
			// An Agent app with a published agent: once loaded, its agent costs nothing more.
			ag, err := r.Create(ctx, &App{Name: "a", Mode: ModeAgent, Enabled: true, Bound: &BoundAgent{Draft: &AgentConfig{Name: "a", SystemPrompt: "p"}}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Publish(ctx, "a"); err != nil {
				b.Fatal(err)
			}
			for _, app := range []struct{ name, id string }{{"config", synced["c"].ID}, {"imported", imp.ID}, {"agent", ag.ID}} {
				b.Run(app.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := r.Get(ctx, app.id); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
