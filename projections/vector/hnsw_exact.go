package vector

import (
	"fmt"
	"sync"
)

// SearchExact answers a query by scanning every live vector of the graph:
// the exact oracle, without keeping a second copy of the vectors. The
// vector projection uses it up to its exact-search threshold. Like Exact,
// large scans use two goroutines; the merge keeps (score, id) order, so
// results do not depend on the split.
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
	scan := func(lo, hi int, t *topK) {
		for i := lo; i < hi; i++ {
			if g.lvl[i] < 0 { // zero vector or deleted slot
				continue
			}
			t.offer(g.ids[i], dot(nq, g.vecs[i*g.dim:(i+1)*g.dim]))
		}
	}
	n := len(g.ids)
	a := &topK{k: k}
	if n < exactParallelMin {
		scan(0, n, a)
	} else {
		b := &topK{k: k}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); scan(0, n/2, a) }()
		scan(n/2, n, b)
		wg.Wait()
		for _, h := range b.h {
			a.offer(h.ID, h.Score)
		}
	}
	sortHits(a.h)
	return a.h, nil
}
