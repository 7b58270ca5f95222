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
// v may be reused between calls, id must stay valid. codes, when not nil,
// are 8-bit codes c with v[i] == float32(c[i])·step for one step (the
// projection's stored form): a vector whose largest |c[i]| is 127 codes
// to c itself (see storedCodes), so the scan skips re-coding it.
func ScanSearch(q []float32, dim, k int, each func(fn func(id string, v []float32, codes []int8) error) error) ([]Hit, error) {
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
	err = each(func(id string, v []float32, stored []int8) error {
		nv, z, err := normalizedInto(buf, v, dim)
		if err != nil {
			return fmt.Errorf("search: vector %q: %w", id, err)
		}
		if !z {
			c, vs := codes, 0.0
			if j := storedMax(stored, dim); j >= 0 {
				c, vs = stored, storedStep(nv, j)
			} else {
				vs = quantizeVec(nv, codes)
			}
			if s := approx(dotQ8(cq, c), qs, vs); r.admits(s) {
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

// storedMax returns the index of a component of c with |c[j]| == 127, or
// -1 when c is not the full-range coding of a dim-vector (nil, another
// length, a -128, or a largest |c[i]| below 127).
//
// Why such codes need no re-coding: v[i] = c[i]·step and nv = v/‖v‖ are
// each one float32 rounding away from the exact values, and so is
// maxAbs(nv) = |nv[j]|. quantizeVec multiplies nv[i] by 127/|nv[j]|,
// which gives c[i]·(1 ± a few 2⁻²⁴): within 127·2⁻²¹ of the integer c[i],
// far from the ±½ where rounding would change it. TestStoredCodesAreTheCoding
// checks this over random codes, steps and unit and non-unit vectors.
func storedMax(c []int8, dim int) int {
	if len(c) != dim {
		return -1
	}
	j := -1
	for i, x := range c {
		switch x {
		case -128: // outside the coding's range: re-code
			return -1
		case 127, -127:
			if j < 0 {
				j = i
			}
		}
	}
	return j
}

// storedStep is quantizeVec's step for nv, whose largest component in
// magnitude is at j: the same float operations, so the same bits.
func storedStep(nv []float32, j int) float64 {
	m := nv[j]
	if m < 0 {
		m = -m
	}
	return float64(m) / 127
}
