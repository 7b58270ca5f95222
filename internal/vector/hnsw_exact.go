package vector

import "fmt"

// SearchExact answers a query by scanning every live vector of the graph:
// the exact oracle, without keeping a second copy of the vectors. The
// vector projection uses it up to its exact-search threshold.
func (g *HNSW) SearchExact(q []float32, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search: k=%d: %w", k, ErrInvalidK)
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	nq, zero, err := normalized(q, g.dim)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if zero {
		return nil, nil
	}
	return scanTopK(g.n, k, func(i int) (string, float32, bool) {
		if g.lvl[i] < 0 { // zero vector or deleted slot
			return "", 0, false
		}
		return g.id(int32(i)), dot(nq, g.vec(int32(i))), true
	}), nil
}
