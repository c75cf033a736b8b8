package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/moderation"
)

// This file is content moderation (an app's sensitive_word_avoidance) around the work of every
// app kind, as Dify applies it (docs/moderation.md):
//   - inputs: the query and the input values are checked before the work starts; a flagged
//     request is answered with the preset response and the model is never called. A failing
//     check fails the run (Dify does not answer a request it could not check).
//   - outputs: the answer is checked as it streams, once per Options.ModerationBuffer characters it
//     grew by (one check at a time, off the answer's path), and whole at the end. A flagged
//     answer is replaced: message_replace with the preset response, the stored answer is the
//     preset, and a model still generating is stopped. A failing check lets the answer through
//     (Dify logs it and carries on).

// DefaultModerationBuffer is how many characters an answer grows by between two checks while
// it streams, unless Options.ModerationBuffer says otherwise: Dify's MODERATION_BUFFER_SIZE
// default.
const DefaultModerationBuffer = 300

// finalCheckTimeout bounds the check of a complete answer, which also runs after a stop.
const finalCheckTimeout = 30 * time.Second

// ReasonOutputModeration is the reason a Chatflow's message_replace gives.
const ReasonOutputModeration = "output_moderation"

// Moderation gives the checker of an app's moderation: nil when it has none.
type Moderation interface {
	For(a *apps.App) (moderation.Checker, error)
}

// ErrOutputModerated is the cause of the context of a run whose answer output moderation
// replaced while the model was still generating: the work stops as on a stop request (it wraps
// ErrStopped; a Chatflow's run ends stopped), and the answer ends as answered, with the
// replacement.
var ErrOutputModerated = fmt.Errorf("stopped by output moderation: %w", ErrStopped)

// checker is the app's moderation checker, nil when it has none or the engine has no
// moderation.
func (e *Engine) checker(a *apps.App) (moderation.Checker, error) {
	if e.moderation == nil {
		return nil, nil
	}
	if a.Mode == apps.ModeAgent {
		// An Agent app has the features of its bound Agent's published version.
		p, err := a.PublishedAgent()
		if err != nil {
			return nil, nil
		}
		a = p
	}
	if !a.Features.SensitiveWordAvoidance.Enabled {
		return nil, nil
	}
	return e.moderation.For(a)
}

// moderated wraps work in the app's moderation; r gets the guard its Output consults.
func (e *Engine) moderated(c moderation.Checker, t Turn, r *Run, work Work) Work {
	if c == nil {
		return work
	}
	rule := c.Rule()
	if rule.Outputs.Enabled {
		r.guard = &guard{c: c, reason: r.Mode == apps.ModeAdvancedChat, log: e.log, buffer: e.modBuffer}
	}
	return WorkFunc(func(ctx context.Context, out *Output) (Outcome, error) {
		if rule.Inputs.Enabled {
			res, err := c.CheckInputs(ctx, t.Inputs, t.Query)
			if err != nil {
				return Outcome{Usage: models.EmptyUsage()}, err
			}
			if res.Flagged {
				return preset(out, r.Mode, res.Answer), nil
			}
		}
		g := r.guard
		if g == nil {
			return work.Run(ctx, out)
		}
		ctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		g.start(ctx, stop)
		o, err := work.Run(ctx, out)
		g.close()
		if errors.Is(context.Cause(ctx), ErrOutputModerated) {
			// Replaced while generating: the work stopped because of it, and the answer is
			// the replacement.
			g.flush(out)
			return o, nil
		}
		// The whole answer is checked when it is complete, and also when the user stopped it:
		// what is stored is never left unchecked because a client stopped in time.
		if stopped := errors.Is(context.Cause(ctx), ErrStopped); err == nil || stopped {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalCheckTimeout)
			g.final(fctx, out)
			cancel()
		}
		return o, err
	})
}

// preset answers a flagged request with text, as Dify's direct output does: Chatbot, Completion
// and Legacy Agent apps stream it one character per message event; Chatflow and Agent apps send
// it in one message. No model is called: the usage is empty.
func preset(out *Output, mode, text string) Outcome {
	if mode == apps.ModeAdvancedChat || mode == apps.ModeAgent {
		out.Emit(Event{Kind: EventMessage, Answer: text})
	} else {
		for i, c := range text {
			out.Emit(Event{Kind: EventMessage, Answer: text[i : i+utf8.RuneLen(c)]})
		}
	}
	return Outcome{Usage: models.EmptyUsage(), Uncited: mode == apps.ModeAgent, FinishReason: FinishContentFilter}
}

// FinishContentFilter is the finish reason of an answer moderation gave instead of the model's.
const FinishContentFilter = "content_filter"

// guard is the output moderation of one run. The Output asks it about each event (intercept);
// checks run on their own goroutine, one at a time, so the answer never waits for one.
type guard struct {
	c      moderation.Checker
	reason bool
	log    *slog.Logger
	// buffer is the growth, in characters, that starts a check.
	buffer int

	mu   sync.Mutex
	ctx  context.Context
	stop context.CancelCauseFunc
	// cancelChecks ends a check still running when the work is over.
	cancelChecks context.CancelFunc
	wg           sync.WaitGroup
	closed       bool
	running      bool
	// grown counts the characters of the answer since the last check started.
	grown int
	// verdict is the replacement once a check flagged the answer; replaced once it was sent.
	verdict  *string
	replaced bool
}

func (g *guard) start(ctx context.Context, stop context.CancelCauseFunc) {
	g.mu.Lock()
	g.ctx, g.cancelChecks = context.WithCancel(ctx)
	g.stop = stop
	g.mu.Unlock()
}

// intercept is called by Output.Emit before ev is recorded and sent; it reports whether ev
// must be dropped: an answer chunk that comes after the answer was replaced. A replacement
// decided since the last event is sent first.
func (g *guard) intercept(out *Output, ev Event) bool {
	if ev.Kind == EventMessageReplace {
		return false
	}
	chunk := ev.Kind == EventMessage || ev.Kind == EventAgentMessage
	g.mu.Lock()
	if g.verdict != nil {
		send := !g.replaced
		g.replaced = true
		text := *g.verdict
		g.mu.Unlock()
		if send {
			out.Emit(g.replace(text))
		}
		return chunk
	}
	if !chunk || g.closed || g.ctx == nil {
		g.mu.Unlock()
		return false
	}
	g.grown += utf8.RuneCountInString(ev.Answer)
	if g.running || g.grown < g.buffer {
		g.mu.Unlock()
		return false
	}
	g.grown, g.running = 0, true
	ctx := g.ctx
	g.wg.Add(1)
	g.mu.Unlock()
	text := out.Answer() + ev.Answer
	go func() {
		defer g.wg.Done()
		res, err := g.c.CheckOutput(ctx, text)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.running = false
		if err != nil {
			if ctx.Err() == nil {
				g.log.Warn("output moderation failed; the answer goes on unchecked", "message_id", out.MessageID(), "error", err)
			}
			return
		}
		if res.Flagged && !g.closed && g.verdict == nil {
			g.verdict = &res.Answer
			g.stop(ErrOutputModerated)
		}
	}()
	return false
}

// close ends the checks: one still running is cancelled, and its verdict, if any, stands.
func (g *guard) close() {
	g.mu.Lock()
	g.closed = true
	if g.cancelChecks != nil {
		g.cancelChecks()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// flush sends a replacement that was decided but not sent yet.
func (g *guard) flush(out *Output) {
	g.mu.Lock()
	if g.verdict == nil || g.replaced {
		g.mu.Unlock()
		return
	}
	g.replaced = true
	text := *g.verdict
	g.mu.Unlock()
	out.Emit(g.replace(text))
}

// final checks the whole answer once the work is done, as Dify does when the message ends.
func (g *guard) final(ctx context.Context, out *Output) {
	g.mu.Lock()
	if g.verdict != nil {
		g.mu.Unlock()
		g.flush(out)
		return
	}
	g.mu.Unlock()
	res, err := g.c.CheckOutput(ctx, out.Answer())
	if err != nil {
		g.log.Warn("output moderation failed; the answer is kept unchecked", "message_id", out.MessageID(), "error", err)
		return
	}
	if res.Flagged {
		g.mu.Lock()
		g.verdict, g.replaced = &res.Answer, true
		g.mu.Unlock()
		out.Emit(g.replace(res.Answer))
	}
}

// replace is the message_replace event of text; a Chatflow's says why.
func (g *guard) replace(text string) Event {
	ev := Event{Kind: EventMessageReplace, Answer: text}
	if g.reason {
		ev.Data = map[string]any{"reason": ReasonOutputModeration}
	}
	return ev
}
