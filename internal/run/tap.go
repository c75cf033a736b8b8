package run

// Tap sees every event of the runs that have a workflow run (Chatflow and Workflow apps), in
// order, whether a client reads the run's stream or not, and end once after the last one: the
// events operation serves a run's events from what its tap keeps. It is called on the run's
// goroutine, before the event is delivered.
type Tap func(r *Run) (event func(Event), end func())

type tapHolder struct{ t Tap }

// SetTap installs t for the runs started from now on (nil removes it).
func (e *Engine) SetTap(t Tap) {
	if t == nil {
		e.tap.Store(nil)
		return
	}
	e.tap.Store(&tapHolder{t: t})
}

// tapRun gives r its tap, if it has a workflow run and a tap is set.
func (e *Engine) tapRun(r *Run) {
	h := e.tap.Load()
	if h == nil || r.WorkflowRunID == "" {
		return
	}
	r.tapEvent, r.tapEnd = h.t(r)
}

// endTap ends r's tap after its last event.
func (r *Run) endTap() {
	if r.tapEnd != nil {
		r.tapEnd()
	}
}
