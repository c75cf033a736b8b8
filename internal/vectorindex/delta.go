package vectorindex

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/store"
)

// DeltaSource is a Source that can also tell what changed in a dataset since an index version
// (*store.Store implements it with its change log). A Memory over a DeltaSource catches up by
// applying that change to the slab it holds, in time proportional to the change, instead of
// reloading the dataset: an indexing batch of ten chunks costs ten rows, not the dataset.
type DeltaSource interface {
	Source
	// IndexDelta returns the change after version since, or one marked Full when it cannot
	// (see store.IndexDelta).
	IndexDelta(ctx context.Context, datasetID string, since int64, maxChanges int) (store.IndexDelta, error)
}

// DefaultMaxDelta is how many logged changes a Memory applies as a delta at most; a dataset
// further behind is reloaded whole.
const DefaultMaxDelta = 5000

// WithMaxDelta sets how many logged changes are applied as a delta at most (default
// DefaultMaxDelta); past that the dataset is reloaded.
func WithMaxDelta(n int) Option {
	return func(m *Memory) {
		if n > 0 {
			m.maxDelta = n
		}
	}
}

// applyDelta brings s up to the dataset's current version with the Source's delta. It reports
// false, leaving s as it was, when the delta cannot be applied (the Source says Full, the slab
// has no dimension yet, or the delta would rewrite more than a quarter of the slab): the caller
// then reloads.
func (m *Memory) applyDelta(ctx context.Context, src DeltaSource, id string, s *slab) (bool, error) {
	since := s.version.Load()
	d, err := src.IndexDelta(ctx, id, since, m.maxDelta)
	if err != nil {
		return false, fmt.Errorf("vectorindex: dataset %s: index delta: %w", id, err)
	}
	if d.Full {
		return false, nil
	}
	if d.Version == since {
		return true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version.Load() != since {
		// Only refresh changes a slab, one at a time per dataset.
		return false, nil
	}
	if s.dim == 0 && len(d.Vectors) > 0 {
		return false, nil
	}
	if len(d.Vectors) > max(1000, len(s.ids)/4) {
		return false, nil
	}
	docs := toSet(d.Documents)
	segs := toSet(d.Segments)
	nodes := toSet(d.Nodes)
	// Drop every row in the changed scopes (swap with the last row), then add the scopes'
	// searchable nodes as they are now.
	for i := 0; i < len(s.ids); {
		if nodes[s.ids[i]] || segs[s.segs[i]] || docs[s.docs[i]] {
			s.removeRow(i)
			continue
		}
		i++
	}
	var wrongDim, invalid int
	for _, n := range d.Vectors {
		if len(n.Vector) != s.dim {
			wrongDim++
			continue
		}
		if j, ok := s.pos[n.NodeID]; ok {
			// A node id can only be in the slab outside the scopes if it moved between
			// them; the newest row wins.
			s.removeRow(j)
		}
		if !s.appendRow(n) {
			invalid++
		}
	}
	if (wrongDim > 0 || invalid > 0) && m.log != nil {
		m.log.WarnContext(ctx, "vector index skipped vectors", "dataset_id", id, "dim", s.dim,
			"wrong_dim", wrongDim, "zero_or_not_finite", invalid, "kept", len(s.ids))
	}
	s.version.Store(d.Version)
	return true, nil
}

// appendRow adds n as the last row, its vector normalised, and reports false (adding nothing)
// for a zero or non-finite vector. The caller checked the dimension and holds s.mu (or owns s).
func (s *slab) appendRow(n store.SearchableNode) bool {
	start := len(s.vecs)
	s.vecs = append(s.vecs, n.Vector...)
	if !Normalize(s.vecs[start:]) {
		s.vecs = s.vecs[:start]
		return false
	}
	if s.coded {
		var rq rowQuant
		s.codes, rq = quantizeRow(s.codes, s.vecs[start:])
		s.quants = append(s.quants, rq)
	}
	s.pos[n.NodeID] = len(s.ids)
	s.ids = append(s.ids, n.NodeID)
	s.docs = append(s.docs, n.DocumentID)
	s.segs = append(s.segs, n.SegmentID)
	return true
}

// removeRow deletes row i by moving the last row into its place. The caller holds s.mu.
func (s *slab) removeRow(i int) {
	last := len(s.ids) - 1
	delete(s.pos, s.ids[i])
	if i != last {
		copy(s.vecs[i*s.dim:(i+1)*s.dim], s.vecs[last*s.dim:])
		s.ids[i], s.docs[i], s.segs[i] = s.ids[last], s.docs[last], s.segs[last]
		s.pos[s.ids[i]] = i
		if s.coded {
			copy(s.codes[i*s.dim:(i+1)*s.dim], s.codes[last*s.dim:])
			s.quants[i] = s.quants[last]
		}
	}
	if s.coded {
		s.codes, s.quants = s.codes[:last*s.dim], s.quants[:last]
	}
	s.vecs = s.vecs[:last*s.dim]
	s.ids, s.docs, s.segs = s.ids[:last], s.docs[:last], s.segs[:last]
}

func toSet(ids []string) map[string]bool {
	if len(ids) == 0 {
		return nil
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}
