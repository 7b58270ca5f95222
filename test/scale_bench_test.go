package test

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Issue 26's figures in BenchmarkCommands (`make bench-1m`): the first
// build of each store size, and one query process beside a Go SQLite FTS5
// query process on the same corpus. Each figure is logged, and written as
// a row of a markdown table (figure | ucl | peer | ratio) to the file
// UCL_BENCH_SUMMARY names, where bench/peers' -summary adds its rows: make
// bench-1m prints that table at the end.

// benchSummary appends one row to UCL_BENCH_SUMMARY, when it is set;
// format holds the row's cells separated by " | ".
func benchSummary(b *testing.B, format string, args ...any) {
	b.Helper()
	path := os.Getenv("UCL_BENCH_SUMMARY")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "| "+format+" |\n", args...); err != nil {
		f.Close()
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchSizeName is n as 100K or 2M when it is a round count.
func benchSizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dK", n/1_000)
	}
	return fmt.Sprint(n)
}

// reportBuild logs and reports the first build of n events (cu, the `ucl
// project` process; load0 the load average when it started).
func reportBuild(b *testing.B, name string, n int, cu procRun, load0 string) {
	b.Helper()
	load1 := loadAvg()
	rate, perCPU := float64(n)/cu.wall.Seconds(), float64(n)/cu.cpu.Seconds()
	b.Logf("%s: first build (`ucl project`, no projections before) %.2fs = %.0f events/s (CPU %.2fs = %.0f events per CPU second), peak RSS %.0f MB; load average %s before, %s after",
		name, cu.wall.Seconds(), rate, cu.cpu.Seconds(), perCPU, float64(cu.rss)/1e6, load0, load1)
	b.ReportMetric(rate, "catchup-events/s")
	b.ReportMetric(cu.cpu.Seconds(), "catchup-cpu-s")
	b.ReportMetric(float64(cu.rss)/1e6, "catchup-peak-MB")
	benchSummary(b, "first build of all projections, %s events | %.0f events/s (wall %s, CPU %.1f s = %.0f events per CPU s), peak RSS %.2f GB; load %s → %s | — | targets ≥ 10K events/s, ≤ 1 GB",
		benchSizeName(n), rate, cu.wall.Round(time.Second), cu.cpu.Seconds(), perCPU, float64(cu.rss)/1e9,
		strings.Fields(load0 + " ?")[0], strings.Fields(load1 + " ?")[0])
}

// firstBuildOfCopy copies the store at dir without its projections (the
// log, the configuration and keys) to dir+".build", times `ucl project`
// there, the first build of every projection, and removes the copy.
func firstBuildOfCopy(b *testing.B, dir string) (procRun, string) {
	b.Helper()
	scratch := dir + ".build"
	if err := os.RemoveAll(scratch); err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(scratch)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && rel == "projections":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(scratch, rel), 0o700)
		case rel == benchBuiltMark || !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, filepath.Join(scratch, rel))
	})
	if err != nil {
		b.Fatalf("copy the log of %s: %v", dir, err)
	}
	load0 := loadAvg()
	return runProc(b, scratch, nil, "project"), load0
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// runExt runs a peer's binary and fails the benchmark on a non-zero exit.
func runExt(b *testing.B, bin string, args ...string) (procRun, string) {
	b.Helper()
	r, out, errOut, err := measureProc(os.Environ(), nil, bin, args...)
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, errOut)
	}
	return r, out
}

// fts5Words are the words ucl's analyzer keeps of BenchmarkCommands'
// question "when did she go to the support group" (its stop words out):
// FTS5 has no stop words, so it is given these.
const fts5Words = "go support group"

// fts5Beside puts one `ucl query` process, bm25 and hybrid, beside one Go
// SQLite FTS5 query process (bench/peers/cmd/fts5corpus, the binary bin:
// make bench-1m builds it, so this module does not depend on SQLite) on an
// FTS5 index of the same n turns, kept beside the store (dir + ".fts5").
// Five rounds, each process in turn; CPU is the process's user+system time
// (what the work costs on a shared machine), RSS its peak.
func fts5Beside(b *testing.B, bin, dir string, n, content int, q string) {
	b.Helper()
	idx := dir + ".fts5"
	done := filepath.Join(idx, "complete")
	if _, err := os.Stat(done); err != nil {
		if err := os.RemoveAll(idx); err != nil {
			b.Fatal(err)
		}
		input := locomoBenchTurns(n, content)
		if input == nil {
			b.Skip("corpus locomo: LoCoMo data not found (UCL_BENCH_LOCOMO)")
		}
		corpus := filepath.Join(b.TempDir(), "corpus.jsonl")
		if err := os.WriteFile(corpus, input, 0o600); err != nil {
			b.Fatal(err)
		}
		input = nil
		r, _ := runExt(b, bin, "build", idx, corpus)
		os.Remove(corpus)
		b.Logf("FTS5 index of the %d turns built in %s: wall %.1fs, CPU %.1fs, peak RSS %.0f MB",
			n, idx, r.wall.Seconds(), r.cpu.Seconds(), float64(r.rss)/1e6)
		if err := os.WriteFile(done, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	var bm, hy, ft []procRun
	for i := 0; i < 5; i++ {
		bm = append(bm, runProc(b, dir, nil, "query", "--mode", "bm25", q))
		hy = append(hy, runProc(b, dir, nil, "query", q))
		r, out := runExt(b, bin, "query", idx, fts5Words)
		if strings.TrimSpace(out) == "0" {
			b.Fatalf("fts5corpus query %q found nothing in %s", fts5Words, idx)
		}
		ft = append(ft, r)
	}
	stat := func(rs []procRun) (cpuMS, rssMB float64) {
		var c []float64
		for _, r := range rs {
			c = append(c, float64(r.cpu.Microseconds())/1e3)
			rssMB = max(rssMB, float64(r.rss)/1e6)
		}
		return medianF(c), rssMB
	}
	ratios := func(rs []procRun) (med, lo, hi float64) {
		var x []float64
		for i := range rs {
			x = append(x, rs[i].cpu.Seconds()/ft[i].cpu.Seconds())
		}
		sort.Float64s(x)
		return medianF(x), x[0], x[len(x)-1]
	}
	fc, fr := stat(ft)
	b.Logf("%s: Go FTS5 query process %q: CPU %.0f ms, peak RSS %.1f MB (median of 5)", benchSizeName(n), fts5Words, fc, fr)
	b.ReportMetric(fc, "fts5-query-cpu-ms")
	for _, m := range []struct {
		name, target string
		runs         []procRun
	}{{"bm25", "1.5", bm}, {"hybrid", "2", hy}} {
		c, r := stat(m.runs)
		med, lo, hi := ratios(m.runs)
		b.Logf("%s: ucl query %s process: CPU %.0f ms, peak RSS %.1f MB; ÷ FTS5 CPU %.2f [%.2f-%.2f], RSS %.1f", benchSizeName(n), m.name, c, r, med, lo, hi, r/fr)
		benchSummary(b, "one `ucl query` process (%s), %s events | CPU %.0f ms, peak RSS %.1f MB | Go FTS5 process: CPU %.0f ms, peak RSS %.1f MB | CPU %.2f [%.2f–%.2f] (target ≤ %s), RSS %.1f× (target ≤ 100 MB)",
			m.name, benchSizeName(n), c, r, fc, fr, med, lo, hi, m.target, r/fr)
	}
}

func medianF(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// TestMeasureProcPeakIsTheChilds: a child's peak RSS as the benchmarks
// measure it is the child's own, not this process's. With the child's
// rusage alone it is at least this process's peak (Go starts children
// with vfork, and Linux carries the parent's peak into the child at exec):
// /bin/true showed this process's 40 MB, and the 438 MB input a 1M store
// is appended from.
func TestMeasureProcPeakIsTheChilds(t *testing.T) {
	t.Parallel()
	if gnuTime == "" {
		t.Skip("GNU time (/usr/bin/time) not installed: the benchmarks fall back to rusage")
	}
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skip("/bin/true not found")
	}
	ballast := make([]byte, 48<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1 // resident: this process's peak is now above 48 MB
	}
	r, _, errOut, err := measureProc(nil, nil, "/bin/true")
	runtime.KeepAlive(ballast)
	if err != nil {
		t.Fatalf("/bin/true: %v\n%s", err, errOut)
	}
	if r.rss <= 0 || r.rss > 16<<20 {
		t.Fatalf("/bin/true's peak RSS measured as %d KB, want its own (a few MB), not this process's (over 48 MB)", r.rss>>10)
	}
}
