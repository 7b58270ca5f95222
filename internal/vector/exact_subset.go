package vector

import (
	"fmt"
	"math/bits"
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
	// The positions are marked in a bitmap and read back in ascending
	// order: the vectors are then read front to back, as the full scan
	// reads them (in id order, the cache misses cost more than the dot
	// products), and a repeated id counts once.
	seen := make([]uint64, (len(x.ids)+63)/64)
	n := 0
	for _, id := range ids {
		if p, ok := x.pos[id]; ok && seen[p/64]&(1<<(p%64)) == 0 {
			seen[p/64] |= 1 << (p % 64)
			n++
		}
	}
	pos := make([]int, 0, n)
	for w, bs := range seen {
		for bs != 0 {
			pos = append(pos, w*64+bits.TrailingZeros64(bs))
			bs &= bs - 1
		}
	}
	return x.searchQ8(nq, k, pos), nil
}
