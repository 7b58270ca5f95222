package summary

import (
	"fmt"
	"math/rand"
	"os"
	"syscall"
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
		x, err := Open(dir, logOf(dir))
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

// BenchmarkAppendExchange appends one exchange (a user turn and an
// assistant reply) to a session of 1,000 chunks and commits, as the proxy
// does after each reply; cpu-ms/op is the process CPU time per exchange
// (bbolt's fsync waits are not CPU).
func BenchmarkAppendExchange(b *testing.B) {
	r := rand.New(rand.NewSource(4))
	t0 := projtest.BaseTime
	turn := func(i int) *log.Store {
		return &log.Store{ChunkID: fmt.Sprintf("t%07d", i), Kind: log.KindConversation, Session: "s",
			Role: "user", Time: t0 + int64(i)*60_000, Content: projtest.TextZipf(r, 50, 30_000)}
	}
	var bodies []log.Body
	for i := 0; i < 1000; i++ {
		bodies = append(bodies, turn(i))
	}
	evs, err := projtest.Chain(bodies...)
	if err != nil {
		b.Fatal(err)
	}
	bdir := b.TempDir()
	x, err := Open(bdir, logOf(bdir))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	applyAll(b, x, evs, 0)
	next := 1000
	var ex [][]*log.Event
	for i := 0; i < b.N; i++ {
		e, err := projtest.Chain(turn(next), turn(next+1))
		if err != nil {
			b.Fatal(err)
		}
		ex = append(ex, e)
		next += 2
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, ev := range ex[i] {
			if err := (logged{x}).Apply(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := x.Commit(projections.Checkpoint{Seq: uint64(i + 1)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
