package vector

import "fmt"

// ScanSearch answers what Exact.Search would answer for an index holding
// the vectors each yields, without building one: every vector is
// normalised and coded as Exact.Add stores it and scored as Exact.Search
// scores it,
// one at a time into a reused buffer. A process that searches once (a CLI
// command) reads the vectors once instead of loading them all first.
//
// each calls fn for every (id, vector) pair and returns fn's first error;
// v may be reused between calls, id must stay valid.
func ScanSearch(q []float32, dim, k int, each func(fn func(id string, v []float32) error) error) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search: k=%d: %w", k, ErrInvalidK)
	}
	nq, zero, err := normalized(q, dim)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if zero {
		return nil, nil
	}
	// The same rule as Exact.Search (q8.go): the k best float scores
	// among the rerank(k) best approximations. Both scores are computed
	// here, since no vector is kept.
	cq, qs := quantizeQuery(nq)
	r := &topR{r: rerank(k)}
	buf := make([]float32, dim)
	codes := make([]int8, dim)
	err = each(func(id string, v []float32) error {
		nv, z, err := normalizedInto(buf, v, dim)
		if err != nil {
			return fmt.Errorf("search: vector %q: %w", id, err)
		}
		if !z {
			vs := quantizeVec(nv, codes)
			if s := approx(dotQ8(cq, codes), qs, vs); r.admits(s) {
				r.offer(q8Cand{id: id, s: s, exact: dot(nq, nv)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t := &topK{k: k}
	for _, c := range r.h {
		t.offer(c.id, c.exact)
	}
	sortHits(t.h)
	return t.h, nil
}
