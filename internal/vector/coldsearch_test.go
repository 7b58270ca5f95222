package vector

import (
	"fmt"
	"testing"
)

// The first searches of a graph opened from a file read vectors with
// pread (coldSearches): the same hits as the mapping gives and as the
// graph it was written from, every search of them; once the graph has
// changed (its pages are no longer the file's bytes) no search reads.
func TestColdSearchesReadTheSameVectors(t *testing.T) {
	old := coldSearches
	coldSearches = 30
	defer func() { coldSearches = old }()
	vs := clusteredData(23, 1200, 32, 10, 0.1)
	opts := HNSWOptions{M: 8, EfConstruction: 48, EfSearch: 40}
	a := mustHNSW(t, 32, opts)
	runOps(t, a, vs, 3, 0, 1600)
	b, err := OpenHNSWFile(writeGraphFile(t, a), opts)
	if err != nil {
		t.Fatal(err)
	}
	if b.file == nil || b.file.f == nil {
		t.Fatal("graph not mapped from its file")
	}
	for i := 0; i < 60; i++ { // 30 through pread, then 30 through the mapping
		q := vs[(i*31)%len(vs)]
		ha, err := a.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		hb, err := b.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ha) != fmt.Sprint(hb) {
			t.Fatalf("search %d (pread %v): file graph answers %v, built graph %v", i, i < 30, hb, ha)
		}
	}
	if n := b.file.searches.Load(); n != coldSearches {
		t.Fatalf("%d searches read with pread, want %d", n, coldSearches)
	}
	c, err := OpenHNSWFile(writeGraphFile(t, a), opts)
	if err != nil {
		t.Fatal(err)
	}
	runOps(t, c, vs, 3, 1600, 1700)
	if _, err := c.Search(vs[0], 10); err != nil {
		t.Fatal(err)
	}
	if n := c.file.searches.Load(); n != 0 {
		t.Fatalf("a changed graph read %d searches with pread", n)
	}
}
