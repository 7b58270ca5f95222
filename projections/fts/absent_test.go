package fts

import (
	"testing"
)

// A bulk build from empty skips side.db lookups of chunks it never stored
// (BeginBulk's filter); chunks it stored, edited or deleted later in the
// build must still be found, so the index ends as a plain build's.
func TestBulkBuildSkipsAbsentLookups(t *testing.T) {
	events := randomEvents(5, 1500)
	plain := openT(t, t.TempDir(), Options{})
	applyAll(t, plain, events, 97)
	want, err := plain.Digest()
	if err != nil {
		t.Fatal(err)
	}
	wantN, err := plain.Count()
	if err != nil {
		t.Fatal(err)
	}

	x := openT(t, t.TempDir(), Options{BatchSize: 31})
	x.BeginBulk()
	if x.stored == nil {
		t.Fatal("BeginBulk on an empty index made no filter")
	}
	half := len(events) / 2
	applyAll(t, x, events[:half], 97)
	if err := x.EndBulk(); err != nil {
		t.Fatal(err)
	}
	// A second bulk catch-up over committed chunks must look every id up.
	x.BeginBulk()
	if x.stored != nil {
		t.Fatal("BeginBulk over stored chunks made a filter")
	}
	applyAll(t, x, events[half:], 97)
	if err := x.EndBulk(); err != nil {
		t.Fatal(err)
	}
	got, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	n, err := x.Count()
	if err != nil {
		t.Fatal(err)
	}
	if n != wantN || got != want {
		t.Fatalf("bulk build: %d chunks, digest %x; plain build: %d chunks, %x", n, got[:4], wantN, want[:4])
	}
}
