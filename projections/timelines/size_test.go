package timelines

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// BenchmarkBucketBytes reports the key+value bytes per chunk of each
// bucket of a generated store: where the file's bytes go, to pick what to
// shrink next (`go test -run '^$' -bench BucketBytes ./projections/timelines/`).
func BenchmarkBucketBytes(b *testing.B) {
	evs := projtest.StoreEvents(1, 2000)
	for i := 0; i < b.N; i++ {
		tl := open(b, b.TempDir())
		pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{tl}, projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := pr.CatchUp(b.Context(), nil); err != nil {
			b.Fatal(err)
		}
		if err := tl.flush(); err != nil {
			b.Fatal(err)
		}
		err = tl.db.View(func(tx *bolt.Tx) error {
			chunks := tx.Bucket(bChunks).Stats().KeyN
			for _, name := range allBkts {
				n := 0
				if err := tx.Bucket(name).ForEach(func(k, v []byte) error {
					n += len(k) + len(v)
					return nil
				}); err != nil {
					return err
				}
				b.ReportMetric(float64(n)/float64(chunks), string(name)+"-B/chunk")
			}
			return nil
		})
		pr.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
