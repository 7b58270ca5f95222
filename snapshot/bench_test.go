package snapshot

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// BenchmarkSnapshot measures, at 10K store events of ~60 words (100K with
// UCL_BENCH_100K=1):
//
//	create:          Create on caught-up projections (archive + encrypt + fsync),
//	                 with the archive size reported;
//	restore+delta1K: Restore of that snapshot with 1K events after it
//	                 (verify, decrypt, extract, digest check, swap, replay);
//	rebuild:         a full rebuild of the same 11K events, for comparison.
//
// Run: go test -run '^$' -bench Snapshot -benchtime 1x ./snapshot/
func BenchmarkSnapshot(b *testing.B) {
	n := 10000
	if os.Getenv("UCL_BENCH_100K") == "1" {
		n = 100000
	}
	ctx := context.Background()
	te := newTestEnv(b, 100, n)
	t0 := time.Now()
	set, err := projstd.Open(te.ProjDir, te.Log, te.Set)
	if err != nil {
		b.Fatal(err)
	}
	if err := set.CatchUp(ctx, nil); err != nil {
		b.Fatal(err)
	}
	set.Close()
	b.Logf("setup: %d events projected in %s", n, time.Since(t0).Round(time.Millisecond))

	var snap *CreateResult
	b.Run("create", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if snap, err = Create(ctx, te.Env, CreateOptions{Keep: 1}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(snap.Manifest.Archive.Size), "archive-bytes")
		b.ReportMetric(float64(snap.Manifest.Archive.Size)/float64(n), "bytes/chunk")
	})
	if snap == nil {
		b.Skip("create did not run")
	}
	te.appendEvents(b, projtest.StoreEvents(101, 1000))
	b.Run("restore+delta1K", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := Restore(ctx, te.Env, RestoreOptions{Name: snap.Manifest.Name})
			if err != nil {
				b.Fatal(err)
			}
			if res.Replayed != 1000 {
				b.Fatalf("replayed %d", res.Replayed)
			}
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			set, err := projstd.Open(te.ProjDir, te.Log, te.Set)
			if err != nil {
				b.Fatal(err)
			}
			if err := set.Projector.Rebuild(ctx, nil, nil); err != nil {
				b.Fatal(err)
			}
			set.Close()
		}
	})
}
