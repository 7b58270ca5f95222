package vector

import "fmt"

// ScoreEach scores the vectors each yields against q exactly as the
// searches score a stored vector (Exact, ScanSearch, HNSW): the dot
// product of q and v, each scaled to unit length. A zero v is skipped (no
// search returns one), as is every v when q is zero. The hits come back
// ranked as a search ranks them, ties by id. The engine uses it to give
// chosen chunks (BM25's candidates outside the sessions a vector search
// covered) the score a search over them would have given.
func ScoreEach(q []float32, dim int, each func(fn func(id string, v []float32) error) error) ([]Hit, error) {
	nq, zero, err := normalized(q, dim)
	if err != nil {
		return nil, fmt.Errorf("score vectors: %w", err)
	}
	if zero {
		return nil, nil
	}
	var hits []Hit
	buf := make([]float32, dim)
	err = each(func(id string, v []float32) error {
		nv, z, err := normalizedInto(buf, v, dim)
		if err != nil {
			return fmt.Errorf("score vectors: vector %q: %w", id, err)
		}
		if !z {
			hits = append(hits, Hit{ID: id, Score: dot(nq, nv)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortHits(hits)
	return hits, nil
}

// ScoreIDs is ScoreEach over the held vectors of ids (the others, and
// repeats, are skipped): the same scores from the copies in memory.
func (x *Exact) ScoreIDs(q []float32, ids []string) ([]Hit, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	nq, zero, err := normalized(q, x.dim)
	if err != nil {
		return nil, fmt.Errorf("score vectors: %w", err)
	}
	if zero {
		return nil, nil
	}
	var hits []Hit
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		p, ok := x.pos[id]
		if !ok || seen[id] || x.zero[p] {
			continue
		}
		seen[id] = true
		hits = append(hits, Hit{ID: id, Score: dot(nq, x.vecs[p*x.dim:(p+1)*x.dim])})
	}
	sortHits(hits)
	return hits, nil
}
