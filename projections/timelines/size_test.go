package timelines

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestBucketSizes logs the key+value bytes per bucket of a generated store
// (run with -v to see where the file's bytes go).
func TestBucketSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	evs := projtest.StoreEvents(1, 2000)
	tl := open(t, t.TempDir())
	pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{tl}, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := tl.flush(); err != nil {
		t.Fatal(err)
	}
	err = tl.db.View(func(tx *bolt.Tx) error {
		for _, name := range allBkts {
			var k, v, n int
			if err := tx.Bucket(name).ForEach(func(kk, vv []byte) error {
				k, v, n = k+len(kk), v+len(vv), n+1
				return nil
			}); err != nil {
				return err
			}
			t.Logf("%-9s n=%6d keys=%8d values=%8d", name, n, k, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSampleRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	evs := projtest.StoreEvents(1, 50)
	tl := open(t, t.TempDir())
	pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{tl}, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := tl.flush(); err != nil {
		t.Fatal(err)
	}
	_ = tl.db.View(func(tx *bolt.Tx) error {
		i := 0
		return tx.Bucket(bChunks).ForEach(func(k, v []byte) error {
			if i++; i < 4 {
				c, _ := decodeChunk(string(k), v)
				t.Logf("%s %d %+v", k, len(v), *c)
			}
			return nil
		})
	})
}
