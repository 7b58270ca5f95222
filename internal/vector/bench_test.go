package vector

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Benchmarks use clustered 384-d data (50 centres, sigma 0.04, see
// clusteredData). The 100K cases build a 100K-node graph and run only with
// UCL_BENCH_100K=1:
//
//	go test -run '^$' -bench . -benchtime 1x ./vector/            # 10K
//	UCL_BENCH_100K=1 go test -run '^$' -bench . -benchtime 1x -timeout 30m ./vector/

const benchDim, benchQueries = 384, 200

// benchOpts lets UCL_BENCH_EFC override EfConstruction for experiments.
func benchOpts() HNSWOptions {
	var o HNSWOptions
	fmt.Sscan(os.Getenv("UCL_BENCH_EFC"), &o.EfConstruction)
	return o
}

func benchSizes() []int {
	if os.Getenv("UCL_BENCH_100K") == "1" {
		return []int{10000, 100000}
	}
	return []int{10000}
}

type benchSet struct {
	vs      [][]float32 // n data vectors then benchQueries queries
	hnsw    *HNSW
	exact   *Exact
	buildNs int64
}

var (
	benchMu   sync.Mutex
	benchSets = map[int]*benchSet{}
)

// benchData builds (once per process) the data, HNSW and Exact for n.
func benchData(b *testing.B, n int) *benchSet {
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchSets[n]; ok {
		return s
	}
	s := &benchSet{vs: clusteredData(77, n+benchQueries, benchDim, 50, 0.04)}
	s.hnsw = mustHNSW(b, benchDim, benchOpts())
	s.exact = mustExact(b, benchDim)
	start := time.Now()
	addAll(b, s.hnsw, s.vs[:n])
	s.buildNs = time.Since(start).Nanoseconds()
	addAll(b, s.exact, s.vs[:n])
	benchSets[n] = s
	return s
}

func BenchmarkHNSWInsert(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			vs := clusteredData(77, n, benchDim, 50, 0.04)
			b.ResetTimer()
			var g *HNSW
			for i := 0; i < b.N; i++ {
				g = mustHNSW(b, benchDim, benchOpts())
				addAll(b, g, vs)
			}
			el := b.Elapsed()
			b.ReportMetric(float64(el.Nanoseconds())/float64(b.N*n), "ns/insert")
			b.ReportMetric(el.Seconds()/float64(b.N), "s/build")
			b.StopTimer()
			data, _ := g.MarshalBinary()
			b.ReportMetric(float64(len(data))/float64(n), "B/vector")
		})
	}
}

func BenchmarkHNSWSearch(b *testing.B) {
	for _, n := range benchSizes() {
		for _, ef := range []int{64, 96, 128, 200} {
			b.Run(fmt.Sprintf("n=%d/ef=%d", n, ef), func(b *testing.B) {
				s := benchData(b, n)
				if err := s.hnsw.SetEfSearch(ef); err != nil {
					b.Fatal(err)
				}
				qs := s.vs[n:]
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.hnsw.Search(qs[i%len(qs)], 10); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(recall(b, s.exact, s.hnsw, qs, 10), "recall@10")
				b.ReportMetric(float64(s.buildNs)/1e9, "build-s")
			})
		}
	}
}

func BenchmarkExactSearch(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchData(b, n)
			qs := s.vs[n:]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.exact.Search(qs[i%len(qs)], 10); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(1, "recall@10")
		})
	}
}

func BenchmarkHashEmbed(b *testing.B) {
	text := strings.Repeat("", 0) + sentences(9, 4)[0] + " " + sentences(9, 4)[1] + " " + sentences(9, 4)[2] + " " + sentences(9, 4)[3]
	b.Logf("%d words", len(strings.Fields(text)))
	e, _ := NewHashEmbedder(0)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = e.Embed(context.Background(), []string{text})
	}
}

// BenchmarkHashEmbedChunks embeds chunk-sized texts (~60 words, the
// LoCoMo chunks a catch-up embeds) one at a time.
func BenchmarkHashEmbedChunks(b *testing.B) {
	var texts []string
	for _, s := range embedCorpus(2000) {
		if n := len(strings.Fields(s)); n >= 20 && n <= 200 {
			texts = append(texts, s)
		}
	}
	e, _ := NewHashEmbedder(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.EmbedOne(texts[i%len(texts)])
	}
}
