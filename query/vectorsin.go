package query

import (
	"context"
	"fmt"
	"sort"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// vectorsIn runs the ANN channel over the chunks of the sessions in
// within only, through a SessionVectorSearcher, with the same IDF-weighted
// query vector queryVector builds. ok is false when it cannot (no such
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

// vecResult is what the ANN channel's goroutine hands back: its hits and
// the query vector it searched with (nil when the searcher embedded the
// text itself).
type vecResult struct {
	hits []vector.Hit
	q    []float32
	err  error
}

// runVec runs the ANN channel: within the sessions of within when it is
// set and the searcher can (k hits), else over everything (fetch hits,
// filtered by the caller).
func (e *Engine) runVec(ctx context.Context, text string, fetch, k int, within map[string]bool, out chan<- vecResult) {
	if within != nil {
		q, hits, ok, err := e.vectorsIn(ctx, text, k, within)
		if ok || err != nil {
			out <- vecResult{hits: hits, q: q, err: err}
			return
		}
		if q != nil { // embedded already: search everything, filter
			hits, err = e.src.Vectors.(VectorQuerier).SearchVector(ctx, q, fetch)
			out <- vecResult{hits: hits, q: q, err: err}
			return
		}
	}
	q, err := e.queryVector(ctx, text)
	if err != nil {
		out <- vecResult{err: err}
		return
	}
	var hits []vector.Hit
	if q == nil {
		hits, err = e.src.Vectors.SearchText(ctx, text, fetch)
	} else {
		hits, err = e.src.Vectors.(VectorQuerier).SearchVector(ctx, q, fetch)
	}
	out <- vecResult{hits: hits, q: q, err: err}
}

// scoreOutside scores, with the query vector q, BM25's candidates (in
// order) whose sessions lie outside scope: the ANN channel's search did
// not cover them. Nothing when the searcher cannot score (no VectorScorer,
// or no query vector of its own).
func (e *Engine) scoreOutside(ctx context.Context, q []float32, order []*cand, scope map[string]bool) ([]vector.Hit, error) {
	vs, ok := e.src.Vectors.(VectorScorer)
	if !ok || q == nil {
		return nil, nil
	}
	var ids []string
	for _, c := range order {
		if c.ex.BM25Rank != 0 && !scope[c.chunk.Session] {
			ids = append(ids, c.chunk.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	hits, err := vs.ScoreVectors(ctx, q, ids)
	if err != nil {
		return nil, fmt.Errorf("score candidates' vectors: %w", err)
	}
	return hits, nil
}

// mergeHits merges two ranked hit lists into one, ranked as a search
// ranks (score, then id); an id in both counts once (the same chunk has
// the same score in both).
func mergeHits(a, b []vector.Hit) []vector.Hit {
	if len(b) == 0 {
		return a
	}
	out := make([]vector.Hit, 0, len(a)+len(b))
	seen := make(map[string]bool, len(a)+len(b))
	for _, l := range [][]vector.Hit{a, b} {
		for _, h := range l {
			if !seen[h.ID] {
				seen[h.ID] = true
				out = append(out, h)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}
