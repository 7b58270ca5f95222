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
