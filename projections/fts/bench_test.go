package fts

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
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

func build(b *testing.B, dir string, evs []*log.Event) *Index {
	b.Helper()
	x, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	for i, ev := range evs {
		if err := x.Apply(ev); err != nil {
			b.Fatal(err)
		}
		if (i+1)%projections.DefaultCommitEvery == 0 || i == len(evs)-1 {
			if err := x.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return x
}

// BenchmarkFTSRebuild indexes N store events of ~60 words from empty,
// committing every projections.DefaultCommitEvery events like the projector.
func BenchmarkFTSRebuild(b *testing.B) {
	n := benchN()
	evs := projtest.StoreEvents(1, n)
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		start := time.Now()
		x := build(b, dir, evs)
		total += time.Since(start)
		b.StopTimer()
		x.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "docs/s")
}

// BenchmarkFTSQuery runs 2-word queries against N chunks and reports p50.
func BenchmarkFTSQuery(b *testing.B) {
	n := benchN()
	evs := projtest.StoreEvents(1, n)
	x := build(b, b.TempDir(), evs)
	defer x.Close()
	queries := []string{"memory budget", "wallet upload", "index query", "session token", "network latency", "segment mirror"}
	// Use words that are really in the generated text.
	if s := evs[0].Store(); s != nil {
		ws := []string{}
		for _, w := range splitWords(s.Content) {
			if len(w) > 4 {
				ws = append(ws, w)
			}
		}
		for i := 0; i+1 < len(ws) && i < 12; i += 2 {
			queries = append(queries, ws[i]+" "+ws[i+1])
		}
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := x.Search(ctx, Query{Text: queries[i%len(queries)], K: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func splitWords(s string) []string {
	var out []string
	start := -1
	for i, r := range s + " " {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	return out
}

// BenchmarkTombstoneSession resolves a tombstone by session over N
// committed chunks: without a session index (format 3) it is one pass
// over the side table's records.
func BenchmarkTombstoneSession(b *testing.B) {
	n := benchN()
	evs := projtest.StoreEvents(1, n)
	x := build(b, b.TempDir(), evs)
	defer x.Close()
	session := evs[len(evs)/2].Store().Session
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := x.applyTombstone(&log.Tombstone{Session: session}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		x.resetPending() // a fresh batch and no pending changes for the next round
		b.StartTimer()
	}
}

// BenchmarkFTSDigest is Digest (what `project verify` computes for the
// live and the rebuilt projection) over N chunks of ~60 words: since
// format 5 it reads every posting of the index.
func BenchmarkFTSDigest(b *testing.B) {
	x := build(b, b.TempDir(), projtest.StoreEvents(1, benchN()))
	defer x.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x.Digest(); err != nil {
			b.Fatal(err)
		}
	}
}
