package summary

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// BenchmarkColdSearch is a process's first session search: open the
// projection, one Search, close. The store holds UCL_BENCH_SESSIONS
// sessions (default 5,000) of 20 turns of ~40 words over a 30,000-word
// Zipf vocabulary, built once under UCL_BENCH_DIR (else a temporary dir);
// cpu-ms/op is the process CPU per open+search.
func BenchmarkColdSearch(b *testing.B) {
	sessions := 5000
	if v, err := strconv.Atoi(os.Getenv("UCL_BENCH_SESSIONS")); err == nil && v > 0 {
		sessions = v
	}
	dir := os.Getenv("UCL_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("v%d-%d", FormatVersion, sessions))
	if _, err := os.Stat(filepath.Join(dir, "summary.db")); err != nil {
		buildColdStore(b, dir, sessions)
	}
	r := rand.New(rand.NewSource(9))
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = projtest.QueryText(r)
	}
	hits := 0
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := OpenOptions(dir, logOf(dir), Options{})
		if err != nil {
			b.Fatal(err)
		}
		hs, err := x.Search(context.Background(), queries[i%len(queries)], 20)
		if err != nil {
			b.Fatal(err)
		}
		hits += len(hs)
		x.Close()
	}
	b.StopTimer()
	if hits == 0 {
		b.Fatal("no hits")
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func buildColdStore(b *testing.B, dir string, sessions int) {
	ix, err := OpenOptions(dir, logOf(dir), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	x := logged{ix}
	r := rand.New(rand.NewSource(1))
	seq := uint64(0)
	const turns = 20
	for s0 := 0; s0 < sessions; s0 += 500 {
		for s := s0; s < min(sessions, s0+500); s++ {
			for t := 0; t < turns; t++ {
				seq++
				ev := &log.Event{Header: log.Header{Seq: seq}, Body: &log.Store{ChunkID: fmt.Sprintf("c%d-%d", s, t), Kind: log.KindConversation,
					Session: fmt.Sprintf("session-%06d", s), Role: "user", Time: projtest.BaseTime + int64(s*turns+t)*1000,
					Content: projtest.TextZipf(r, 40, 30_000)}}
				if err := x.Apply(ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := x.Commit(projections.Checkpoint{Seq: seq}); err != nil {
			b.Fatal(err)
		}
	}
}
