package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// A projection build runs under buildMemLimit unless GOMEMLIMIT chose a
// limit: without it the heap of a first catch-up grows to twice its live
// size between collections (1.43 GB RSS at 200K events, 1.00 GB with it).
func TestProjectBuildMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := runCLI(t, dir, "", "store", "--session", "s1", "Remember the cello lesson."); code != 0 {
		t.Fatal(errs)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit %d before project, want none", got)
	}
	for _, args := range [][]string{{"project"}, {"project", "rebuild", "--only", "timelines"}} {
		debug.SetMemoryLimit(math.MaxInt64)
		if _, errs, code := runCLI(t, dir, "", args...); code != 0 {
			t.Fatalf("%q: %s", args, errs)
		}
		if got := debug.SetMemoryLimit(-1); got != buildMemLimit {
			t.Fatalf("%q: memory limit %d, want %d", args, got, int64(buildMemLimit))
		}
	}
	// A limit the environment chose is kept.
	t.Setenv("GOMEMLIMIT", "2GiB")
	debug.SetMemoryLimit(2 << 30)
	if _, errs, code := runCLI(t, dir, "", "project"); code != 0 {
		t.Fatal(errs)
	}
	if got := debug.SetMemoryLimit(-1); got != 2<<30 {
		t.Fatalf("memory limit %d with GOMEMLIMIT=2GiB, want %d", got, int64(2<<30))
	}
}

// A query or context process runs with queryGCPercent under buildMemLimit
// (fewer collections in a short process); GOGC and GOMEMLIMIT from the
// environment win.
func TestQueryGCPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	prevGC := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(prevLimit); debug.SetGCPercent(prevGC) })
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := runCLI(t, dir, "", "store", "--session", "s1", "Remember the cello lesson."); code != 0 {
		t.Fatal(errs)
	}
	for _, args := range [][]string{{"query", "cello"}, {"context", "cello"}} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		if _, errs, code := runCLI(t, dir, "", args...); code != 0 {
			t.Fatalf("%q: %s", args, errs)
		}
		if got := debug.SetGCPercent(100); got != queryGCPercent {
			t.Fatalf("%q: GOGC %d, want %d", args, got, queryGCPercent)
		}
		if got := debug.SetMemoryLimit(-1); got != buildMemLimit {
			t.Fatalf("%q: memory limit %d, want %d", args, got, int64(buildMemLimit))
		}
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	if _, errs, code := runCLI(t, dir, "", "query", "cello"); code != 0 {
		t.Fatal(errs)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Fatalf("GOGC %d with GOGC=50 set, want 50", got)
	}
}

// `ucl append` runs under appendMemLimit unless GOMEMLIMIT chose a limit:
// each batch's catch-up of the duplicate index runs at GOGC=200, and 300K
// events peaked at 385 MB RSS with about 85 MB of live heap.
func TestAppendMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if _, errs, code := runCLI(t, dir, `{"session":"s1","content":"the cello lesson"}`+"\n", "append", "-"); code != 0 {
		t.Fatal(errs)
	}
	if got := debug.SetMemoryLimit(-1); got != appendMemLimit {
		t.Fatalf("memory limit %d after append, want %d", got, int64(appendMemLimit))
	}
}

// UCL_MEMSTATS makes a query write its memory figures before the store
// closes: the projections' mapped files are among them (at exit they are
// unmapped and would be missing).
func TestQueryMemStats(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc/self/smaps here")
	}
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := runCLI(t, dir, "", "store", "--session", "s1", "Remember the cello lesson."); code != 0 {
		t.Fatal(errs)
	}
	out := filepath.Join(t.TempDir(), "mem.txt")
	t.Setenv(memStatsEnv, out)
	if _, errs, code := runCLI(t, dir, "", "query", "cello"); code != 0 {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VmHWM:", "RssAnon:", "RssFile:", filepath.Join(dir, "projections")} {
		if !strings.Contains(string(b), want) {
			t.Errorf("mem stats lack %q:\n%s", want, b)
		}
	}
}
