package main

import (
	"context"
	"fmt"
	"strings"
)

// graphDSL is the Chatflow of the graph phase, in Dify's DSL as the console exports it: 20
// nodes (the iteration's two inner nodes included) of the kinds a Chatflow is made of, no code
// node: start; an LLM; an if-else on its text; a template; an assigner counting the turns; a
// variable aggregator; an iteration rendering each of three items with a template; a second
// LLM given the iteration's output; eight aggregators in a row; a template joining both
// branches; and the answer. Its two LLMs call the fake as the Chatbot does (the query carries
// blockMarker), so a run makes graphModelCalls model calls.
var graphDSL = func() string {
	var b strings.Builder
	b.WriteString(`version: 0.6.0
kind: app
app: {name: bench-graph, mode: advanced-chat, description: Load-test Chatflow of 20 nodes.}
dependencies: []
workflow:
  conversation_variables:
  - {id: 0b3c1a52-7f0e-4a8e-9a55-2b7c1d9e0a01, name: turns, selector: [conversation, turns], value_type: number, value: 0}
  - {id: 0b3c1a52-7f0e-4a8e-9a55-2b7c1d9e0a02, name: last, selector: [conversation, last], value_type: string, value: ''}
  - {id: 0b3c1a52-7f0e-4a8e-9a55-2b7c1d9e0a03, name: items, selector: [conversation, items], value_type: 'array[string]', value: [red, green, blue]}
  environment_variables: []
  features: {opening_statement: '', suggested_questions: [], retriever_resource: {enabled: false}}
  graph:
    edges:
`)
	chain := []string{"start", "llm1", "check", "tmpl", "count", "agg1", "loop", "llm2"}
	for i := 2; i <= 9; i++ {
		chain = append(chain, fmt.Sprintf("agg%d", i))
	}
	chain = append(chain, "join", "answer")
	for i := 1; i < len(chain); i++ {
		handle := "source"
		if chain[i-1] == "check" {
			handle = "'true'"
		}
		fmt.Fprintf(&b, "    - {id: e%d, source: %s, sourceHandle: %s, target: %s, type: custom}\n", i, chain[i-1], handle, chain[i])
	}
	b.WriteString(`    - {id: e0, source: loopstart, sourceHandle: source, target: item, type: custom, data: {isInIteration: true, iteration_id: loop}}
    nodes:
    - {id: start, type: custom, data: {type: start, title: Start, variables: []}}
    - id: llm1
      type: custom
      data:
        type: llm
        title: First
        model: {provider: openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
        prompt_template: [{role: user, text: '{{#sys.query#}}'}]
        context: {enabled: false, variable_selector: []}
        vision: {enabled: false}
    - id: check
      type: custom
      data:
        type: if-else
        title: Answered?
        cases: [{case_id: 'true', logical_operator: and, conditions: [{id: c1, variable_selector: [llm1, text], comparison_operator: not empty, value: '', varType: string}]}]
    - id: tmpl
      type: custom
      data:
        type: template-transform
        title: Quote
        template: '{{ text }} ({{ query }})'
        variables: [{variable: text, value_selector: [llm1, text]}, {variable: query, value_selector: [sys, query]}]
    - id: count
      type: custom
      data:
        type: assigner
        title: Count
        version: '2'
        items:
        - {variable_selector: [conversation, turns], input_type: constant, operation: +=, value: 1}
        - {variable_selector: [conversation, last], input_type: variable, operation: over-write, value: [llm1, text]}
    - {id: agg1, type: custom, data: {type: variable-aggregator, title: Aggregate 1, output_type: string, variables: [[tmpl, output]]}}
    - id: loop
      type: custom
      data: {type: iteration, title: Items, iterator_selector: [conversation, items], output_selector: [item, output], output_type: 'array[string]', is_parallel: false, error_handle_mode: terminated, start_node_id: loopstart}
    - {id: loopstart, type: custom-iteration-start, parentId: loop, data: {type: iteration-start, title: '', isInIteration: true}}
    - id: item
      type: custom
      parentId: loop
      data:
        type: template-transform
        title: Item
        isInIteration: true
        iteration_id: loop
        template: '{{ index + 1 }}. {{ item | upper }}'
        variables: [{variable: item, value_selector: [loop, item]}, {variable: index, value_selector: [loop, index]}]
    - id: llm2
      type: custom
      data:
        type: llm
        title: Second
        model: {provider: openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
        prompt_template: [{role: system, text: 'Items: {{#loop.output#}}'}, {role: user, text: '{{#sys.query#}}'}]
        context: {enabled: false, variable_selector: []}
        vision: {enabled: false}
`)
	prev := "[llm2, text]"
	for i := 2; i <= 9; i++ {
		fmt.Fprintf(&b, "    - {id: agg%d, type: custom, data: {type: variable-aggregator, title: Aggregate %d, output_type: string, variables: [%s]}}\n", i, i, prev)
		prev = fmt.Sprintf("[agg%d, output]", i)
	}
	b.WriteString(`    - id: join
      type: custom
      data:
        type: template-transform
        title: Join
        template: '{{ first }} | {{ second }} | {{ turns }}'
        variables: [{variable: first, value_selector: [agg1, output]}, {variable: second, value_selector: [agg9, output]}, {variable: turns, value_selector: [conversation, turns]}]
    - {id: answer, type: custom, data: {type: answer, title: Answer, answer: '{{#join.output#}}'}}
`)
	return b.String()
}()

// graphNodes and graphModelCalls describe graphDSL: its node count and the model calls a run
// makes.
const (
	graphNodes      = 20
	graphModelCalls = 2
)

// graphAnswer is the answer of a run of graphDSL in a new conversation to query.
func graphAnswer(query string) string {
	text := strings.Join(blockChunks, "")
	return text + " (" + query + ") | " + text + " | 1"
}

// graphPhaseResult is the graph phase: Chatflow runs and Chatbot requests, blocking, under the
// same load.
type graphPhaseResult struct {
	workers  int
	chat     *agentVariant
	graph    *agentVariant
	variants []*agentVariant
}

// graphPhase measures the server's CPU per blocking run of the 20-node Chatflow, next to its CPU
// per blocking Chatbot request (one model call), in interleaved windows: what the graph costs
// over its model calls.
func graphPhase(ctx context.Context, o options, p *parley, through *target) (graphPhaseResult, error) {
	res := graphPhaseResult{workers: o.workers}
	graph := &target{name: "parley graph", client: through.client, url: p.base + "/chat-messages", key: p.graphKey}
	no := false
	query := blockMarker + " Say hello."
	chatBodies := make([][]byte, o.workers)
	graphBodies := make([][]byte, o.workers)
	for w := range o.workers {
		chatBodies[w] = chatBody(query, fmt.Sprintf("graph-phase-chat-%d", w), "blocking", "", &no)
		graphBodies[w] = chatBody(query, fmt.Sprintf("graph-phase-graph-%d", w), "blocking", "", &no)
	}
	want := graphAnswer(query)
	var reply struct {
		Answer string `json:"answer"`
	}
	if err := blockingCall(ctx, graph, graphBodies[0], &reply); err != nil || reply.Answer != want {
		return res, fmt.Errorf("graph preflight: answer %q, want %q (%v)", reply.Answer, want, err)
	}
	wantChat := strings.Join(blockChunks, "")
	check := func(ctx context.Context, t *target, body []byte, want string) error {
		var r struct {
			Answer string `json:"answer"`
		}
		if err := blockingCall(ctx, t, body, &r); err != nil {
			return err
		}
		if r.Answer != want {
			return fmt.Errorf("answer %q, want %q", r.Answer, want)
		}
		return nil
	}
	res.chat = &agentVariant{name: "Chatbot, blocking, new conv. each", do: func(ctx context.Context, w int) (int, error) {
		return 1, check(ctx, through, chatBodies[w], wantChat)
	}}
	res.graph = &agentVariant{name: fmt.Sprintf("Chatflow of %d nodes, blocking", graphNodes), do: func(ctx context.Context, w int) (int, error) {
		return 1, check(ctx, graph, graphBodies[w], want)
	}}
	res.variants = []*agentVariant{res.chat, res.graph}
	return res, measureCPU(ctx, o, p, "graph", o.graphRounds, res.variants, nil)
}
