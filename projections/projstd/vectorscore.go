package projstd

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
)

// ScoreVectors scores the stored vectors of the chunks ids against q as
// the searches score them (vector.ScoreEach), ranked, ties by id
// (query.VectorScorer). Ids the projection does not hold, and zero
// vectors, give no hit. The scores depend only on the stored vectors: a
// process that has loaded nothing reads them from the committed state,
// one that has loaded the exact index scores its copies, and both answer
// the same. A record that does not decode is damage, as in a scan.
func (v *VectorProjection) ScoreVectors(ctx context.Context, q []float32, ids []string) ([]vector.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("score vectors: %w", err)
	}
	// The loaded exact index holds the same vectors, decoded and scaled
	// as a read here would (TestScoreVectorsAreTheSearchScores).
	v.loadMu.Lock()
	x, loaded := v.idx.(*vector.Exact)
	v.loadMu.Unlock()
	if loaded {
		return x.ScoreIDs(q, ids)
	}
	dim := v.opts.Embedder.Dim()
	var hits []vector.Hit
	err := projections.Guard("vectors", func() error {
		return v.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bIDs)
			rec := make([]byte, recLen(dim))
			var err error
			hits, err = vector.ScoreEach(q, dim, func(fn func(string, []float32) error) error {
				vec := make([]float32, dim)
				seen := make(map[string]bool, len(ids))
				for _, id := range ids {
					if seen[id] {
						continue
					}
					seen[id] = true
					ref := b.Get(projections.IDKey(id))
					if ref == nil {
						continue
					}
					s, err := decodeSlotRef(ref)
					if err != nil {
						return fmt.Errorf("vector of %q: %w", id, err)
					}
					if err := v.readRec(s, rec); err != nil {
						return fmt.Errorf("vector of %q: %w", id, err)
					}
					if err := decodeVec(rec, vec); err != nil {
						return fmt.Errorf("vector of %q: %w", id, err)
					}
					if err := fn(id, vec); err != nil {
						return err
					}
				}
				return nil
			})
			return err
		})
	})
	if err != nil {
		return nil, v.readDamage(err)
	}
	return hits, nil
}
