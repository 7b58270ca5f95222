package ucl

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// benchSizes are the store sizes the engine benchmarks run at; 100K with
// UCL_BENCH_100K=1.
func benchSizes() []int {
	if os.Getenv("UCL_BENCH_100K") != "" {
		return []int{10_000, 100_000}
	}
	return []int{10_000}
}

var benchWords = strings.Fields(`cello bow rosin scales suite teacher lesson practice morning evening database cutover
rollback orders friday migration schema index replica backup restore lisbon trip hotel flight museum tram
budget invoice client meeting deadline release build test deploy kernel memory cache latency throughput
garden tomato basil water soil compost recipe bread flour yeast oven salt family birthday gift party`)

// benchCorpus is the text of a benchmark store and the queries run on it.
type benchCorpus struct {
	name     string
	sentence func(r *rand.Rand) string // one chunk's content, ~300 bytes
	queries  []string
}

// benchCorpora: "uniform100" draws every word uniformly from 100 words, so
// each query term is in about a third of all chunks (the worst case for
// BM25: every query scores most of the store); "zipf30k" is text like
// real text (a Zipf law over 30K words, projtest.TextZipf, the query
// package's benchmark corpus) with queries of moderately common words.
var benchCorpora = []benchCorpus{
	{"uniform100", func(r *rand.Rand) string {
		var c strings.Builder
		for c.Len() < 300 {
			c.WriteString(benchWords[r.Intn(len(benchWords))])
			c.WriteByte(' ')
		}
		return strings.TrimSpace(c.String())
	}, []string{"cello rosin practice", "database cutover rollback", "lisbon hotel tram", "tomato basil compost"}},
	{"zipf30k", func(r *rand.Rand) string { return projtest.TextZipf(r, 50, 30_000) }, func() []string {
		r := rand.New(rand.NewSource(99))
		qs := make([]string, 16)
		for i := range qs {
			qs[i] = projtest.QueryText(r)
		}
		return qs
	}()},
}

// benchStore builds a store of n store events of corpus c over 100
// sessions, written with durability none (UNSAFE, bulk load only; the
// figures measured are reads), and returns its directory. With
// UCL_BENCH_STORES=DIR the store is kept in DIR and reused by later runs
// (a 100K build takes minutes here); the benchmarks only read it.
func benchStore(b *testing.B, c benchCorpus, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "store")
	if keep := os.Getenv("UCL_BENCH_STORES"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("engine-%s-%d", c.name, n))
		if _, err := os.Stat(filepath.Join(dir, "bench-complete")); err == nil {
			return dir
		}
		if err := os.RemoveAll(dir); err != nil { // an interrupted build
			b.Fatal(err)
		}
		defer func() {
			if !b.Failed() {
				if err := os.WriteFile(filepath.Join(dir, "bench-complete"), nil, 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}()
	}
	s, err := Init(dir, InitOptions{Durability: log.None})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewSource(1))
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	const block = 5000
	for i := 0; i < n; i += block {
		var sb strings.Builder
		for j := i; j < min(i+block, n); j++ {
			fmt.Fprintf(&sb, `{"type":"store","session":"s%03d","role":"user","content":%q,"time":%q}`+"\n",
				j%100, c.sentence(r), base.Add(time.Duration(j)*time.Minute).Format(time.RFC3339))
		}
		if _, err := s.Append(ctx, AppendRequest{JSONL: sb.String()}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.CatchUp(ctx, CatchUpRequest{}); err != nil {
		b.Fatal(err)
	}
	return dir
}

func p50(ds []time.Duration) float64 {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}

// BenchmarkSearchSocket measures a query's round trip through the owner's
// socket (attached CLI path, JSON both ways) against the same query in
// process, on a caught-up store.
func BenchmarkSearchSocket(b *testing.B) {
	for _, corpus := range benchCorpora {
		for _, n := range benchSizes() {
			benchSearchSocket(b, corpus, n)
		}
	}
}

func benchSearchSocket(b *testing.B, corpus benchCorpus, n int) {
	b.Run(fmt.Sprintf("corpus=%s/chunks=%d", corpus.name, n), func(b *testing.B) {
		s, err := Open(benchStore(b, corpus, n), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		c := serve(b, s)
		ctx := context.Background()
		queries := corpus.queries
		for _, q := range queries { // warm both paths
			if _, err := c.Search(ctx, SearchRequest{Text: q}); err != nil {
				b.Fatal(err)
			}
		}
		var sock, local, sockCPU, localCPU []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			req := SearchRequest{Text: queries[i%len(queries)], K: 10}
			c0, t0 := cpuTime(), time.Now()
			if _, err := c.Search(ctx, req); err != nil {
				b.Fatal(err)
			}
			c1, t1 := cpuTime(), time.Now()
			if _, err := s.Search(ctx, req); err != nil {
				b.Fatal(err)
			}
			sock, local = append(sock, t1.Sub(t0)), append(local, time.Since(t1))
			sockCPU, localCPU = append(sockCPU, c1-c0), append(localCPU, cpuTime()-c1)
		}
		b.StopTimer()
		b.ReportMetric(p50(sock), "socket-p50-ms")
		b.ReportMetric(p50(local), "inproc-p50-ms")
		// CPU time (both ends of the socket are this process), the cost
		// of a query on an idle machine.
		b.ReportMetric(p50(sockCPU), "socket-cpu-p50-ms")
		b.ReportMetric(p50(localCPU), "inproc-cpu-p50-ms")
	})
}

// BenchmarkOpen measures Open+Close of a store (log only: projections
// open on first use) as the log grows. UCL_BENCH_OPEN=DIR,DIR... measures
// existing stores instead (e.g. the 1M-event store of test/'s
// BenchmarkCommands, or one built by `ucl append` alone).
func BenchmarkOpen(b *testing.B) {
	if dirs := os.Getenv("UCL_BENCH_OPEN"); dirs != "" {
		for _, dir := range strings.Split(dirs, ",") {
			b.Run("store="+filepath.Base(dir), func(b *testing.B) {
				var head uint64
				for i := 0; i < b.N; i++ {
					s, err := Open(dir, Options{})
					if err != nil {
						b.Fatal(err)
					}
					head, _ = s.Log().Head()
					s.Close()
				}
				b.ReportMetric(float64(head), "events")
			})
		}
		return
	}
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			dir := benchStore(b, benchCorpora[0], n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if head, _ := s.Log().Head(); head != uint64(n) {
					b.Fatalf("head %d after open, want %d", head, n)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkSearchParallel runs in-process searches from GOMAXPROCS
// goroutines at once on a caught-up store: with reads under a shared lock
// its ns/op drops below BenchmarkSearchSocket's in-process time by up to
// the core count; with one lock it cannot.
func BenchmarkSearchParallel(b *testing.B) {
	for _, corpus := range benchCorpora {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("corpus=%s/chunks=%d", corpus.name, n), func(b *testing.B) {
				s, err := Open(benchStore(b, corpus, n), Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ctx := context.Background()
				// Catch up and warm: the vector projection answers its first
				// search by a scan and loads its index on the second.
				for _, q := range corpus.queries {
					if _, err := s.Search(ctx, SearchRequest{Text: q}); err != nil {
						b.Fatal(err)
					}
				}
				var next atomic.Int64
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						q := corpus.queries[int(next.Add(1))%len(corpus.queries)]
						if _, err := s.Search(ctx, SearchRequest{Text: q, K: 10}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
