package projections

import (
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
