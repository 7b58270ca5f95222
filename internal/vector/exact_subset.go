package vector

import (
	"fmt"
	"sort"
)

// SearchIn returns the k most similar stored vectors to q among ids, as
// Search would rank them if the index held only those ids: each is scored
// exactly as Search scores it, ties by id. Ids the index does not hold
// (deleted, never added) and repeated ids are skipped; an empty ids gives
// no hits. The cost is that of the subset, not of the index: a session
// filter that keeps a few thousand of 100K vectors scores only those.
func (x *Exact) SearchIn(q []float32, k int, ids []string) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search: k=%d: %w", k, ErrInvalidK)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	nq, zero, err := normalized(q, x.dim)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if zero || len(ids) == 0 {
		return nil, nil
	}
	pos := make([]int, 0, len(ids))
	for _, id := range ids {
		if p, ok := x.pos[id]; ok {
			pos = append(pos, p)
		}
	}
	// Ascending positions read the vector array front to back, and make
	// repeats adjacent.
	sort.Ints(pos)
	n := 0
	for i, p := range pos {
		if i == 0 || p != pos[n-1] {
			pos[n] = p
			n++
		}
	}
	pos = pos[:n]
	return scanTopK(len(pos), k, func(i int) (string, float32, bool) {
		p := pos[i]
		if x.zero[p] {
			return "", 0, false
		}
		return x.ids[p], dot(nq, x.vecs[p*x.dim:(p+1)*x.dim]), true
	}), nil
}
