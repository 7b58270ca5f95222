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
	pos := make([]int32, 0, len(ids))
	for _, id := range ids {
		if p, ok := x.pos[id]; ok {
			pos = append(pos, int32(p))
		}
	}
	return x.searchPositions(q, k, [][]int32{pos})
}

// Positions returns the positions of the held ids among ids (the others
// are skipped) and the layout they belong to. A caller that searches the
// same subsets again and again (the vector projection's sessions) keeps
// them and passes them to SearchPositions while the layout lasts, instead
// of looking every id up on every search (REST benchmark at 100K
// chunks, a few thousand ids a query: 0.7 ms of map lookups, each a cache
// miss).
func (x *Exact) Positions(ids []string) (pos []int32, layout uint64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	pos = make([]int32, 0, len(ids))
	for _, id := range ids {
		if p, ok := x.pos[id]; ok {
			pos = append(pos, int32(p))
		}
	}
	return pos, x.layout
}

// Layout returns the current layout (see Positions).
func (x *Exact) Layout() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.layout
}

// SearchPositions is SearchIn over the union of the position lists (from
// Positions under layout): the same hits SearchIn gives for their ids.
// ErrStalePositions when the layout has changed since.
func (x *Exact) SearchPositions(q []float32, k int, lists [][]int32, layout uint64) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search: k=%d: %w", k, ErrInvalidK)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if layout != x.layout {
		return nil, fmt.Errorf("search: %w", ErrStalePositions)
	}
	return x.searchPositions(q, k, lists)
}

// searchPositions scores the union of lists. Caller holds mu.
func (x *Exact) searchPositions(q []float32, k int, lists [][]int32) ([]Hit, error) {
	nq, zero, err := normalized(q, x.dim)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if zero {
		return nil, nil
	}
	// The positions are marked in a bitmap and read back in ascending
	// order: the vectors are then read front to back, as the full scan
	// reads them (in id order, the cache misses cost more than the dot
	// products), and a repeated position counts once.
	seen := make([]uint64, (len(x.ids)+63)/64)
	n := 0
	for _, l := range lists {
		for _, p := range l {
			if int(p) >= len(x.ids) || p < 0 {
				continue // not from this layout: SearchPositions checks
			}
			if w, b := p/64, uint64(1)<<(p%64); seen[w]&b == 0 {
				seen[w] |= b
				n++
			}
		}
	}
	if n == 0 {
		return nil, nil
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
