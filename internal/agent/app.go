package agent

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
)

// AgentApp returns the run.Runner of Agent apps (mode agent). An Agent app runs the published
// version of the Agent it is bound to, with the same rounds, steps and tools as a Legacy Agent
// (docs/agents.md), and ends its stream as Dify ends an Agent app's: after the agent_message
// chunks and agent_thought steps, one message event carrying the complete answer (it replaces
// what was streamed, it is not appended), then message_end with usage and no
// retriever_resources. Files sent with a message are stored with it but not given to the model.
func (r *Runner) AgentApp() run.Runner { return appRunner{r} }

type appRunner struct{ r *Runner }

// Prepare implements run.Runner.
func (a appRunner) Prepare(ctx context.Context, t run.Turn) (run.Job, error) {
	// The server already passes the published app; deriving it again is cheap and keeps the
	// runner right for any caller.
	app, err := apps.AgentRun(t.App, t.Query)
	if err != nil {
		return run.Job{}, err
	}
	t.App = app
	job, err := a.r.Prepare(ctx, t)
	if err != nil {
		return run.Job{}, err
	}
	w, ok := job.Work.(*work)
	if !ok {
		return run.Job{}, fmt.Errorf("agent: unexpected work %T", job.Work)
	}
	w.base.Images = nil
	w.cite = false
	job.Work = run.WorkFunc(func(ctx context.Context, out *run.Output) (run.Outcome, error) {
		o, err := w.Run(ctx, out)
		o.Resources, o.Uncited = nil, true
		if err == nil && ctx.Err() == nil {
			out.Deliver(run.Event{Kind: run.EventMessage, Answer: out.Answer()})
		}
		return o, err
	})
	return job, nil
}
