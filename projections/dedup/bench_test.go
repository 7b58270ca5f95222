package dedup

import (
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// BenchmarkBuild: applying and committing 10,000 store events of ~60
// words (one commit), and the lookup a store does.
func BenchmarkBuild(b *testing.B) {
	evs := projtest.StoreEvents(42, 10_000)
	for i := 0; i < b.N; i++ {
		x, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			if err := x.Apply(ev); err != nil {
				b.Fatal(err)
			}
		}
		last := evs[len(evs)-1]
		if err := x.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
			b.Fatal(err)
		}
		st := evs[len(evs)/2].Store()
		got, err := x.Find(st.Session, st.Role, st.Kind, Hash(st.Content))
		if err != nil || len(got) == 0 {
			b.Fatalf("find: %v %v", got, err)
		}
		x.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(evs)), "µs/event")
}
