package projstd

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/vector"
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
				ps, err := Builder(l, Options{})(filepath.Join(b.TempDir(), "p"))
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

// BenchmarkProjectionRecall: the vector projection as queries use it (its
// HNSW with the projection's defaults) against exact search over the same
// vectors, on generated ~60-word chunks, with the graph's query latency.
func BenchmarkProjectionRecall(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			v, err := OpenVectors(b.TempDir(), VectorOptions{Graph: true, ExactBelow: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer v.Close()
			// Zipf-vocabulary text, like real chunks (projtest.Config.Vocab).
			evs := projtest.Generate(projtest.Config{Seed: 42, N: n, StoresOnly: true, Vocab: 30000})
			t0 := time.Now()
			for _, ev := range evs {
				v.Apply(ev)
			}
			last := evs[len(evs)-1]
			if err := v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
				b.Fatal(err)
			}
			build := time.Since(t0)
			g, ok := v.idx.(*vector.HNSW)
			if !ok {
				b.Fatalf("index %T, want the graph", v.idx)
			}
			queries := projtest.Generate(projtest.Config{Seed: 7, N: 200, StoresOnly: true, Vocab: 30000})
			var lat []time.Duration
			hits, total := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, q := range queries {
					vec, _ := v.opts.Embedder.Embed(context.Background(), []string{q.Store().Content})
					t1 := time.Now()
					got, err := g.Search(vec[0], 10)
					lat = append(lat, time.Since(t1))
					if err != nil {
						b.Fatal(err)
					}
					want, _ := g.SearchExact(vec[0], 10)
					in := map[string]bool{}
					for _, h := range want {
						in[h.ID] = true
					}
					for _, h := range got {
						if in[h.ID] {
							hits++
						}
					}
					total += len(want)
				}
			}
			sortDurations(lat)
			b.ReportMetric(float64(hits)/float64(total), "recall@10")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(build.Seconds(), "build-s")
		})
	}
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

// BenchmarkVectorsBuild: the vector projection alone, fed store events of
// ~60 Zipf-vocabulary words and committed every 10,000 events as a
// catch-up does, at the sizes in UCL_BENCH_VEC_N (comma-separated; default
// 10000), without a graph (the default), or, when UCL_BENCH_VEC_EXACT is
// set, with VectorOptions.Graph and the graph starting at that many live
// vectors (the layout before version 6). Above 200,000 events the events
// are generated 100,000 at a time (seeds 42, 43, ...; generation is not
// timed), so the benchmark does not hold them all. With UCL_BENCH_VEC_DIR
// the projection is built there (emptied first) and kept for
// BenchmarkVectorsQuery. The build ends with Compact, as a bulk catch-up
// does. Reports events/s, CPU per event (the process's), and the largest
// Go heap seen at a commit.
func BenchmarkVectorsBuild(b *testing.B) {
	sizes := []int{10_000}
	if s := os.Getenv("UCL_BENCH_VEC_N"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("UCL_BENCH_VEC_N: %q", s)
			}
			sizes = append(sizes, n)
		}
	}
	exact, graph := DefaultExactBelow, false
	if s := os.Getenv("UCL_BENCH_VEC_EXACT"); s != "" {
		graph = true
		var err error
		if exact, err = strconv.Atoi(s); err != nil || exact <= 0 {
			b.Fatalf("UCL_BENCH_VEC_EXACT: %q", s)
		}
	}
	keep := os.Getenv("UCL_BENCH_VEC_DIR")
	for _, n := range sizes {
		name := fmt.Sprintf("events=%d/nograph", n)
		if graph {
			name = fmt.Sprintf("events=%d/exact=%d", n, exact)
		}
		b.Run(name, func(b *testing.B) {
			piece := n
			if n > 200_000 {
				piece = 100_000
			}
			gen := func(i int) []*log.Event {
				m := min(piece, n-i*piece)
				evs := projtest.Generate(projtest.Config{Seed: 42 + int64(i), N: m, StoresOnly: true, Vocab: 30000})
				for _, ev := range evs {
					ev.Seq += uint64(i * piece)
				}
				return evs
			}
			var first []*log.Event
			if piece == n {
				first = gen(0)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				if keep != "" {
					if err := os.RemoveAll(keep); err != nil {
						b.Fatal(err)
					}
					dir = keep
				}
				v, err := OpenVectors(dir, VectorOptions{Graph: graph, ExactBelow: exact})
				if err != nil {
					b.Fatal(err)
				}
				var peak uint64
				var ms runtime.MemStats
				var genCPU, genWall time.Duration
				t0, cpu0 := time.Now(), cpuTime()
				for p := 0; p*piece < n; p++ {
					evs := first
					if evs == nil {
						g0, c0 := time.Now(), cpuTime()
						evs = gen(p)
						genWall, genCPU = genWall+time.Since(g0), genCPU+cpuTime()-c0
					}
					for j, ev := range evs {
						if err := v.Apply(ev); err != nil {
							b.Fatal(err)
						}
						if (j+1)%10_000 == 0 || j == len(evs)-1 {
							if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
								b.Fatal(err)
							}
							runtime.ReadMemStats(&ms)
							peak = max(peak, ms.HeapInuse)
						}
					}
				}
				if err := v.Flush(); err != nil {
					b.Fatal(err)
				}
				// As the projector ends a bulk catch-up (Compacter).
				if err := v.Compact(); err != nil {
					b.Fatal(err)
				}
				el, cpu := time.Since(t0)-genWall, cpuTime()-cpu0-genCPU
				v.Close()
				b.ReportMetric(float64(n)/el.Seconds(), "events/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-us/event")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			}
		})
	}
}

// BenchmarkVectorsQuery: one process's searches (k=10) of the projection
// BenchmarkVectorsBuild kept in UCL_BENCH_VEC_DIR, opened as a query
// process opens it, over 30 generated queries: wall and CPU time per
// query. With UCL_BENCH_VEC_RECALL=1 it also prints recall@10 against
// the exact scan of the stored vectors in place (ScanSearch over the
// database's records, which does not read scan.bin: run it apart when
// measuring the process's memory, since it reads the whole database).
// From its second search the process keeps resident slots when they fit
// (vectorresident.go); UCL_BENCH_VEC_RESIDENT=0 keeps it reading
// scan.bin, as a one-shot process does.
func BenchmarkVectorsQuery(b *testing.B) {
	dir := os.Getenv("UCL_BENCH_VEC_DIR")
	if dir == "" {
		b.Skip("UCL_BENCH_VEC_DIR names no built projection")
	}
	o := VectorOptions{}
	if os.Getenv("UCL_BENCH_VEC_RESIDENT") == "0" {
		o.ResidentBytes = -1
	}
	v, err := OpenVectors(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if v.live == 0 {
		b.Fatalf("%s holds no vectors", dir)
	}
	ctx := context.Background()
	r := rand.New(rand.NewSource(11))
	var qs [][]float32
	for len(qs) < 30 {
		q, err := v.EmbedQuery(ctx, projtest.QueryText(r), nil)
		if err != nil {
			b.Fatal(err)
		}
		qs = append(qs, q)
	}
	// UCL_BENCH_VEC_SCORE=n: each query scores n stored chunks, its n
	// nearest (found before the timer, reading scan.bin), instead of
	// searching every vector: what a hybrid query's ANN channel costs
	// with lexical vectors, which scores BM25's candidates
	// (query.Engine.lexicalSubset).
	var score [][]string
	if s := os.Getenv("UCL_BENCH_VEC_SCORE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("UCL_BENCH_VEC_SCORE: %q", s)
		}
		v.opts.ResidentBytes = -1
		for _, q := range qs {
			hits, err := v.SearchVector(ctx, q, n)
			if err != nil {
				b.Fatal(err)
			}
			var ids []string
			for _, h := range hits {
				ids = append(ids, h.ID)
			}
			score = append(score, ids)
		}
	}
	var got [][]vector.Hit
	b.ResetTimer()
	t0, cpu0 := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		got = got[:0]
		for j, q := range qs {
			var hits []vector.Hit
			var err error
			if score != nil {
				hits, err = v.ScoreVectors(ctx, q, score[j])
				if err == nil && len(hits) == 0 {
					err = fmt.Errorf("no candidate scored")
				}
			} else {
				hits, err = v.SearchVector(ctx, q, 10)
			}
			if err != nil {
				b.Fatal(err)
			}
			got = append(got, hits)
		}
	}
	el, cpu := time.Since(t0), cpuTime()-cpu0
	b.StopTimer()
	nq := float64(b.N * len(qs))
	b.ReportMetric(el.Seconds()*1000/nq, "ms/query")
	b.ReportMetric(cpu.Seconds()*1000/nq, "cpu-ms/query")
	b.ReportMetric(float64(v.live), "vectors")
	if os.Getenv("UCL_BENCH_VEC_RECALL") == "" || score != nil {
		return
	}
	found, total := 0, 0
	for i, q := range qs {
		want, err := v.scan(q, 10)
		if err != nil {
			b.Fatal(err)
		}
		in := map[string]bool{}
		for _, h := range got[i] {
			in[h.ID] = true
		}
		for _, h := range want {
			total++
			if in[h.ID] {
				found++
			}
		}
	}
	b.ReportMetric(float64(found)/float64(max(total, 1)), "recall@10")
}
