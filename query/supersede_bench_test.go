package query_test

import (
	"context"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// plainChunks hides the timelines' SupersededByEach (and nothing else the
// engine looks for): the engine then skips the supersede step, which is
// what this benchmark prices.
type plainChunks struct {
	query.ChunkStore
	query.AroundStore
}

// BenchmarkSearchSupersede compares BM25 search (k=10) over the 10K
// fixture with and without the supersede lookups (two link scans per
// result).
func BenchmarkSearchSupersede(b *testing.B) {
	now := time.UnixMilli(projtest.BaseTime).UTC()
	f := benchFixture(b, 10_000)
	for _, tc := range []struct {
		name   string
		chunks query.ChunkStore
	}{{"with", f.tl}, {"without", plainChunks{f.tl, f.tl}}, {"with-again", f.tl}} {
		b.Run(tc.name, func(b *testing.B) {
			e := query.New(query.Sources{Chunks: tc.chunks, Text: f.ft}, query.Options{})
			ctx := context.Background()
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := e.Search(ctx, query.Request{Text: benchQueries[i%len(benchQueries)], K: 10, Now: now, Mode: query.ModeBM25}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.StopTimer()
			reportPercentiles(b, ds)
		})
	}
}
