package query_test

import (
	"context"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// benchQueries are 2-4 word queries over the fixture's Zipf vocabulary.
var benchQueries = func() []string {
	r := rand.New(rand.NewSource(99))
	out := make([]string, 64)
	for i := range out {
		out[i] = projtest.QueryText(r)
	}
	return out
}()

var (
	benchMu   sync.Mutex
	benchFixt = map[int]*fixture{}
)

// benchFixture builds (once per size per process) the projections over n
// generated store events.
func benchFixture(b *testing.B, n int) *fixture {
	benchMu.Lock()
	defer benchMu.Unlock()
	if f, ok := benchFixt[n]; ok {
		return f
	}
	dir, err := os.MkdirTemp("", "ucl-query-bench-")
	if err != nil {
		b.Fatal(err)
	}
	// Not b.TempDir / b.Cleanup: the fixture outlives one benchmark.
	// The vector channel as the projection serves it: exact search below
	// projstd.DefaultExactBelow vectors, the HNSW graph above.
	f := newFixtureGraph(&noCleanup{b}, dir, n >= projstd.DefaultExactBelow)
	// A Zipf vocabulary like real text (see projtest.Config.Vocab); queries
	// are drawn from the same distribution's moderately common words.
	evs := projtest.Generate(projtest.Config{Seed: 42, N: n, StoresOnly: true, Vocab: 30000})
	start := time.Now()
	f.apply(b, evs)
	b.Logf("built %d-chunk fixture in %v", n, time.Since(start))
	runtime.GC() // do not bill the build's garbage to the first benchmark
	benchFixt[n] = f
	return f
}

// noCleanup runs a fixture's cleanups never (the process exit drops them).
type noCleanup struct{ testing.TB }

func (noCleanup) Cleanup(func()) {}

func benchSizes() []int {
	if os.Getenv("UCL_BENCH_100K") == "1" {
		return []int{10_000, 100_000}
	}
	return []int{10_000}
}

func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	p := func(q float64) float64 {
		i := int(q * float64(len(ds)-1))
		return float64(ds[i].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

func BenchmarkSearch(b *testing.B) {
	now := time.UnixMilli(projtest.BaseTime).UTC()
	for _, n := range benchSizes() {
		for _, v := range []struct {
			name string
			mode query.Mode
			opts query.Options
			text func(string) string // the query as asked (nil: as generated)
		}{
			{"hybrid", query.ModeHybrid, query.Options{}, nil},
			// What the typo channel costs: the longest word of each query
			// loses a letter, so no chunk holds it and it is widened.
			{"hybrid-typo", query.ModeHybrid, query.Options{}, misspell},
			// What mentioned times cost: a when-question reads every
			// candidate's mentioned times from the fts side table.
			{"hybrid-when", query.ModeHybrid, query.Options{}, func(s string) string { return "When did " + s }},
			// What a time phrase's window costs: its own BM25 list
			// (window.go), here over a window that holds every chunk
			// (the fixture's turns are all of October 2023), the worst case.
			{"hybrid-window", query.ModeHybrid, query.Options{}, func(s string) string { return s + " in October 2023" }},
			{"hybrid-window-off", query.ModeHybrid, query.Options{NoWindowCandidates: true}, func(s string) string { return s + " in October 2023" }},
			// The ANN query without IDF word weights: what the weights cost.
			{"hybrid-plain", query.ModeHybrid, query.Options{PlainVectorQuery: true}, nil},
			// Without the first page's diversity (Options.PageMMR): what
			// reading and comparing the second page's candidates costs.
			{"hybrid-nopage", query.ModeHybrid, query.Options{PageMMR: -1}, nil},
			{"bm25", query.ModeBM25, query.Options{}, nil},
			{"vector", query.ModeVector, query.Options{}, nil},
		} {
			mode := v.mode
			b.Run(sizeName(n)+"/"+v.name, func(b *testing.B) {
				f := benchFixture(b, n)
				e := f.engine(v.opts)
				ctx := context.Background()
				ds := make([]time.Duration, 0, b.N)
				pre := 0
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					text := benchQueries[i%len(benchQueries)]
					if v.text != nil {
						text = v.text(text)
					}
					resp, err := e.Search(ctx, query.Request{Text: text, K: 10, Now: now, Mode: mode})
					if err != nil {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(t0))
					if resp.Prefilter != nil {
						pre++
					}
				}
				b.StopTimer()
				reportPercentiles(b, ds)
				// The share of queries the L0 pre-filter restricted (it runs
				// above Options.PrefilterAbove chunks when the summaries
				// match), so the figures say which path they measure.
				b.ReportMetric(float64(pre)/float64(b.N), "prefiltered")
				// CPU per query (the whole process: both channels' goroutines
				// and GC), steadier than wall time on a loaded machine.
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

func BenchmarkContext(b *testing.B) {
	now := time.UnixMilli(projtest.BaseTime).UTC()
	for _, n := range benchSizes() {
		for _, budget := range []int{1000, 4000} {
			b.Run(sizeName(n)+"/budget"+itoa(budget), func(b *testing.B) {
				f := benchFixture(b, n)
				e := f.engine(query.Options{})
				ctx := context.Background()
				ds := make([]time.Duration, 0, b.N)
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := e.Context(ctx, query.ContextRequest{
						Request: query.Request{Text: benchQueries[i%len(benchQueries)], Now: now, Session: "sess-42-001"},
						Budget:  budget, RecentTurns: 6}); err != nil {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(t0))
				}
				b.StopTimer()
				reportPercentiles(b, ds)
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return itoa(n/1000) + "K"
	}
	return itoa(n)
}

// misspell drops the middle letter of the longest word of q.
func misspell(q string) string {
	ws := strings.Fields(q)
	li := 0
	for i, w := range ws {
		if len(w) > len(ws[li]) {
			li = i
		}
	}
	if w := ws[li]; len(w) >= 4 {
		ws[li] = w[:len(w)/2] + w[len(w)/2+1:]
	}
	return strings.Join(ws, " ")
}
