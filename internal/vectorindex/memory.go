package vectorindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/parleyhq/parley/internal/store"
)

// DefaultParallelMin is the slab size, in vectors, above which a search
// scans in parallel.
const DefaultParallelMin = 20_000

// Memory is an in-process exact vector index. Per dataset it keeps every
// searchable vector, normalised, in one contiguous []float32 slab with the
// node ids beside it, and answers by scanning the whole slab: exact top-k
// by cosine, no approximation, no tuning. Scanning is linear in
// vectors×dimensions (see BenchmarkSearch for the figures). With AVX2 the
// slab also holds each vector as int8 codes, and the scan reads those,
// scoring exactly only the rows the codes cannot rule out (quant.go): the
// same result from a quarter of the bytes.
//
// Freshness: every search asks the Source for the dataset's index version
// and, when the slab is behind, catches up before answering, so a search
// never misses a node made searchable before it started nor returns one
// removed before it started. Over a [DeltaSource] (the store) it catches up
// by applying the change since the slab's version in place (see
// applyDelta), in time proportional to the change; otherwise, or when the
// change is large, it reloads the dataset. Concurrent searches of a dataset
// share one catching up (they wait for it; a search whose context ends
// stops waiting, the work still completes and is kept); other datasets are
// not held up. A delta changes the slab under a write lock that waits for
// the scans in progress. Rows are in load order, then in the order deltas
// left them (a removed row is replaced by the last one), which decides
// ties between equal scores.
//
// Memory bound: a dataset's slab takes 4×dim bytes per vector plus its node
// id, 5×dim+12 with the codes (100k chunks of 1536 dimensions ≈ 615 MB, 770
// MB with codes; of 256 ≈ 103 MB, 130 MB with codes), held from
// the dataset's first search until [Memory.Invalidate]. A reload briefly
// holds the old slab, the rows read from the Source and the new slab, about
// three times that. Past a few million vectors per process, use a
// database-side index behind [Index] instead.
//
// Memory is safe for concurrent use.
type Memory struct {
	src         Source
	parallelMin int
	workers     int // 0: GOMAXPROCS at search time
	maxDelta    int
	coded       bool // slabs keep int8 codes (see quant.go)
	log         *slog.Logger

	refreshed func(datasetID string, version int64)

	mu      sync.Mutex
	sets    map[string]*entry
	pending map[string]bool // datasets Refresh is about to catch up
}

var _ Index = (*Memory)(nil)

// Option configures a Memory.
type Option func(*Memory)

// WithParallelMin sets the slab size, in vectors, above which searches scan
// in parallel (default DefaultParallelMin); math.MaxInt turns parallel
// scans off.
func WithParallelMin(n int) Option {
	return func(m *Memory) {
		if n > 0 {
			m.parallelMin = n
		}
	}
}

// WithWorkers sets how many goroutines a parallel scan uses (default
// GOMAXPROCS).
func WithWorkers(n int) Option {
	return func(m *Memory) {
		if n > 0 {
			m.workers = n
		}
	}
}

// withCodes sets whether slabs keep int8 codes to scan (by default when the processor has
// AVX2), so that tests cover both scans on any machine.
func withCodes(on bool) Option { return func(m *Memory) { m.coded = on } }

// WithLogger sets where reload anomalies (vectors skipped because their
// length differs from the dataset's or they are zero) are logged; by
// default they are not.
func WithLogger(l *slog.Logger) Option { return func(m *Memory) { m.log = l } }

// WithRefreshed sets a function called each time the index installs a newer version of a
// dataset (by delta or reload), with that version. It must not block.
func WithRefreshed(fn func(datasetID string, version int64)) Option {
	return func(m *Memory) { m.refreshed = fn }
}

// Refresh catches up on the dataset in the background, if the index holds it, so that the
// next search does not wait for the change to be applied; a dataset that no longer exists is
// dropped. Calls for a dataset whose catching up has not started yet count once.
func (m *Memory) Refresh(ctx context.Context, datasetID string) {
	m.mu.Lock()
	if m.sets[datasetID] == nil || m.pending[datasetID] {
		m.mu.Unlock()
		return
	}
	if m.pending == nil {
		m.pending = map[string]bool{}
	}
	m.pending[datasetID] = true
	m.mu.Unlock()
	go func() {
		m.mu.Lock()
		delete(m.pending, datasetID)
		m.mu.Unlock()
		if _, err := m.slab(ctx, datasetID); err != nil && m.log != nil && ctx.Err() == nil {
			m.log.WarnContext(ctx, "vector index could not catch up", "dataset_id", datasetID, "error", err)
		}
	}()
}

// Version reports the index version the index holds of the dataset, if it holds it.
func (m *Memory) Version(datasetID string) (int64, bool) {
	m.mu.Lock()
	e := m.sets[datasetID]
	m.mu.Unlock()
	if e == nil {
		return 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.slab == nil {
		return 0, false
	}
	return e.slab.version.Load(), true
}

// NewMemory returns an empty index that loads datasets from src on demand.
func NewMemory(src Source, opts ...Option) *Memory {
	m := &Memory{src: src, parallelMin: DefaultParallelMin, maxDelta: DefaultMaxDelta, coded: haveAVX2, sets: map[string]*entry{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// slab is one dataset's index: row i is vecs[i*dim:(i+1)*dim], the unit
// vector of node ids[i], of document docs[i] and segment segs[i]. A delta
// changes it in place under mu (searches scan it under the read lock);
// version only grows.
type slab struct {
	mu      sync.RWMutex
	version atomic.Int64
	dim     int
	vecs    []float32
	ids     []string
	docs    []string
	segs    []string
	pos     map[string]int // node id → row

	// coded slabs also keep row i as the int8 codes codes[i*dim:(i+1)*dim], bounded by
	// quants[i] (see quant.go).
	coded  bool
	codes  []int8
	quants []rowQuant
}

// entry is one dataset's slot: its current slab and the reload in flight.
type entry struct {
	mu      sync.Mutex
	slab    *slab
	loading *load
	started uint64 // reloads started so far
}

// load is a reload in flight; slab and err are set before done closes.
type load struct {
	n    uint64 // entry.started when it began
	done chan struct{}
	slab *slab
	err  error
}

// Invalidate drops the dataset's slab, freeing its memory (a deleted
// dataset); the next search of the dataset reloads it. A reload in flight
// completes for the searches waiting on it but is not kept.
func (m *Memory) Invalidate(datasetID string) {
	m.mu.Lock()
	delete(m.sets, datasetID)
	m.mu.Unlock()
}

// Search implements Index. The query need not be unit length: it is
// normalised (a copy), and so are the stored vectors, so scores are
// cosines whatever the embedding model returns. Duplicate dataset ids
// count once; datasets without vectors add nothing. Ties are broken by the
// order of datasetIDs, then the Source's node order. k <= 0 gives no hits
// without touching the Source. A query whose length differs from a
// non-empty dataset's vectors gives an error wrapping ErrDimensionMismatch;
// a zero or non-finite query one wrapping ErrInvalidQuery. A NaN minScore
// means no minimum.
func (m *Memory) Search(ctx context.Context, datasetIDs []string, query []float32, k int, minScore float64) ([]store.NodeHit, error) {
	if k <= 0 || len(datasetIDs) == 0 {
		return []store.NodeHit{}, nil
	}
	q := make([]float32, len(query))
	copy(q, query)
	if !Normalize(q) {
		return nil, ErrInvalidQuery
	}
	if math.IsNaN(minScore) {
		minScore = math.Inf(-1)
	}
	floor := floor32(minScore)
	workers := m.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	type hit struct {
		cand
		set int
		id  string
	}
	var hits []hit
	seen := make(map[string]bool, len(datasetIDs))
	for i, id := range datasetIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		s, err := m.slab(ctx, id)
		if err != nil {
			return nil, err
		}
		s.mu.RLock()
		if len(s.ids) == 0 {
			s.mu.RUnlock()
			continue
		}
		if s.dim != len(q) {
			s.mu.RUnlock()
			return nil, fmt.Errorf("dataset %s holds %d-dimensional vectors, the query has %d: %w", id, s.dim, len(q), ErrDimensionMismatch)
		}
		for _, c := range scan(s, q, k, floor, m.parallelMin, workers) {
			hits = append(hits, hit{cand: c, set: i, id: s.ids[c.pos]})
		}
		s.mu.RUnlock()
	}
	if len(seen) > 1 {
		// Each dataset's list is sorted; order the union the same way.
		slices.SortStableFunc(hits, func(a, b hit) int {
			return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.set, b.set), cmp.Compare(a.pos, b.pos))
		})
	}
	out := make([]store.NodeHit, 0, min(k, len(hits)))
	for _, h := range hits {
		if len(out) == k {
			break
		}
		// Rounding can push a dot product of unit vectors just past ±1.
		score := max(-1, min(1, float64(h.score)))
		if score < minScore {
			continue
		}
		out = append(out, store.NodeHit{NodeID: h.id, Score: score})
	}
	return out, nil
}

// slab returns the dataset's slab for its current index version, reloading
// it first when the version changed.
func (m *Memory) slab(ctx context.Context, id string) (*slab, error) {
	v, err := m.src.IndexVersion(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			m.Invalidate(id)
		}
		return nil, fmt.Errorf("vectorindex: dataset %s: index version: %w", id, err)
	}
	m.mu.Lock()
	e := m.sets[id]
	if e == nil {
		e = &entry{}
		m.sets[id] = e
	}
	m.mu.Unlock()

	e.mu.Lock()
	// Reloads numbered above seen started after v was read, so whatever
	// they load is at least as fresh as v.
	seen := e.started
	for {
		if s := e.slab; s != nil && s.version.Load() >= v {
			e.mu.Unlock()
			return s, nil
		}
		l := e.loading
		if l == nil {
			e.started++
			l = &load{n: e.started, done: make(chan struct{})}
			e.loading = l
			// The reload outlives a searcher that gives up: the others
			// wait on it, and the result is kept for the next search.
			go m.refresh(context.WithoutCancel(ctx), id, e, l)
		}
		e.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("vectorindex: dataset %s: waiting for reload: %w", id, context.Cause(ctx))
		}
		if l.err != nil {
			return nil, l.err
		}
		// index_version only grows (it counts changes), so a newer slab
		// is also fresh enough.
		if l.n > seen || l.slab.version.Load() >= v {
			return l.slab, nil
		}
		e.mu.Lock()
	}
}

// refresh brings e up to the dataset's current version and installs the
// result in e: by applying the change since its slab's version when the
// Source can tell it (a DeltaSource) and it is small, else by loading the
// dataset into a new slab.
func (m *Memory) refresh(ctx context.Context, id string, e *entry, l *load) {
	e.mu.Lock()
	cur := e.slab
	e.mu.Unlock()
	s, err := cur, error(nil)
	applied := false
	if ds, ok := m.src.(DeltaSource); ok && cur != nil {
		applied, err = m.applyDelta(ctx, ds, id, cur)
		if err != nil {
			applied = false
		}
	}
	if !applied {
		s, err = m.build(ctx, id)
	}
	e.mu.Lock()
	e.loading = nil
	if err == nil {
		e.slab = s
	}
	e.mu.Unlock()
	l.slab, l.err = s, err
	close(l.done)
	if err == nil && m.refreshed != nil {
		m.refreshed(id, s.version.Load())
	}
}

// build reads the dataset's searchable vectors into a slab. The slab's
// dimension is the most common vector length; vectors of another length
// (left over from an earlier embedding model) and zero or non-finite ones
// are skipped, and logged.
func (m *Memory) build(ctx context.Context, id string) (*slab, error) {
	version, nodes, err := m.src.SearchableVectors(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("vectorindex: dataset %s: load vectors: %w", id, err)
	}
	dims := map[int]int{}
	for _, n := range nodes {
		dims[len(n.Vector)]++
	}
	dim, count := 0, 0
	for d, c := range dims {
		if d > 0 && (c > count || (c == count && d > dim)) {
			dim, count = d, c
		}
	}
	s := &slab{dim: dim, vecs: make([]float32, 0, count*dim), ids: make([]string, 0, count),
		docs: make([]string, 0, count), segs: make([]string, 0, count), pos: make(map[string]int, count), coded: m.coded}
	if s.coded {
		s.codes, s.quants = make([]int8, 0, count*dim), make([]rowQuant, 0, count)
	}
	s.version.Store(version)
	var wrongDim, invalid int
	for _, n := range nodes {
		if len(n.Vector) != dim {
			wrongDim++
			continue
		}
		if !s.appendRow(n) {
			invalid++
		}
	}
	if (wrongDim > 0 || invalid > 0) && m.log != nil {
		m.log.WarnContext(ctx, "vector index skipped vectors", "dataset_id", id, "dim", dim,
			"wrong_dim", wrongDim, "zero_or_not_finite", invalid, "kept", len(s.ids))
	}
	return s, nil
}
