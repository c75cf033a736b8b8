// Package workflow runs Dify workflow graphs (Chatflow apps, mode advanced-chat): the graph as
// a DSL file declares it, the variable pool nodes read and write, and the scheduler that runs
// the nodes with Dify's edge semantics (taken and skipped edges, branch handles, joins,
// parallel branches), retries and error strategies. Node types live in nodes/, one file each;
// docs/workflow.md describes the rules.
package workflow

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Node types the engine itself knows about.
const (
	TypeStart  = "start"
	TypeAnswer = "answer"
	TypeEnd    = "end"
	// TypeIteration and TypeLoop are the container nodes, which run a body of nodes.
	TypeIteration = "iteration"
	TypeLoop      = "loop"
	// typeIterationStart and typeLoopStart are the entries of a container's body.
	typeIterationStart = "iteration-start"
	typeLoopStart      = "loop-start"
	// typeAssigner writes conversation variables.
	typeAssigner = "assigner"
	// typeNote is the canvas type of an editor's sticky note, which is not part of the graph.
	typeNote = "custom-note"
)

// Trigger node types: the entries of a Workflow app that starts itself instead of from the
// user-input start node (Dify's core/trigger/constants.py). A graph has either a start node or
// trigger nodes; each run starts from one of its triggers (Spec.Root).
const (
	TypeTriggerWebhook  = "trigger-webhook"
	TypeTriggerSchedule = "trigger-schedule"
	TypeTriggerPlugin   = "trigger-plugin"
)

// IsTrigger reports whether nodes of the type are trigger nodes.
func IsTrigger(nodeType string) bool {
	return nodeType == TypeTriggerWebhook || nodeType == TypeTriggerSchedule || nodeType == TypeTriggerPlugin
}

// Handles of out-edges.
const (
	// HandleSource is the handle of an ordinary node's out-edges.
	HandleSource = "source"
	// HandleSuccess is another name for HandleSource that some engines write.
	HandleSuccess = "success-branch"
	// HandleFail is the handle a node with error strategy fail-branch takes when it fails.
	HandleFail = "fail-branch"
)

// Node is one node of a graph: its id and the `data` mapping of the DSL, whose `type` selects
// the implementation.
type Node struct {
	ID    string
	Type  string
	Title string
	// Data is the node's data mapping as the DSL has it.
	Data map[string]any
	// ParentID is the iteration or loop container the node belongs to ("" at the top level).
	ParentID string

	// in and out are the node's edges, in the order of the file.
	in, out []*Edge
}

// Edge is one edge of a graph. Only its ends and its source handle matter to the engine.
type Edge struct {
	ID     string
	Source string
	Target string
	// Handle is the source handle: "source" for ordinary nodes, a case id, class id or
	// "fail-branch" for branches.
	Handle string
	index  int
}

// Graph is a parsed workflow graph.
type Graph struct {
	// Nodes holds every node by id, container children included.
	Nodes map[string]*Node
	// Order lists the node ids in the order of the file.
	Order []string
	Edges []*Edge
	// Root is the id of the start node ("" when the graph starts from triggers).
	Root string
	// Triggers are the ids of the top-level trigger nodes, in the order of the file: the roots
	// of a graph without a start node.
	Triggers []string

	// plans holds the answer plan of each root (answerPlan).
	planMu sync.Mutex
	plans  map[string][]answerSession
}

// Problem is one reason a graph cannot run; NodeID is empty for the graph as a whole.
type Problem struct {
	NodeID string
	Type   string
	Msg    string
}

func (p Problem) String() string {
	if p.NodeID == "" {
		return p.Msg
	}
	return fmt.Sprintf("node %s (%s): %s", p.NodeID, p.Type, p.Msg)
}

// ErrInvalidGraph wraps the problems of a graph that cannot run.
var ErrInvalidGraph = errors.New("invalid workflow graph")

// Parse reads the graph mapping of a DSL file ({nodes: [...], edges: [...]}). Editor notes are
// left out. It fails only on a graph whose shape makes no sense (no nodes, duplicate ids, an
// edge to an unknown node); Validate checks the rest.
func Parse(raw map[string]any) (*Graph, error) {
	g := &Graph{Nodes: map[string]*Node{}}
	nodes, _ := raw["nodes"].([]any)
	var errs []string
	for i, item := range nodes {
		m, _ := item.(map[string]any)
		if m == nil {
			errs = append(errs, fmt.Sprintf("nodes[%d]: not a mapping", i))
			continue
		}
		if str(m["type"]) == typeNote {
			continue
		}
		data, _ := m["data"].(map[string]any)
		if data == nil {
			data = map[string]any{}
		}
		n := &Node{ID: str(m["id"]), Type: str(data["type"]), Title: str(data["title"]), Data: data,
			ParentID: str(m["parentId"])}
		if n.ParentID == "" {
			n.ParentID = firstNonEmpty(str(data["iteration_id"]), str(data["loop_id"]))
			if b, _ := data["isInIteration"].(bool); !b {
				if b, _ := data["isInLoop"].(bool); !b {
					n.ParentID = ""
				}
			}
		}
		if n.ID == "" {
			errs = append(errs, fmt.Sprintf("nodes[%d]: no id", i))
			continue
		}
		if _, dup := g.Nodes[n.ID]; dup {
			errs = append(errs, fmt.Sprintf("nodes[%d]: id %q is used twice", i, n.ID))
			continue
		}
		g.Nodes[n.ID] = n
		g.Order = append(g.Order, n.ID)
	}
	edges, _ := raw["edges"].([]any)
	for i, item := range edges {
		m, _ := item.(map[string]any)
		if m == nil {
			errs = append(errs, fmt.Sprintf("edges[%d]: not a mapping", i))
			continue
		}
		e := &Edge{ID: str(m["id"]), Source: str(m["source"]), Target: str(m["target"]), Handle: str(m["sourceHandle"]), index: len(g.Edges)}
		if e.Handle == "" {
			e.Handle = HandleSource
		}
		src, ok1 := g.Nodes[e.Source]
		dst, ok2 := g.Nodes[e.Target]
		if !ok1 || !ok2 {
			errs = append(errs, fmt.Sprintf("edges[%d]: %s → %s names a node the graph does not have", i, e.Source, e.Target))
			continue
		}
		g.Edges = append(g.Edges, e)
		src.out = append(src.out, e)
		dst.in = append(dst.in, e)
	}
	for _, id := range g.Order {
		n := g.Nodes[id]
		switch {
		case n.ParentID != "":
		case n.Type == TypeStart:
			if g.Root != "" {
				errs = append(errs, "the graph has more than one start node")
			}
			g.Root = id
		case IsTrigger(n.Type):
			g.Triggers = append(g.Triggers, id)
		}
	}
	if len(g.Nodes) == 0 {
		errs = append(errs, "the graph has no nodes")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidGraph, strings.Join(errs, "; "))
	}
	return g, nil
}

// In returns the node's incoming edges.
func (n *Node) In() []*Edge { return n.in }

// Out returns the node's outgoing edges.
func (n *Node) Out() []*Edge { return n.out }

// Validate lists every reason the graph cannot run: no start node (nor trigger), a start node
// beside triggers, and each node whose type supported does not accept, with its id. Nodes inside
// containers are checked too.
func (g *Graph) Validate(supported func(nodeType string) bool) []Problem {
	var ps []Problem
	switch {
	case g.Root == "" && len(g.Triggers) == 0:
		ps = append(ps, Problem{Msg: "the graph has no start node"})
	case g.Root != "" && len(g.Triggers) > 0:
		// Dify's editor does not let a user-input start node and trigger nodes share a graph.
		ps = append(ps, Problem{Msg: "the graph has a start node and trigger nodes (" + strings.Join(g.Triggers, ", ") +
			"); a Workflow starts from one or the other"})
	}
	for _, id := range g.Order {
		n := g.Nodes[id]
		switch {
		case n.Type == "":
			ps = append(ps, Problem{NodeID: id, Msg: "the node has no data.type"})
		case !supported(n.Type):
			ps = append(ps, Problem{NodeID: id, Type: n.Type, Msg: fmt.Sprintf("node type %q is not supported yet", n.Type)})
		case n.Type == TypeHumanInput && n.ParentID != "":
			ps = append(ps, Problem{NodeID: id, Type: n.Type, Msg: "human input inside an iteration or a loop is not supported"})
		}
	}
	return ps
}

// topLevel reports whether the node runs in the main graph (not inside a container).
func (n *Node) topLevel() bool { return n.ParentID == "" }

// IsRoot reports whether a run may start from node id: the start node, or a trigger.
func (g *Graph) IsRoot(id string) bool {
	return id != "" && (id == g.Root || slices.Contains(g.Triggers, id))
}

// reachable returns the top-level nodes reachable from root, in file order.
func (g *Graph) reachable(root string) []string {
	if g.Nodes[root] == nil {
		return nil
	}
	seen := map[string]bool{root: true}
	stack := []string{root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range g.Nodes[id].out {
			if !seen[e.Target] && g.Nodes[e.Target].topLevel() {
				seen[e.Target] = true
				stack = append(stack, e.Target)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for _, id := range g.Order {
		if seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// ancestors returns the ids of the nodes from which id can be reached.
func (g *Graph) ancestors(id string) []string {
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range g.Nodes[cur].in {
			if !seen[e.Source] {
				seen[e.Source] = true
				stack = append(stack, e.Source)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// str reads a string field; ids written as bare numbers in YAML are read as their text.
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int, int64, uint64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// IsContainer reports whether nodes of the type run a body of other nodes (iteration, loop).
func IsContainer(nodeType string) bool { return nodeType == TypeIteration || nodeType == TypeLoop }
