package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tools"
)

// ErrMaxRounds is the failure of an agent whose model still calls a tool in its last round,
// where it was offered none.
var ErrMaxRounds = errors.New("the model called a tool in the last allowed round")

// Agent is a model that answers in rounds with tools: each round calls the model; the tools it
// calls run, and their results go back to it, until it answers without calling one. The
// strategy is function calling (the model calls tools natively) or ReAct (a text protocol, for
// models that cannot). Both Legacy Agent apps and workflow agent nodes run it; what each
// records and streams of a round is its Observer's.
type Agent struct {
	Model Model
	// Params are the upstream parameters (Params).
	Params map[string]any
	Offers []Offer
	// Rounds is how many times the model may be called (at least once); the last round offers
	// no tools, so that the model answers.
	Rounds int
	// ReAct runs the ReAct protocol; Text then lays each round out as one text, for a
	// completion model (ReActText).
	ReAct, Text bool
	// User identifies the end user to the provider, when set.
	User string
	// ToolTimeout bounds one tool call (DefaultToolTimeout when not positive).
	ToolTimeout time.Duration
}

// Round is one round of an agent, as its Observer sees it fill in.
type Round struct {
	// N counts rounds from 1; Last is the round that offers no tools.
	N    int
	Last bool
	// Result is the round's model call: its text, tokens, usage and latency.
	Result Result
	// Thought is what the model said before acting: a function-calling round's whole text; the
	// part of a ReAct round's text that streamed, without the protocol's labels.
	Thought string
	// Calls are the tools the model called, each with an id.
	Calls []providers.ToolCall
	// Final says a ReAct model wrote its final answer, Answer. Plain says it did not follow the
	// protocol: its text is the answer.
	Final, Plain bool
	Answer       string
	// Action is a ReAct action as the model wrote it.
	Action string
	// Results are what the model reads of each call, once the tools ran.
	Results []string
	// parsed is a ReAct round's thought as read from its whole text, for the scratchpad.
	parsed string
}

// Observer records and streams an agent's rounds as they happen. Run calls it in this order
// for each round: Begin; Started once the answer begins and Delta as it streams; Said; and,
// when the model called tools, Calling and Called for each call, then Done.
type Observer interface {
	// Begin is called before the round's model call.
	Begin(ctx context.Context, r *Round) error
	// Started is called when the model's answer begins (never when the call fails before).
	Started(ctx context.Context, r *Round) error
	// Delta is text to show as it streams: a function-calling round's text; a ReAct round's
	// thought, its labels and action held back.
	Delta(r *Round, text string)
	// Said is called when the model call ended, err its failure. Its error ends the agent.
	Said(ctx context.Context, r *Round, err error) error
	// Calling is called before r.Calls[i] runs.
	Calling(ctx context.Context, r *Round, i int)
	// Called is given what the model reads of r.Calls[i] and the files the tool returned; it
	// returns what the model reads in the end.
	Called(ctx context.Context, r *Round, i int, result string, files []tools.File) string
	// Done is called when every call of the round returned (r.Results). Its error ends the
	// agent.
	Done(ctx context.Context, r *Round) error
}

// Run runs the agent on prompt until the model answers, and returns the usage of all its model
// calls, also when it fails. A run whose context ends stops after the model call or tool call
// under way, with the context's cause; one whose model calls a tool in the last round fails with
// ErrMaxRounds.
func (a *Agent) Run(ctx context.Context, prompt []providers.Message, obs Observer) (models.Usage, error) {
	var (
		total      models.Usage
		scratchpad strings.Builder
	)
	params := a.Params
	if a.ReAct {
		params = maps.Clone(params)
		if params == nil {
			params = make(map[string]any, 1)
		}
		params["stop"] = ReActStop(params["stop"])
	}
	defs := Definitions(a.Offers)
	rounds := max(a.Rounds, 1)
	for n := 1; ; n++ {
		r := &Round{N: n, Last: n == rounds}
		if err := obs.Begin(ctx, r); err != nil {
			return total, err
		}
		offered := defs
		if r.Last {
			offered = nil
		}
		var err error
		if a.ReAct {
			err = a.reactRound(ctx, r, prompt, scratchpad.String(), offered, params, obs)
		} else {
			err = a.round(ctx, r, prompt, offered, params, obs)
		}
		total = models.AddUsage(total, r.Result.Usage)
		if serr := obs.Said(ctx, r, err); err == nil {
			err = serr
		}
		switch {
		case err != nil:
			return total, err
		case len(r.Calls) == 0:
			return total, nil
		case r.Last:
			return total, ErrMaxRounds
		}
		r.Results = make([]string, len(r.Calls))
		for i, c := range r.Calls {
			obs.Calling(ctx, r, i)
			result, files := Call(ctx, a.Offers, c, a.ToolTimeout)
			if ctx.Err() != nil {
				return total, context.Cause(ctx)
			}
			r.Results[i] = obs.Called(ctx, r, i, result, files)
		}
		if err := obs.Done(ctx, r); err != nil {
			return total, err
		}
		if a.ReAct {
			fmt.Fprintf(&scratchpad, "Thought: %s\nAction: ```%s```\nObservation: %s\n", r.parsed, r.Action, r.Results[0])
			continue
		}
		prompt = append(prompt, providers.Message{Role: providers.RoleAssistant, Content: r.Thought, ToolCalls: r.Calls})
		for i, c := range r.Calls {
			prompt = append(prompt, providers.Message{Role: providers.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: r.Results[i]})
		}
	}
}

// round is a function-calling round: the model is offered the tools natively.
func (a *Agent) round(ctx context.Context, r *Round, prompt []providers.Message, offered []providers.Tool,
	params map[string]any, obs Observer) error {
	res, err := a.Model.Stream(ctx, Request{Messages: prompt, Params: params, Tools: offered, User: a.User,
		OnStart: func() error { return obs.Started(ctx, r) }, OnDelta: func(d string) { obs.Delta(r, d) }})
	r.Result, r.Thought, r.Calls = res, res.Text, res.ToolCalls
	for i := range r.Calls {
		if r.Calls[i].ID == "" {
			r.Calls[i].ID = "call_" + uuid.NewString()
		}
	}
	return err
}

// reactRound is a ReAct round: the tools offered are described in the prompt, and the model's
// text is read for its action. The thought streams as it comes, the action held back.
func (a *Agent) reactRound(ctx context.Context, r *Round, base []providers.Message, scratchpad string,
	offered []providers.Tool, params map[string]any, obs Observer) error {
	build := ReActPrompt
	if a.Text {
		build = ReActText
	}
	var full strings.Builder
	sent := ""
	show := func(final bool) {
		v := visible(full.String(), final)
		if len(v) > len(sent) && strings.HasPrefix(v, sent) {
			obs.Delta(r, v[len(sent):])
			sent = v
		}
	}
	res, err := a.Model.Stream(ctx, Request{Messages: build(base, scratchpad, offered), Params: params, User: a.User,
		OnStart: func() error { return obs.Started(ctx, r) },
		OnDelta: func(d string) {
			full.WriteString(d)
			show(false)
		}})
	if err == nil {
		show(true)
	}
	r.Result, r.Thought = res, sent
	if err != nil {
		return err
	}
	thought, act := parseReAct(res.Text)
	switch {
	case act == nil:
		r.Plain, r.Answer = true, res.Text
	case strings.EqualFold(act.name, finalAnswer):
		r.Final, r.Answer = true, act.inputText()
	default:
		r.Action = act.raw
		r.Calls = []providers.ToolCall{{ID: "react_" + uuid.NewString(), Name: act.name, Arguments: act.arguments()}}
	}
	r.parsed = thought
	return nil
}
