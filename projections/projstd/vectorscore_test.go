package projstd

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestScoreVectorsAreTheSearchScores: a chunk scored one by one gets the
// score every search path gives it (the scan in place, the loaded exact
// index, the graph), in a fresh projection and a loaded one, so that the
// engine can merge the two into one ranking; unknown and repeated ids give
// no extra hit.
func TestScoreVectorsAreTheSearchScores(t *testing.T) {
	for _, o := range []VectorOptions{{}, {Graph: true, ExactBelow: 100}} {
		dir := t.TempDir()
		v, err := OpenVectors(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		applyCommit(t, v, projtest.Generate(projtest.Config{Seed: 13, N: 1500}))
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		v, err = OpenVectors(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		q, err := v.EmbedQuery(ctx, "cello practice database migration", nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		if err := v.forEachMeta(func(id string, _ chunkMeta) { ids = append(ids, id) }); err != nil {
			t.Fatal(err)
		}
		sort.Strings(ids)
		pick := append([]string{"no-such-chunk"}, ids[:40]...)
		pick = append(pick, ids[3], ids[7]) // repeated
		fresh, err := v.ScoreVectors(ctx, q, pick)
		if err != nil {
			t.Fatal(err)
		}
		if len(fresh) != 40 {
			t.Fatalf("%d hits for 40 known ids", len(fresh))
		}
		// Every search path in turn: the first scans in place, the second
		// loads the index (or the graph searches).
		for pass := 0; pass < 3; pass++ {
			all, err := v.SearchVector(ctx, q, len(ids))
			if err != nil {
				t.Fatal(err)
			}
			score := map[string]float32{}
			for _, h := range all {
				score[h.ID] = h.Score
			}
			for i, h := range fresh {
				if s, ok := score[h.ID]; ok && s != h.Score {
					t.Fatalf("pass %d: %s scored %v one by one, %v by the search", pass, h.ID, h.Score, s)
				}
				if i > 0 && (fresh[i-1].Score < h.Score || fresh[i-1].Score == h.Score && fresh[i-1].ID > h.ID) {
					t.Fatalf("hits not ranked at %d", i)
				}
			}
			again, err := v.ScoreVectors(ctx, q, pick)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != len(fresh) {
				t.Fatalf("pass %d: %d hits, %d before", pass, len(again), len(fresh))
			}
			for i := range again {
				if again[i] != fresh[i] {
					t.Fatalf("pass %d: hit %d %v, %v before loading", pass, i, again[i], fresh[i])
				}
			}
		}
		if hits, err := v.ScoreVectors(ctx, make([]float32, len(q)), ids[:5]); err != nil || len(hits) != 0 {
			t.Fatalf("zero query: %v %v", hits, err)
		}
		if _, err := v.ScoreVectors(ctx, q[:3], ids[:5]); err == nil {
			t.Fatal("a query of the wrong dimension was scored")
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScoreVectorsCorruptRecordIsDamage: a stored vector that does not
// decode is damage, flagged for a rebuild, not a wrong score.
func TestScoreVectorsCorruptRecordIsDamage(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applyCommit(t, v, projtest.Events(3, 200))
	var id string
	var slot uint64
	err = v.db.View(func(tx *bolt.Tx) error {
		k, val := tx.Bucket(bIDs).Cursor().First()
		id, _ = projections.IDOfKey(k)
		var err error
		slot, err = decodeSlotRef(val)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A NaN step: the record does not decode.
	nan := []byte{0x00, 0x00, 0xc0, 0x7f}
	if _, err := v.rf.WriteAt(nan, scanHeader+int64(slot)*int64(recLen(v.opts.Embedder.Dim()))); err != nil {
		t.Fatal(err)
	}
	q, err := v.EmbedQuery(context.Background(), "cello", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.ScoreVectors(context.Background(), q, []string{id})
	if _, damaged := projections.Damaged(err); !damaged {
		t.Fatalf("corrupt record: %v, want damage", err)
	}
	if _, err := os.Stat(filepath.Join(dir, projections.DamageMarker)); err != nil {
		t.Fatalf("not flagged for a rebuild: %v", err)
	}
	v.Close()
}
