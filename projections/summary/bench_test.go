package summary

import (
	"os"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// benchN is 10K chunks, 100K with UCL_BENCH_100K=1.
func benchN() int {
	if os.Getenv("UCL_BENCH_100K") == "1" {
		return 100_000
	}
	return 10_000
}

// BenchmarkSummaryRebuild builds all summaries of N store events from
// empty, committing every projections.DefaultCommitEvery events like the
// projector.
func BenchmarkSummaryRebuild(b *testing.B) {
	n := benchN()
	evs := projtest.StoreEvents(1, n)
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		start := time.Now()
		x, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		applyAll(b, x, evs, projections.DefaultCommitEvery)
		total += time.Since(start)
		b.StopTimer()
		x.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "chunks/s")
}
