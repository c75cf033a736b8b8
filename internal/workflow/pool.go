package workflow

import (
	"sync"

	"github.com/parleyhq/parley/internal/workflow/value"
)

// Reserved node ids of selectors.
const (
	// ScopeSys holds the system variables (sys.query, sys.files, …).
	ScopeSys = "sys"
	// ScopeEnv holds the app's environment variables.
	ScopeEnv = "env"
	// ScopeConversation holds the conversation variables.
	ScopeConversation = "conversation"
)

// System variables of a Chatflow run, as Dify names them.
const (
	SysQuery          = "query"
	SysFiles          = "files"
	SysConversationID = "conversation_id"
	SysUserID         = "user_id"
	SysDialogueCount  = "dialogue_count"
	SysAppID          = "app_id"
	SysWorkflowID     = "workflow_id"
	SysWorkflowRunID  = "workflow_run_id"
	// SysTimestamp is the start of a Workflow app's run, in Unix seconds (Chatflows have none).
	SysTimestamp = "timestamp"
)

// Pool is the variable pool of one run: values of the value model (package value) by node id
// (or reserved scope) and name. Nodes of parallel branches read and write it concurrently.
type Pool struct {
	mu   sync.RWMutex
	vars map[string]map[string]any
	// parent is the pool a child pool (one iteration round) reads through; the reserved scopes
	// (system, environment, conversation variables) live in the parent only.
	parent *Pool
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{vars: map[string]map[string]any{}} }

// Child returns a pool that reads p for what it does not hold itself and keeps its own node
// outputs: one round of an iteration, whose body nodes must not see another round's outputs.
// Writes of conversation variables go to p.
func (p *Pool) Child() *Pool { return &Pool{vars: map[string]map[string]any{}, parent: p} }

// owner is the pool that holds node's values: the root for the reserved scopes.
func (p *Pool) owner(node string) *Pool {
	if p.parent == nil {
		return p
	}
	switch node {
	case ScopeSys, ScopeEnv, ScopeConversation:
		return p.parent.owner(node)
	}
	return p
}

// Set stores value under [node, name].
func (p *Pool) Set(node, name string, v any) {
	p = p.owner(node)
	p.mu.Lock()
	m := p.vars[node]
	if m == nil {
		m = map[string]any{}
		p.vars[node] = m
	}
	m[name] = v
	p.mu.Unlock()
}

// SetAll stores every member of values under node.
func (p *Pool) SetAll(node string, values map[string]any) {
	p = p.owner(node)
	p.mu.Lock()
	m := p.vars[node]
	if m == nil {
		m = make(map[string]any, len(values))
		p.vars[node] = m
	}
	for k, v := range values {
		m[k] = v
	}
	p.mu.Unlock()
}

// Has reports whether node has stored anything.
func (p *Pool) Has(node string) bool {
	p = p.owner(node)
	p.mu.RLock()
	_, ok := p.vars[node]
	p.mu.RUnlock()
	if !ok && p.parent != nil {
		return p.parent.Has(node)
	}
	return ok
}

// Get returns the value a selector [node, name, path...] names. Path elements index into
// objects by key and into arrays by position.
func (p *Pool) Get(selector []string) (any, bool) {
	if len(selector) < 2 {
		return nil, false
	}
	owner := p.owner(selector[0])
	owner.mu.RLock()
	v, ok := owner.vars[selector[0]][selector[1]]
	owner.mu.RUnlock()
	if !ok {
		if owner.parent != nil {
			return owner.parent.Get(selector)
		}
		return nil, false
	}
	if len(selector) == 2 {
		return v, true
	}
	return value.Path(v, selector[2:])
}

// Scope returns a copy of the values stored under node.
func (p *Pool) Scope(node string) map[string]any {
	p = p.owner(node)
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]any, len(p.vars[node]))
	for k, v := range p.vars[node] {
		out[k] = v
	}
	return out
}

// Selector reads a value selector of a DSL file ([node, name, ...]).
func Selector(v any) []string {
	items, _ := v.([]any)
	if items == nil {
		if ss, ok := v.([]string); ok {
			return ss
		}
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, str(it))
	}
	return out
}
