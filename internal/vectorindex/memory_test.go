package vectorindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// waitTimeout caps every wait on a goroutine so that a deadlock fails the
// test instead of wedging the suite.
const waitTimeout = 20 * time.Second

// fakeSource is an in-memory Source. It is fine to fake the store here:
// the index is what these tests exercise.
type fakeSource struct {
	mu      sync.Mutex
	sets    map[string]*fakeSet
	loads   map[string]int           // SearchableVectors calls per dataset
	gates   map[string]chan struct{} // SearchableVectors waits on these
	entered chan string              // receives the dataset of each gated load
	loadErr error
}

type fakeSet struct {
	version int64
	nodes   []store.SearchableNode
}

func newFakeSource() *fakeSource {
	return &fakeSource{sets: map[string]*fakeSet{}, loads: map[string]int{}, gates: map[string]chan struct{}{}, entered: make(chan string, 100)}
}

// put replaces the dataset's nodes and bumps its version.
func (f *fakeSource) put(id string, nodes []store.SearchableNode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sets[id]
	if s == nil {
		s = &fakeSet{}
		f.sets[id] = s
	}
	s.version++
	s.nodes = nodes
}

func (f *fakeSource) nodes(id string) []store.SearchableNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sets[id].nodes
}

func (f *fakeSource) loadCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads[id]
}

func (f *fakeSource) gate(id string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := make(chan struct{})
	f.gates[id] = g
	return g
}

func (f *fakeSource) IndexVersion(_ context.Context, id string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sets[id]
	if s == nil {
		return 0, fmt.Errorf("dataset %s: %w", id, store.ErrNotFound)
	}
	return s.version, nil
}

func (f *fakeSource) SearchableVectors(ctx context.Context, id string) (int64, []store.SearchableNode, error) {
	f.mu.Lock()
	f.loads[id]++
	g := f.gates[id]
	f.mu.Unlock()
	if g != nil {
		f.entered <- id
		select {
		case <-g:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loadErr != nil {
		return 0, nil, f.loadErr
	}
	s := f.sets[id]
	if s == nil {
		return 0, nil, store.ErrNotFound
	}
	return s.version, slices.Clone(s.nodes), nil
}

func randomVector(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// randomNodes returns n nodes with random vectors; every fifth one is not
// normalised, as some embedding servers return them.
func randomNodes(r *rand.Rand, prefix string, n, dim int) []store.SearchableNode {
	nodes := make([]store.SearchableNode, n)
	for i := range nodes {
		v := randomVector(r, dim)
		if i%5 != 0 {
			Normalize(v)
		}
		nodes[i] = store.SearchableNode{NodeID: prefix + strconv.Itoa(i), DocumentID: prefix + "doc", Vector: v}
	}
	return nodes
}

// cosine is the reference score, in float64.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// naive is the reference search: score everything, sort, cut.
func naive(f *fakeSource, ids []string, q []float32, k int, minScore float64) []store.NodeHit {
	var all []store.NodeHit
	for _, id := range ids {
		for _, n := range f.nodes(id) {
			if s := cosine(q, n.Vector); s >= minScore {
				all = append(all, store.NodeHit{NodeID: n.NodeID, Score: s})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b store.NodeHit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return all[:min(k, len(all))]
}

// checkSame compares got with the reference: scores agree to float32
// precision rank by rank, every hit's score is its true cosine, and only
// near-ties at the cut may swap nodes.
func checkSame(t *testing.T, got, want []store.NodeHit, truth map[string]float64) {
	t.Helper()
	const eps = 1e-5
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	ids := map[string]bool{}
	for i, h := range got {
		if math.Abs(h.Score-want[i].Score) > eps {
			t.Fatalf("rank %d: score %v, want %v", i, h.Score, want[i].Score)
		}
		if math.Abs(h.Score-truth[h.NodeID]) > eps {
			t.Fatalf("rank %d: %s scored %v, its cosine is %v", i, h.NodeID, h.Score, truth[h.NodeID])
		}
		if i > 0 && h.Score > got[i-1].Score {
			t.Fatalf("rank %d: not sorted", i)
		}
		ids[h.NodeID] = true
	}
	if len(want) > 0 {
		last := want[len(want)-1].Score
		for _, w := range want {
			if w.Score > last+eps && !ids[w.NodeID] {
				t.Fatalf("missing %s (score %v)", w.NodeID, w.Score)
			}
		}
	}
}

func truthOf(f *fakeSource, ids []string, q []float32) map[string]float64 {
	m := map[string]float64{}
	for _, id := range ids {
		for _, n := range f.nodes(id) {
			m[n.NodeID] = cosine(q, n.Vector)
		}
	}
	return m
}

func TestSearchMatchesNaive(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 67 // not a multiple of 8: exercises the dot product's tail
	src := newFakeSource()
	src.put("small", randomNodes(r, "s", 37, dim))
	src.put("large", randomNodes(r, "l", 3000, dim))
	src.put("empty", nil)
	indexes := map[string]*Memory{
		"sequential": NewMemory(src, WithParallelMin(math.MaxInt)),
		"parallel":   NewMemory(src, WithParallelMin(1000), WithWorkers(5)),
	}
	sets := [][]string{{"small"}, {"large"}, {"small", "large", "empty"}, {"empty"}, {"large", "large"}}
	for name, idx := range indexes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(len(name)), 2))
			for range 6 {
				q := randomVector(r, dim)
				for _, ids := range sets {
					truth := truthOf(src, ids, q)
					for _, tt := range []struct {
						k        int
						minScore float64
					}{{1, -1}, {10, -1}, {100, 0.1}, {10, 0.35}, {4000, -1}, {5, 2}} {
						got, err := idx.Search(t.Context(), ids, q, tt.k, tt.minScore)
						if err != nil {
							t.Fatal(err)
						}
						checkSame(t, got, naive(src, slices.Compact(slices.Clone(ids)), q, tt.k, tt.minScore), truth)
						for _, h := range got {
							if h.Score < tt.minScore || h.Score > 1 || h.Score < -1 {
								t.Fatalf("score %v out of range (min %v)", h.Score, tt.minScore)
							}
						}
					}
				}
			}
		})
	}
}

// TestTies pins the order of equal scores: request order of the datasets,
// then the source's node order, in sequential and parallel scans alike.
func TestTies(t *testing.T) {
	t.Parallel()
	v := []float32{1, 2, 3}
	same := func(prefix string, n int) []store.SearchableNode {
		nodes := make([]store.SearchableNode, n)
		for i := range nodes {
			nodes[i] = store.SearchableNode{NodeID: fmt.Sprintf("%s%04d", prefix, i), Vector: slices.Clone(v)}
		}
		return nodes
	}
	src := newFakeSource()
	src.put("a", same("a", 3000))
	src.put("b", same("b", 5))
	for _, idx := range []*Memory{NewMemory(src), NewMemory(src, WithParallelMin(100), WithWorkers(7))} {
		got, err := idx.Search(t.Context(), []string{"b", "a"}, v, 8, -1)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range got {
			ids = append(ids, h.NodeID)
			if h.Score != 1 {
				t.Errorf("score of an identical vector = %v, want exactly 1 (clamped)", h.Score)
			}
		}
		if want := []string{"b0000", "b0001", "b0002", "b0003", "b0004", "a0000", "a0001", "a0002"}; !slices.Equal(ids, want) {
			t.Errorf("tie order %v, want %v", ids, want)
		}
	}
}

func TestSearchEdges(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	src := newFakeSource()
	src.put("d8", randomNodes(r, "x", 50, 8))
	src.put("empty", nil)
	idx := NewMemory(src)
	ctx := t.Context()

	for _, k := range []int{0, -3} {
		if got, err := idx.Search(ctx, []string{"d8"}, randomVector(r, 8), k, -1); err != nil || got == nil || len(got) != 0 {
			t.Errorf("k=%d: %v %v", k, got, err)
		}
	}
	if got, err := idx.Search(ctx, nil, randomVector(r, 8), 5, -1); err != nil || len(got) != 0 {
		t.Errorf("no datasets: %v %v", got, err)
	}
	if src.loadCount("d8") != 0 {
		t.Error("k <= 0 or no datasets still loaded vectors")
	}
	if got, err := idx.Search(ctx, []string{"empty"}, randomVector(r, 3), 5, -1); err != nil || len(got) != 0 {
		t.Errorf("empty dataset: %v %v", got, err)
	}
	if _, err := idx.Search(ctx, []string{"empty", "d8"}, randomVector(r, 16), 5, -1); !errors.Is(err, ErrDimensionMismatch) {
		t.Errorf("16-dim query on 8-dim dataset: %v", err)
	}
	for _, q := range [][]float32{nil, {0, 0, 0, 0, 0, 0, 0, 0}, {1, float32(math.NaN()), 0, 0, 0, 0, 0, 0}, {float32(math.Inf(1)), 0, 0, 0, 0, 0, 0, 0}} {
		if _, err := idx.Search(ctx, []string{"d8"}, q, 5, -1); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("query %v: %v", q, err)
		}
	}
	if _, err := idx.Search(ctx, []string{"nope"}, randomVector(r, 8), 5, -1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown dataset: %v", err)
	}
	// NaN minScore means no minimum; the query is not modified.
	q := []float32{3, 0, 0, 0, 0, 0, 0, 4}
	got, err := idx.Search(ctx, []string{"d8"}, q, 100, math.NaN())
	if err != nil || len(got) != 50 {
		t.Errorf("NaN minScore: %d hits, %v", len(got), err)
	}
	if !slices.Equal(q, []float32{3, 0, 0, 0, 0, 0, 0, 4}) {
		t.Errorf("query modified: %v", q)
	}
}

// TestMixedDimensions: vectors left over from another embedding model are
// skipped (and logged), not mixed into scores.
func TestMixedDimensions(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	nodes := randomNodes(r, "new", 20, 16)
	nodes = append(nodes, randomNodes(r, "old", 5, 8)...)
	nodes = append(nodes, store.SearchableNode{NodeID: "zero", Vector: make([]float32, 16)}, store.SearchableNode{NodeID: "none"})
	src := newFakeSource()
	src.put("d", nodes)
	var logged bytes.Buffer
	idx := NewMemory(src, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	got, err := idx.Search(t.Context(), []string{"d"}, randomVector(r, 16), 100, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Errorf("%d hits, want the 20 16-dimensional nodes", len(got))
	}
	if want := `msg="vector index skipped vectors" dataset_id=d dim=16 wrong_dim=6 zero_or_not_finite=1 kept=20`; !strings.Contains(logged.String(), want) {
		t.Errorf("log %q, want %q", logged.String(), want)
	}
	for _, h := range got {
		if h.NodeID == "zero" || h.NodeID == "none" || h.NodeID[:3] == "old" {
			t.Errorf("hit %s should have been skipped", h.NodeID)
		}
	}
	if _, err := idx.Search(t.Context(), []string{"d"}, randomVector(r, 8), 100, -1); !errors.Is(err, ErrDimensionMismatch) {
		t.Errorf("8-dimensional query: %v", err)
	}
}

func TestReloadOnVersionChange(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	src := newFakeSource()
	nodes := randomNodes(r, "n", 100, 32)
	src.put("d", nodes)
	idx := NewMemory(src)
	ctx := t.Context()
	q := randomVector(r, 32)

	for range 3 {
		if _, err := idx.Search(ctx, []string{"d"}, q, 5, -1); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.loadCount("d"); n != 1 {
		t.Fatalf("%d loads for an unchanged dataset, want 1", n)
	}

	// A new node equal to the query becomes the best hit at once.
	src.put("d", append(slices.Clone(nodes), store.SearchableNode{NodeID: "new", Vector: slices.Clone(q)}))
	got, err := idx.Search(ctx, []string{"d"}, q, 1, -1)
	if err != nil || len(got) != 1 || got[0].NodeID != "new" || got[0].Score != 1 {
		t.Fatalf("after adding: %v %v", got, err)
	}
	// Removing it makes it disappear at once.
	src.put("d", nodes)
	got, err = idx.Search(ctx, []string{"d"}, q, 200, -1)
	if err != nil || len(got) != 100 || slices.ContainsFunc(got, func(h store.NodeHit) bool { return h.NodeID == "new" }) {
		t.Fatalf("after removing: %d hits, %v", len(got), err)
	}
	if n := src.loadCount("d"); n != 3 {
		t.Errorf("%d loads, want 3", n)
	}

	// Invalidate forgets the slab; the next search reloads.
	idx.Invalidate("d")
	idx.Invalidate("never-loaded")
	if _, err := idx.Search(ctx, []string{"d"}, q, 1, -1); err != nil {
		t.Fatal(err)
	}
	if n := src.loadCount("d"); n != 4 {
		t.Errorf("%d loads after Invalidate, want 4", n)
	}

	// A failed load is reported and retried by the next search.
	src.mu.Lock()
	src.loadErr = errors.New("disk on fire")
	src.mu.Unlock()
	src.put("d", nodes)
	if _, err := idx.Search(ctx, []string{"d"}, q, 1, -1); err == nil || err.Error() != "vectorindex: dataset d: load vectors: disk on fire" {
		t.Errorf("load error: %v", err)
	}
	src.mu.Lock()
	src.loadErr = nil
	src.mu.Unlock()
	if got, err := idx.Search(ctx, []string{"d"}, q, 1, -1); err != nil || len(got) != 1 {
		t.Errorf("after the failure: %v %v", got, err)
	}
}

// TestConcurrentReloadOnce: searches of a dataset that is reloading wait
// for one shared load; searches of other datasets go on meanwhile; a
// searcher that gives up does not cancel the load.
func TestConcurrentReloadOnce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	src := newFakeSource()
	src.put("slow", randomNodes(r, "s", 500, 24))
	src.put("fast", randomNodes(r, "f", 500, 24))
	idx := NewMemory(src)
	q := randomVector(r, 24)
	gate := src.gate("slow")

	const searchers = 32
	errs := make(chan error, searchers)
	for range searchers {
		go func() {
			got, err := idx.Search(t.Context(), []string{"slow"}, q, 3, -1)
			if err == nil && len(got) != 3 {
				err = fmt.Errorf("%d hits", len(got))
			}
			errs <- err
		}()
	}
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case <-src.entered:
	case <-timer.C:
		t.Fatal("no load started")
	}

	// Another dataset is not held up by the pending load.
	if got, err := idx.Search(t.Context(), []string{"fast"}, q, 3, -1); err != nil || len(got) != 3 {
		t.Fatalf("fast dataset during the slow load: %v %v", got, err)
	}
	// A searcher whose context ends stops waiting.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := idx.Search(ctx, []string{"slow"}, q, 3, -1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled searcher: %v", err)
	}

	close(gate)
	for range searchers {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-timer.C:
			t.Fatal("searchers still waiting")
		}
	}
	if n := src.loadCount("slow"); n != 1 {
		t.Errorf("%d loads for %d concurrent searches, want 1", n, searchers)
	}
}

// TestConcurrentSearchAndWrites runs searches while the dataset keeps
// changing (under -race it checks the locking): every answer must come
// from one consistent version, seen no earlier than the search began.
func TestConcurrentSearchAndWrites(t *testing.T) {
	t.Parallel()
	const dim = 16
	src := newFakeSource()
	// Version v holds nodes "v<v>-0" … "v<v>-9": a hit names its version.
	put := func(v int) {
		r := rand.New(rand.NewPCG(uint64(v), 11))
		src.put("d", randomNodes(r, fmt.Sprintf("v%d-", v), 10, dim))
	}
	put(1)
	idx := NewMemory(src, WithParallelMin(4), WithWorkers(3))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		current = 1
		failed  = make(chan string, 100)
	)
	stop := make(chan struct{})
	wg.Go(func() {
		for v := 2; v <= 200; v++ {
			mu.Lock()
			put(v)
			current = v
			mu.Unlock()
		}
		close(stop)
	})
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 12))
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				before := current
				mu.Unlock()
				got, err := idx.Search(t.Context(), []string{"d", "d"}, randomVector(r, dim), 10, -1)
				if err != nil {
					failed <- err.Error()
					return
				}
				var version int
				for i, h := range got {
					var v, n int
					if _, err := fmt.Sscanf(h.NodeID, "v%d-%d", &v, &n); err != nil {
						failed <- h.NodeID
						return
					}
					if i == 0 {
						version = v
					}
					if v != version || v < before {
						failed <- fmt.Sprintf("hit %s in a search that began at version %d", h.NodeID, before)
						return
					}
				}
				if len(got) != 10 {
					failed <- fmt.Sprintf("%d hits", len(got))
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("searches did not finish")
	}
	close(failed)
	for f := range failed {
		t.Error(f)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	v := []float32{3, 4}
	if !Normalize(v) || v[0] != 0.6 || v[1] != 0.8 {
		t.Errorf("Normalize([3 4]) = %v", v)
	}
	for _, bad := range [][]float32{nil, {}, {0, 0}, {1, float32(math.NaN())}, {float32(math.Inf(-1)), 1}} {
		before := slices.Clone(bad)
		if Normalize(bad) {
			t.Errorf("Normalize(%v) reported success", before)
		}
		if !slices.EqualFunc(bad, before, func(a, b float32) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) }) {
			t.Errorf("Normalize(%v) changed it to %v", before, bad)
		}
	}
}
