package ucl

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
)

// BenchmarkRotateKeys measures `ucl keys rotate` on a store of n store
// events with one session in a hundred tombstoned: the log pass, the rekey
// events (durability sync), the cleanup, the wipe and the projection
// rebuild (hash embedder), which is reported apart. Each iteration rotates
// a freshly built store (the build is not timed).
func BenchmarkRotateKeys(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			ctx := context.Background()
			var total, project, rekeyed, index float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// A copy: with UCL_BENCH_STORES the built store is shared by
				// benchmarks that only read it, and a rotation rewrites it.
				dir := filepath.Join(b.TempDir(), "rotate")
				if out, err := exec.Command("cp", "-a", benchStore(b, benchCorpora[0], n), dir).CombinedOutput(); err != nil {
					b.Fatalf("copy the bench store: %v %s", err, out)
				}
				sync := log.Sync
				s, err := Open(dir, Options{Durability: &sync})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Tombstone(ctx, TombstoneRequest{Session: "s000"}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := s.RotateKeys(ctx, RotateKeysRequest{})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Shredded) != n/100 || res.Rekeyed != n-n/100+1 {
					b.Fatalf("rotation: %d shredded, %d rekeyed", len(res.Shredded), res.Rekeyed)
				}
				total += res.Seconds
				project += res.ProjectSeconds
				rekeyed += float64(res.Rekeyed)
				s.Close()
				// What every later process pays on its first read of a
				// pre-rotation event: finding and opening the rekey events.
				s, err = Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if _, err := s.Log().Rekeys(); err != nil {
					b.Fatal(err)
				}
				index += time.Since(t0).Seconds() * 1000
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(total/float64(b.N), "rotate-s")
			b.ReportMetric(project/float64(b.N), "project-s")
			b.ReportMetric((total-project)/float64(b.N), "rekey+wipe-s")
			b.ReportMetric(rekeyed/float64(b.N), "rekeyed")
			b.ReportMetric(index/float64(b.N), "rekey-index-ms")
		})
	}
}
