package query

import (
	"context"
	"fmt"
	"sort"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// vectorsIn runs the ANN channel over the chunks of the sessions in
// within only, through a SessionVectorSearcher, with the same IDF-weighted
// query vector searchVectors builds. ok is false when it cannot (no such
// searcher, a plain query vector, or the searcher declines; q is still
// returned in the last case): the caller then searches everything and
// filters.
func (e *Engine) vectorsIn(ctx context.Context, text string, k int, within map[string]bool) (q []float32, hits []vector.Hit, ok bool, err error) {
	sv, isSV := e.src.Vectors.(SessionVectorSearcher)
	if !isSV {
		return nil, nil, false, nil
	}
	q, err = e.queryVector(ctx, text)
	if q == nil || err != nil {
		return nil, nil, false, err
	}
	hits, ok, err = sv.SearchVectorIn(ctx, q, k, keysOf(within))
	if err != nil {
		return nil, nil, false, fmt.Errorf("search vectors in sessions: %w", err)
	}
	return q, hits, ok, nil
}

// keysOf returns the keys of m, sorted ("" included).
func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// vecResult is what the ANN channel's goroutine hands back.
type vecResult struct {
	hits []vector.Hit
	err  error
}

// runVec runs the ANN channel: within the sessions of within when it is
// set and the searcher can (k hits), else over everything (fetch hits,
// filtered by the caller).
func (e *Engine) runVec(ctx context.Context, text string, fetch, k int, within map[string]bool, out chan<- vecResult) {
	if within != nil {
		q, hits, ok, err := e.vectorsIn(ctx, text, k, within)
		if ok || err != nil {
			out <- vecResult{hits, err}
			return
		}
		if q != nil { // embedded already: search everything, filter
			hits, err = e.src.Vectors.(VectorQuerier).SearchVector(ctx, q, fetch)
			out <- vecResult{hits: hits, err: err}
			return
		}
	}
	hits, err := e.searchVectors(ctx, text, fetch)
	out <- vecResult{hits: hits, err: err}
}
