// Package vectorindex finds the stored embeddings nearest to a query vector
// for knowledge-base semantic search.
//
// [Index] is the interface the knowledge service searches through. [Memory]
// implements it in process: per dataset it keeps every searchable vector in
// one contiguous slab, loaded from a [Source] (the store) and brought up to
// date by delta when the dataset's index version changes, and answers with
// an exact brute-force scan. [Shared] carries change announcements between
// replicas over pub/sub. A pgvector adapter can implement the same interface
// when datasets outgrow memory.
package vectorindex

import (
	"context"
	"errors"
	"math"

	"github.com/parleyhq/parley/internal/store"
)

// Source is where an index loads a dataset's vectors from. *store.Store
// implements it (see knowledge.Store for the contract).
type Source interface {
	// IndexVersion returns the dataset's index version, which changes
	// whenever its searchable nodes or their vectors change. It is called
	// on every search, so it must be cheap (one indexed row).
	IndexVersion(ctx context.Context, datasetID string) (int64, error)
	// SearchableVectors returns every searchable node of the dataset with
	// its vector, and the index version they are consistent with.
	SearchableVectors(ctx context.Context, datasetID string) (version int64, nodes []store.SearchableNode, err error)
}

// Index is a nearest-neighbour index over datasets' node vectors.
type Index interface {
	// Search returns up to k nodes of the datasets most similar (cosine) to
	// query, best first, with score in [-1,1] (vectors are unit length) and
	// score >= minScore.
	Search(ctx context.Context, datasetIDs []string, query []float32, k int, minScore float64) ([]store.NodeHit, error)
}

var (
	// ErrDimensionMismatch means the query vector and a dataset's vectors
	// have different lengths: the query was embedded with another model
	// than the dataset.
	ErrDimensionMismatch = errors.New("vectorindex: query and dataset vectors have different dimensions")
	// ErrInvalidQuery means the query vector is empty, zero, or holds NaN
	// or infinite components, so no cosine can be computed.
	ErrInvalidQuery = errors.New("vectorindex: query vector is empty, zero or not finite")
)

// Normalize scales v in place to unit length, so that dot products are
// cosines. It reports false, leaving v unchanged, when v is empty, zero or
// holds NaN or infinite components.
func Normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return true
}
