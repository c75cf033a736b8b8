package workflow

import (
	"sort"
	"strings"
	"sync"

	"github.com/parleyhq/parley/internal/workflow/template"
)

// The answer coordinator streams the text of answer nodes as message events (and of a Workflow
// app's end nodes, whose outputs are a template of their values one per line, as text_chunk
// events) the way Dify's
// response coordinator does: each answer template is a sequence of literal text and variable
// references; a session walks its template in order, emitting literal text at once, a
// variable's value once its producer finished, and the chunks of a streaming output (an LLM's
// text) live as they arrive. Only one session is active at a time, so several answer nodes
// stream one after the other. A session opens once its answer node is reachable: every branch
// node it depends on has decided, and it was not skipped.

type session struct {
	node string
	// writers are the assigner nodes upstream of the answer: its conversation variables are
	// read once they ran, so an answer shows what they wrote.
	writers []string
	segs    []template.Part
	pos     int
	// spos is how many chunks of the current segment's stream were emitted.
	spos int
}

type stream struct {
	chunks []string
	closed bool
}

type coordinator struct {
	mu sync.Mutex
	// waiting are answer sessions not open yet, with the branch nodes each waits for.
	waiting []*pendingSession
	active  []*session
	streams map[[2]string]*stream
	// done holds the nodes that finished or were skipped; skipped those skipped.
	done, skipped map[string]bool
	final         bool
	pool          *Pool
	emit          func(text string, selector []string)
	render        func(v any) string
}

type pendingSession struct {
	s        *session
	deciders []string
}

func newCoordinator(g *Graph, root string, pool *Pool, emit func(text string, selector []string), render func(any) string) *coordinator {
	c := &coordinator{streams: map[[2]string]*stream{}, done: map[string]bool{}, skipped: map[string]bool{},
		pool: pool, emit: emit, render: render}
	for _, a := range g.answerPlan(root) {
		c.waiting = append(c.waiting, &pendingSession{deciders: a.deciders,
			s: &session{node: a.node, segs: a.segs, writers: a.writers}})
	}
	return c
}

// answerSession is what a run's answer session starts from, computed once per graph.
type answerSession struct {
	node              string
	segs              []template.Part
	deciders, writers []string
}

// answerPlan lists the answer nodes reachable from root in topological order with their
// templates, the branch nodes they wait for and the assigners upstream of them. A graph does not
// change once parsed, so the plan is computed once for each root (the start node, or each
// trigger of a graph that starts from triggers).
func (g *Graph) answerPlan(root string) []answerSession {
	g.planMu.Lock()
	defer g.planMu.Unlock()
	if plan, ok := g.plans[root]; ok {
		return plan
	}
	var plan []answerSession
	for _, id := range topoOrder(g, g.reachable(root)) {
		n := g.Nodes[id]
		var a answerSession
		switch n.Type {
		case TypeAnswer:
			a = answerSession{node: id, segs: template.Parse(str(n.Data["answer"]))}
		case TypeEnd:
			a = answerSession{node: id, segs: endTemplate(n)}
		default:
			continue
		}
		for _, anc := range g.ancestors(id) {
			if isDecider(g.Nodes[anc]) {
				a.deciders = append(a.deciders, anc)
			}
			if g.Nodes[anc].Type == typeAssigner {
				a.writers = append(a.writers, anc)
			}
		}
		plan = append(plan, a)
	}
	if g.plans == nil {
		g.plans = map[string][]answerSession{}
	}
	g.plans[root] = plan
	return plan
}

// endTemplate is what an end node streams, as Dify streams the outputs of a Workflow app: its
// outputs' values in order, a line break between two, so that an LLM's text that is an output
// streams as it is generated.
func endTemplate(n *Node) []template.Part {
	var segs []template.Part
	outs, _ := n.Data["outputs"].([]any)
	for i, o := range outs {
		if i > 0 {
			segs = append(segs, template.Part{Text: "\n"})
		}
		m, _ := o.(map[string]any)
		if sel := Selector(m["value_selector"]); len(sel) > 0 {
			segs = append(segs, template.Part{Text: strings.Join(sel, "."), Selector: sel})
		}
	}
	if len(segs) > 0 && segs[len(segs)-1].Selector == nil {
		segs = segs[:len(segs)-1]
	}
	return segs
}

// isDecider reports whether a node may leave some of its out-edges untaken.
func isDecider(n *Node) bool {
	if str(n.Data["error_strategy"]) == StrategyFailBranch {
		return true
	}
	for _, e := range n.out {
		if e.Handle != HandleSource && e.Handle != HandleSuccess {
			return true
		}
	}
	return false
}

// chunk records a chunk of a streaming output and emits what it can.
func (c *coordinator) chunk(node, name, text string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{node, name}
	st := c.streams[k]
	if st == nil {
		st = &stream{}
		c.streams[k] = st
	}
	st.chunks = append(st.chunks, text)
	c.advance()
}

// resolve records that nodes finished (or were skipped) and emits what it can.
func (c *coordinator) resolve(finished []string, skipped []string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range finished {
		c.done[id] = true
	}
	for _, id := range skipped {
		c.done[id] = true
		c.skipped[id] = true
	}
	for k, st := range c.streams {
		if c.done[k[0]] {
			st.closed = true
		}
	}
	c.open()
	c.advance()
}

// finish emits what is left once the run completed: references nothing will produce are
// dropped.
func (c *coordinator) finish() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.final = true
	for _, st := range c.streams {
		st.closed = true
	}
	c.open()
	c.advance()
}

// open moves the sessions that became reachable to the active queue, in graph order.
func (c *coordinator) open() {
	keep := c.waiting[:0]
	for _, ps := range c.waiting {
		if c.skipped[ps.s.node] {
			continue
		}
		ready := true
		for _, d := range ps.deciders {
			if !c.done[d] && !c.final {
				ready = false
				break
			}
		}
		if ready {
			c.active = append(c.active, ps.s)
		} else {
			keep = append(keep, ps)
		}
	}
	c.waiting = keep
}

// advance emits the active sessions' segments until one must wait.
func (c *coordinator) advance() {
	for len(c.active) > 0 {
		s := c.active[0]
		if c.skipped[s.node] {
			c.active = c.active[1:]
			continue
		}
		for s.pos < len(s.segs) {
			seg := s.segs[s.pos]
			if seg.Selector == nil {
				c.emit(seg.Text, []string{s.node, "answer"})
				s.pos++
				continue
			}
			sel := seg.Selector
			if len(sel) == 2 {
				if st := c.streams[[2]string{sel[0], sel[1]}]; st != nil {
					for ; s.spos < len(st.chunks); s.spos++ {
						c.emit(st.chunks[s.spos], sel)
					}
					if !st.closed {
						return
					}
					s.pos, s.spos = s.pos+1, 0
					continue
				}
			}
			if !c.available(s, sel[0]) {
				return
			}
			if t := template.RenderPart(seg, c.pool.Get, c.render); t != "" {
				c.emit(t, sel)
			}
			s.pos++
		}
		c.active = c.active[1:]
	}
}

// available reports whether the values of a producer can be read: system and environment
// variables always, conversation variables once the session's writers ran, nodes once
// resolved.
func (c *coordinator) available(s *session, node string) bool {
	switch node {
	case ScopeSys, ScopeEnv:
		return true
	case ScopeConversation:
		for _, w := range s.writers {
			if !c.done[w] && !c.final {
				return false
			}
		}
		return true
	}
	return c.final || c.done[node]
}

// topoOrder orders the given nodes so that every node comes after its predecessors (file order
// among equals).
func topoOrder(g *Graph, ids []string) []string {
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	indeg := make(map[string]int, len(ids))
	for _, id := range ids {
		for _, e := range g.Nodes[id].in {
			if _, ok := pos[e.Source]; ok {
				indeg[id]++
			}
		}
	}
	var queue, out []string
	for _, id := range ids {
		if indeg[id] == 0 {
			queue = append(queue, id)
		}
	}
	for len(queue) > 0 {
		sort.SliceStable(queue, func(i, j int) bool { return pos[queue[i]] < pos[queue[j]] })
		id := queue[0]
		queue = queue[1:]
		out = append(out, id)
		for _, e := range g.Nodes[id].out {
			if _, ok := pos[e.Target]; !ok {
				continue
			}
			if indeg[e.Target]--; indeg[e.Target] == 0 {
				queue = append(queue, e.Target)
			}
		}
	}
	if len(out) < len(ids) { // a cycle: keep file order for the rest
		seen := make(map[string]bool, len(out))
		for _, id := range out {
			seen[id] = true
		}
		for _, id := range ids {
			if !seen[id] {
				out = append(out, id)
			}
		}
	}
	return out
}
