package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// agentMarker in the user's message selects the fake's scripted agent model.
const agentMarker = "[bench-agent]"

// agentDSL is the Legacy Agent app the benchmark imports: function calling with one built-in
// tool, on the model the other apps use.
const agentDSL = `app: {name: bench-agent, mode: agent-chat, description: Load-test agent.}
kind: app
version: 0.6.0
model_config:
  agent_mode:
    enabled: true
    strategy: function_call
    max_iteration: 5
    tools:
    - {enabled: true, provider_type: builtin, provider_id: maths, provider_name: maths, tool_name: eval_expression, tool_label: Evaluate Expression, tool_parameters: {}}
  model: {provider: openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You are a load-test agent.
  prompt_type: simple
  user_input_form: []
`

// agentExpression is what the fake agent model asks the tool to compute; agentAnswer is its
// answer once it read the tool's result, which must be agentResult.
const (
	agentExpression = "6*7"
	agentResult     = "42"
)

func agentAnswer(observation string) string { return "The result is " + observation + "." }

// agentSteps is how many steps a turn of the scripted agent takes: the tool call, then the answer.
const agentSteps = 2

// scriptAgent makes the fake an agent's model that decides from the conversation, as a real
// model does, so that it answers right whatever the interleaving of concurrent turns: a call of
// eval_expression while the last message is the user's, the answer once it is the tool's result.
func scriptAgent(fake *openaitest.Server, usage *providers.Usage) {
	fake.OnRequest(func(r *openaitest.Request) (openaitest.Reply, bool) {
		if !strings.Contains(r.LastUserMessage(), agentMarker) {
			return openaitest.Reply{}, false
		}
		if last := r.Messages[len(r.Messages)-1]; last.Role == providers.RoleTool {
			return openaitest.Reply{Text: agentAnswer(last.Content), Usage: usage}, true
		}
		if len(r.Tools) == 0 {
			return openaitest.Reply{Status: 400, ErrorMessage: "the bench agent was offered no tools"}, true
		}
		return openaitest.Reply{ToolCalls: []providers.ToolCall{{Name: r.Tools[0].Name,
			Arguments: `{"expression": "` + agentExpression + `"}`}}, Usage: usage}, true
	})
}

// agentTurn is one streamed agent answer as the client saw it.
type agentTurn struct {
	steps  int // distinct agent_thought ids
	answer string
	tools  []string // the tools the steps called
}

// streamAgent sends one streaming chat message to a Legacy Agent app and reads it to
// message_end.
func streamAgent(ctx context.Context, t *target, body []byte) (agentTurn, error) {
	var res agentTurn
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := t.post(ctx, t.url, body)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	lr := newLineReader(resp.Body)
	seen, called := map[string]bool{}, map[string]bool{}
	var answer strings.Builder
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("stream ended before message_end")
			}
			return res, err
		}
		data, ok := bytes.CutPrefix(line, dataPrefix)
		if !ok {
			continue
		}
		var ev struct {
			Event  string `json:"event"`
			ID     string `json:"id"`
			Answer string `json:"answer"`
			Tool   string `json:"tool"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return res, fmt.Errorf("bad event %q: %w", truncate(string(data), 200), err)
		}
		switch ev.Event {
		case "agent_thought":
			// A step is re-sent under its id as it fills in.
			if !seen[ev.ID] {
				seen[ev.ID] = true
				res.steps++
			}
			if ev.Tool != "" && !called[ev.ID] {
				called[ev.ID] = true
				res.tools = append(res.tools, ev.Tool)
			}
		case "agent_message":
			answer.WriteString(ev.Answer)
		case "message_end":
			res.answer = answer.String()
			return res, nil
		case "error":
			return res, fmt.Errorf("error event: %s", truncate(string(data), 300))
		}
	}
}

// checkAgentTurn says what is wrong with a turn of the scripted agent, or nil.
func checkAgentTurn(r agentTurn) error {
	if r.steps != agentSteps || len(r.tools) != 1 || r.tools[0] != "eval_expression" || r.answer != agentAnswer(agentResult) {
		return fmt.Errorf("agent turn: %d steps, tools %v, answer %q; want %d steps, eval_expression, %q",
			r.steps, r.tools, r.answer, agentSteps, agentAnswer(agentResult))
	}
	return nil
}

// agentVariant is one kind of load in the agent phase (and the graph and observe phases).
type agentVariant struct {
	name string
	// server is the server the load goes to, when it is not the phase's (the observe phase).
	server *parley
	do     func(ctx context.Context, worker int) (steps int, err error)
	// rounds are the measured windows; steps[i] the agent steps (or requests) of rounds[i].
	rounds []window
	steps  []int64
}

// agentPhaseResult is the agent phase: Chatbot streaming requests and Legacy Agent turns under the
// same load, interleaved.
type agentPhaseResult struct {
	workers  int
	chat     *agentVariant
	agent    *agentVariant
	variants []*agentVariant
}

// totals sums the measured rounds: completed requests, agent steps (one per Chatbot request),
// server and load-generator CPU, errors.
func (v *agentVariant) totals() (n int, steps int64, cpu, self time.Duration, errs int) {
	for i, w := range v.rounds {
		n += w.n
		steps += v.steps[i]
		cpu += w.serverCPU
		self += w.selfCPU
		errs += w.errs
	}
	return
}

// cpuPer is the server's CPU per completed request and per step, in µs (0 when there were none).
func (v *agentVariant) cpuPer() (perReq, perStep float64) {
	n, steps, cpu, _, _ := v.totals()
	if n > 0 {
		perReq = us(cpu) / float64(n)
	}
	if steps > 0 {
		perStep = us(cpu) / float64(steps)
	}
	return perReq, perStep
}

// agentPhase measures the server's CPU per Legacy Agent turn and per agent step: windows of
// workers sending streamed agent turns back to back (each a tool step and an answer step), and,
// interleaved with them under the same load, streamed Chatbot requests with a zero-delay answer,
// whose CPU per request is the reference the agent's is compared to.
func agentPhase(ctx context.Context, o options, p *parley, through *target) (agentPhaseResult, error) {
	res := agentPhaseResult{workers: o.workers}
	agent := &target{name: "parley agent", client: through.client, url: p.base + "/chat-messages", key: p.agentKey}
	no := false
	chatBodies := make([][]byte, o.workers)
	agentBodies := make([][]byte, o.workers)
	for w := range o.workers {
		chatBodies[w] = chatBody(blockMarker+" Say hello.", fmt.Sprintf("agent-phase-chat-%d", w), "streaming", "", &no)
		agentBodies[w] = chatBody(agentMarker+" What is six times seven?", fmt.Sprintf("agent-phase-agent-%d", w), "streaming", "", &no)
	}
	turn, err := streamAgent(ctx, agent, agentBodies[0])
	if err == nil {
		err = checkAgentTurn(turn)
	}
	if err != nil {
		return res, fmt.Errorf("agent preflight: %w", err)
	}
	wantChat := strings.Join(blockChunks, "")
	res.chat = &agentVariant{name: "Chatbot, streaming, new conv. each", do: func(ctx context.Context, w int) (int, error) {
		r, err := streamParley(ctx, through, chatBodies[w], true, nil)
		if err == nil && r.answer != wantChat {
			err = fmt.Errorf("chat answer %q, want %q", r.answer, wantChat)
		}
		return 1, err
	}}
	res.agent = &agentVariant{name: "Legacy Agent, streaming, new conv. each", do: func(ctx context.Context, w int) (int, error) {
		r, err := streamAgent(ctx, agent, agentBodies[w])
		if err == nil {
			err = checkAgentTurn(r)
		}
		return r.steps, err
	}}
	res.variants = []*agentVariant{res.chat, res.agent}
	return res, measureCPU(ctx, o, p, "agent", o.agentRounds, res.variants, nil)
}

// measureCPU runs interleaved windows of the variants (a warm-up, then rounds measured ones),
// each with the phase's workers sending back to back, and records each window's requests, steps,
// latencies and the server's CPU (p's, or the variant's own server's) over it and its settling.
// measured, when not nil, is called once the warm-up is over.
func measureCPU(ctx context.Context, o options, p *parley, phase string, rounds int, variants []*agentVariant, measured func()) error {
	warm := min(o.duration, time.Second)
	for round := 0; round <= rounds; round++ {
		if round == 1 && measured != nil {
			measured()
		}
		for _, v := range variants {
			server := p
			if v.server != nil {
				server = v.server
			}
			d := o.duration
			if round == 0 {
				d = warm
			}
			var steps atomic.Int64
			server.settle(ctx)
			cpu0, _ := procCPU(server.pid)
			self0 := selfCPU()
			win := blockingWindow(ctx, o.workers, d, func(ctx context.Context, w int) error {
				n, err := v.do(ctx, w)
				if err == nil {
					steps.Add(int64(n))
				}
				return err
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !server.alive() {
				return fmt.Errorf("parley exited during the %s phase; log:\n%s", phase, server.logTail())
			}
			win.selfCPU = selfCPU() - self0
			server.settle(ctx)
			cpu1, _ := procCPU(server.pid)
			win.serverCPU = cpu1 - cpu0
			label := fmt.Sprintf("round %d/%d", round, rounds)
			if round == 0 {
				label = "warm-up"
			}
			perStep := 0.0
			if n := steps.Load(); n > 0 {
				perStep = us(win.serverCPU) / float64(n)
			}
			logf("%s %s %-40s %6.0f req/s  p50 %s p99 %s  %.0f µs server CPU/step  errors %d", phase, label, v.name, win.rate(),
				fmtUS(win.p50), fmtUS(win.p99), perStep, win.errs)
			if win.firstErr != nil {
				logf("  error: %v", win.firstErr)
			}
			if round > 0 {
				v.rounds = append(v.rounds, win)
				v.steps = append(v.steps, steps.Load())
			}
		}
	}
	return nil
}
