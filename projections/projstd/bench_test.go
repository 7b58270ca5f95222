package projstd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func benchSizes() []int {
	if os.Getenv("UCL_BENCH_100K") != "" {
		return []int{10_000, 100_000}
	}
	return []int{10_000}
}

// timed wraps a projection and accumulates the time spent in it.
type timed struct {
	projections.Projection
	spent time.Duration
}

func (t *timed) Apply(ev *log.Event) error {
	t0 := time.Now()
	err := t.Projection.Apply(ev)
	t.spent += time.Since(t0)
	return err
}

func (t *timed) Commit(cp projections.Checkpoint) error {
	t0 := time.Now()
	err := t.Projection.Commit(cp)
	t.spent += time.Since(t0)
	return err
}

// BenchmarkRebuildAll: a full rebuild of every standard projection from a
// real encrypted log of n store events of ~60 words, reporting the total,
// the time spent in each projection, and the Go heap after the build.
func BenchmarkRebuildAll(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			kr, _ := crypto.NewKeyring()
			l, err := log.Open(filepath.Join(b.TempDir(), "log"), log.Options{Keys: kr, Durability: log.None})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			evs := projtest.StoreEvents(42, n)
			for i := 0; i < len(evs); i += 1000 {
				var batch []log.Entry
				for _, ev := range evs[i:min(i+1000, len(evs))] {
					batch = append(batch, log.Entry{ID: ev.ID, Time: ev.Time, Body: ev.Body})
				}
				if _, err := l.AppendBatch(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ps, err := Builder(Options{})(filepath.Join(b.TempDir(), "p"))
				if err != nil {
					b.Fatal(err)
				}
				var ts []*timed
				var wrapped []projections.Projection
				for _, p := range ps {
					t := &timed{Projection: p}
					ts = append(ts, t)
					wrapped = append(wrapped, t)
				}
				pr, err := projections.NewProjector(l, wrapped, projections.Options{})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := pr.CatchUp(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
				total := time.Since(t0)
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				pr.Close()
				b.ReportMetric(total.Seconds(), "total-s")
				b.ReportMetric(float64(n)/total.Seconds(), "events/s")
				for _, t := range ts {
					b.ReportMetric(t.spent.Seconds(), t.Name()+"-s")
				}
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
			}
		})
	}
}
