package knowledge

import (
	"context"
	"errors"
	"sync"
)

// How the indexing jobs of this process stay out of the way of the requests that change or
// delete their documents:
//
//   - Every read-modify-write of a document row made by this service, and every write of an
//     indexing job (the document row, its chunks, its index rows), holds the document's lock
//     (lockDoc). Rows are written whole, so without it one writer's stale copy would undo
//     another's change (an archive, new metadata, a new file).
//   - A document has at most one registered run, queued or running. A request that replaces
//     what is to be indexed, or deletes the document, stops the run while holding the lock:
//     the run is closed (it may write nothing more) and its context cancelled (which kills its
//     extraction process). Since the run's writes check closed under the same lock, no row of
//     a stopped run lands after the request's change.
//   - A run reads the document it indexes under the lock when its attempt begins, so a run
//     registered after a change indexes the changed document.
//   - While a dataset is being deleted, no run is registered for its documents.
//
// This holds within one process. Across replicas, the durable job queue runs a document's job
// on one replica at a time (its lease); a replica that takes a job over registers a run here.

// Causes with which a run is stopped.
var (
	errDocumentDeleted = errors.New("knowledge: document deleted")
	errDocumentChanged = errors.New("knowledge: document changed")
	// errRunClosed is what a write of a closed run returns.
	errRunClosed = errors.New("knowledge: indexing run closed")
)

// indexRun is one indexing of one document, queued or running.
type indexRun struct {
	id               uint64
	datasetID, docID string
	// cancel ends the running job's context; nil until the job starts. Guarded by runs.mu.
	cancel context.CancelCauseFunc
	// Guarded by the document's lock: closed means the run may write nothing more; gen is the
	// generation its attempt builds (0 until the attempt began).
	closed bool
	gen    int
}

// runs is the registry of a Service's indexing runs and document locks.
type runs struct {
	mu       sync.Mutex
	seq      uint64
	byDoc    map[string]*indexRun
	deleting map[string]int // dataset id → deletions under way
	locks    map[string]*docLock
}

type docLock struct {
	mu   sync.Mutex
	refs int // guarded by runs.mu
}

// lockDoc locks the document id for a read-modify-write and returns the unlock function.
func (s *Service) lockDoc(id string) (unlock func()) {
	rs := &s.runs
	rs.mu.Lock()
	if rs.locks == nil {
		rs.locks = map[string]*docLock{}
	}
	l := rs.locks[id]
	if l == nil {
		l = &docLock{}
		rs.locks[id] = l
	}
	l.refs++
	rs.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		rs.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(rs.locks, id)
		}
		rs.mu.Unlock()
	}
}

// startRun registers a new run for the document. Without replace, it returns nil when one is
// already registered; with replace, the caller holds the document's lock, and the registered
// run is stopped. It returns nil as well while the dataset is being deleted.
func (s *Service) startRun(datasetID, docID string, replace bool) *indexRun {
	rs := &s.runs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if old := rs.byDoc[docID]; old != nil {
		if !replace {
			return nil
		}
		rs.stopLocked(old, errDocumentChanged)
	}
	if rs.deleting[datasetID] > 0 {
		return nil
	}
	if rs.byDoc == nil {
		rs.byDoc = map[string]*indexRun{}
	}
	rs.seq++
	r := &indexRun{id: rs.seq, datasetID: datasetID, docID: docID}
	rs.byDoc[docID] = r
	return r
}

// stopRun stops the document's run, if any. The caller holds the document's lock.
func (s *Service) stopRun(docID string, cause error) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if r := s.runs.byDoc[docID]; r != nil {
		s.runs.stopLocked(r, cause)
	}
}

// stopLocked unregisters r, closes it and cancels its job. It needs rs.mu and r's document lock.
func (rs *runs) stopLocked(r *indexRun, cause error) {
	if rs.byDoc[r.docID] == r {
		delete(rs.byDoc, r.docID)
	}
	r.closed = true
	if r.cancel != nil {
		r.cancel(cause)
	}
}

// claim starts r's job: it returns the job's context, derived from ctx and cancelled when the
// run is stopped, or nil when r was stopped or replaced before its job started.
func (s *Service) claim(ctx context.Context, r *indexRun) context.Context {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.byDoc[r.docID] != r {
		return nil
	}
	ctx, r.cancel = context.WithCancelCause(ctx)
	return ctx
}

// claimQueued finds the run a queued job was made for.
func (s *Service) claimQueued(ctx context.Context, docID string, id uint64) (*indexRun, context.Context) {
	s.runs.mu.Lock()
	r := s.runs.byDoc[docID]
	s.runs.mu.Unlock()
	if r == nil || r.id != id {
		return nil, nil
	}
	if ctx = s.claim(ctx, r); ctx == nil {
		return nil, nil
	}
	return r, ctx
}

// finish unregisters r once its job has returned.
func (s *Service) finish(r *indexRun) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.byDoc[r.docID] == r {
		delete(s.runs.byDoc, r.docID)
	}
	if r.cancel != nil {
		r.cancel(context.Canceled)
	}
}

// stopDataset stops the runs of the dataset's documents and keeps new ones from starting until
// the returned function is called.
func (s *Service) stopDataset(datasetID string) (done func()) {
	rs := &s.runs
	rs.mu.Lock()
	if rs.deleting == nil {
		rs.deleting = map[string]int{}
	}
	rs.deleting[datasetID]++
	var stop []*indexRun
	for _, r := range rs.byDoc {
		if r.datasetID == datasetID {
			stop = append(stop, r)
		}
	}
	rs.mu.Unlock()
	for _, r := range stop {
		unlock := s.lockDoc(r.docID)
		rs.mu.Lock()
		rs.stopLocked(r, errDocumentDeleted)
		rs.mu.Unlock()
		unlock()
	}
	return func() {
		rs.mu.Lock()
		if rs.deleting[datasetID]--; rs.deleting[datasetID] <= 0 {
			delete(rs.deleting, datasetID)
		}
		rs.mu.Unlock()
	}
}

// write runs fn, a write of run r, under r's document lock unless r is closed.
func (s *Service) write(r *indexRun, fn func() error) error {
	unlock := s.lockDoc(r.docID)
	defer unlock()
	if r.closed {
		return errRunClosed
	}
	return fn()
}
