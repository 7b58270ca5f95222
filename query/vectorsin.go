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

// moreSessions extends a session-restricted ANN result to the sessions of
// now that were not searched (the pre-filter's BM25 candidates' sessions,
// known only once BM25 is done): the top k over the union of disjoint
// session sets is the top k of the two exact lists merged, ranked as the
// searcher ranks (score desc, then chunk id).
func (e *Engine) moreSessions(ctx context.Context, q []float32, k int, hits []vector.Hit, searched, now map[string]bool) ([]vector.Hit, error) {
	var extra []string
	for s := range now {
		if !searched[s] {
			extra = append(extra, s)
		}
	}
	if len(extra) == 0 {
		return hits, nil
	}
	sort.Strings(extra)
	more, ok, err := e.src.Vectors.(SessionVectorSearcher).SearchVectorIn(ctx, q, k, extra)
	if err != nil {
		return nil, fmt.Errorf("search vectors in sessions: %w", err)
	}
	if !ok {
		// It could restrict a moment ago; a searcher that changes its mind
		// leaves the channel to the kept sessions it did search.
		return hits, nil
	}
	out := append(append(make([]vector.Hit, 0, len(hits)+len(more)), hits...), more...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	n := 0
	for i, h := range out {
		if i > 0 && h.ID == out[n-1].ID {
			continue
		}
		out[n] = h
		n++
	}
	return out[:min(n, k)], nil
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
