package projections

import (
	"math"
	"runtime/debug"
	"testing"
)

// Overlapping bulk catch-ups put the collector's target back only when
// the last one ends, whatever order they end in, and a higher target set
// by the user is kept.
func TestBulkGCRestores(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	a := bulkGC()
	b := bulkGC()
	if got := debug.SetGCPercent(bulkGCPercent); got != bulkGCPercent {
		t.Fatalf("during: GOGC %d, want %d", got, bulkGCPercent)
	}
	a()
	a() // a second call changes nothing
	if got := debug.SetGCPercent(bulkGCPercent); got != bulkGCPercent {
		t.Fatalf("one still running: GOGC %d, want %d", got, bulkGCPercent)
	}
	b()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after: GOGC %d, want 100", got)
	}
	debug.SetGCPercent(500)
	c := bulkGC()
	if got := debug.SetGCPercent(500); got != 500 {
		t.Fatalf("user's 500 lowered to %d", got)
	}
	c()
	if got := debug.SetGCPercent(100); got != 500 {
		t.Fatalf("after: GOGC %d, want 500", got)
	}
}

// A catch-up too small to be bulk bounds the heap with less room and
// leaves the collector's target alone; a bulk one starting beside it
// raises the limit, and the limit goes when the last one ends.
func TestCatchUpGCLimits(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	small := catchUpGC(false)
	got := debug.SetMemoryLimit(-1)
	if got < CatchUpMemHeadroom || got >= BulkMemHeadroom {
		t.Fatalf("small catch-up: memory limit %d, want the live heap + %d", got, CatchUpMemHeadroom)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("small catch-up: GOGC %d, want 100", p)
	}
	bulk := bulkGC()
	if l := debug.SetMemoryLimit(-1); l < BulkMemHeadroom {
		t.Fatalf("bulk beside small: memory limit %d, want the live heap + %d", l, BulkMemHeadroom)
	}
	bulk()
	small()
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Fatalf("after both: memory limit %d, want none", l)
	}
}

// FitBulkLimit lowers a bulk catch-up's heap limit to what BulkRSSBudget
// leaves beside the largest mapped share of the last commits, no lower
// than the live heap + bulkMemFloor, and gives it back (up to the limit
// the catch-up started with) once the mapped share has been small for a
// window of commits. It leaves a limit it did not set alone.
func TestFitBulkLimitKeepsTheBudget(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	var file int64
	restore := SetFileResident(func() int64 { return file })
	defer restore()

	FitBulkLimit() // no bulk catch-up running: nothing to fit
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Fatalf("no catch-up: memory limit %d, want none", l)
	}
	end := bulkGC()
	start := debug.SetMemoryLimit(-1)
	file = 40 << 20
	FitBulkLimit()
	if l := debug.SetMemoryLimit(-1); l != start {
		t.Fatalf("40 MB mapped: limit %d, want the start's %d", l, start)
	}
	file = 700 << 20
	FitBulkLimit()
	want := max(BulkRSSBudget-rssSlack-file, liveHeap()+bulkMemFloor)
	if l := debug.SetMemoryLimit(-1); l >= start || l < want-(16<<20) || l > want+(16<<20) {
		t.Fatalf("700 MB mapped: limit %d, want ~%d (start %d)", l, want, start)
	}
	file = 1 << 30 // more than the budget: the floor holds
	FitBulkLimit()
	if l, floor := debug.SetMemoryLimit(-1), liveHeap()+bulkMemFloor; l < floor-(16<<20) || l > floor+(16<<20) {
		t.Fatalf("1 GB mapped: limit %d, want the floor ~%d", l, floor)
	}
	file = 40 << 20
	for i := 0; i < mappedWindow-1; i++ {
		FitBulkLimit()
		if l := debug.SetMemoryLimit(-1); l == start {
			t.Fatalf("limit back to the start %d commits after the peak, within the window of %d", i+1, mappedWindow)
		}
	}
	FitBulkLimit()
	if l := debug.SetMemoryLimit(-1); l != start {
		t.Fatalf("small mapped share for a window: limit %d, want the start's %d", l, start)
	}
	// A limit the program set meanwhile stays.
	debug.SetMemoryLimit(3 << 30)
	file = 900 << 20
	FitBulkLimit()
	if l := debug.SetMemoryLimit(-1); l != 3<<30 {
		t.Fatalf("program's limit changed to %d", l)
	}
	end()
	if l := debug.SetMemoryLimit(-1); l != 3<<30 {
		t.Fatalf("program's limit after the catch-up: %d", l)
	}
}
