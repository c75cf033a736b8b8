package apps

import (
	"context"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/store"
)

// agentApp is the imported Agent app called name.
func (r *Registry) agentApp(ctx context.Context, name string) (*App, error) {
	if _, ok := r.names[name]; ok {
		return nil, fmt.Errorf("%q: %w; only imported Agent apps have an Agent", name, ErrConfigApp)
	}
	a, err := r.ByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if a.Mode != ModeAgent {
		return nil, fmt.Errorf("%w: %q is a %s app, not an Agent app", ErrInvalid, name, a.Mode)
	}
	return a, nil
}

// agentErr translates the store's answer about an app's agent.
func agentErr(name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("app %q: %w", name, ErrNoBoundAgent)
	}
	return fmt.Errorf("apps: %w", err)
}

// publishAgent publishes the draft of the Agent bound to an Agent app as its next version,
// which the API runs from then on.
func (r *Registry) publishAgent(ctx context.Context, a *App) (Published, error) {
	v, err := r.st.PublishAgent(ctx, a.ID)
	if err != nil {
		return Published{}, agentErr(a.Name, err)
	}
	if a, err = r.Get(ctx, a.ID); err != nil {
		return Published{}, err
	}
	return Published{App: a, Versioned: true, VersionID: v.ID, Version: v.Version}, nil
}

// SaveAgentDraft replaces the draft of the Agent bound to the Agent app called name; what the
// API runs changes only when the draft is published.
func (r *Registry) SaveAgentDraft(ctx context.Context, name string, c *AgentConfig) error {
	a, err := r.agentApp(ctx, name)
	if err != nil {
		return err
	}
	draft, err := EncodeAgentConfig(c)
	if err != nil {
		return err
	}
	if err := r.st.SaveAgentDraft(ctx, a.ID, agentName(c, a.Name), draft); err != nil {
		return agentErr(name, err)
	}
	return nil
}

// ArchiveAgent archives the Agent bound to the Agent app called name: the app then has no bound
// agent, and its messages are refused until another is imported.
func (r *Registry) ArchiveAgent(ctx context.Context, name string) error {
	a, err := r.agentApp(ctx, name)
	if err != nil {
		return err
	}
	if err := r.st.ArchiveAgent(ctx, a.ID); err != nil {
		return agentErr(name, err)
	}
	return nil
}
