package vector

import (
	"errors"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

// SearchIn equals a brute force over an index holding only the subset.
func TestExactSearchInEqualsSubsetIndex(t *testing.T) {
	const dim = 16
	r := rand.New(rand.NewSource(7))
	x, err := NewExact(dim)
	if err != nil {
		t.Fatal(err)
	}
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	var all []string
	for i := 0; i < 20000; i++ { // above exactParallelMin: the two-goroutine scan
		id := "c" + string(rune('a'+i%26)) + itoaTest(i)
		v := vec()
		if i%97 == 0 {
			v = make([]float32, dim) // zero vectors never match
		}
		if err := x.Add(id, v); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	for _, id := range all[:500] { // deleted: skipped
		if err := x.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	var subset []string
	for i, id := range all {
		if i%3 == 0 {
			subset = append(subset, id)
		}
	}
	subset = append(subset, subset[700], "unknown") // a repeat and an unknown id
	ref, err := NewExact(dim)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range subset {
		if v := x.vector(id); v != nil {
			if err := ref.Add(id, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for trial := 0; trial < 5; trial++ {
		q := vec()
		for _, k := range []int{1, 10, 200, 20000} {
			got, err := x.SearchIn(q, k, subset)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Search(q, k)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("k=%d: SearchIn differs from a search of the subset alone (%d vs %d hits)", k, len(got), len(want))
			}
			seen := map[string]bool{}
			for _, h := range got {
				if seen[h.ID] {
					t.Fatalf("k=%d: %s returned twice", k, h.ID)
				}
				seen[h.ID] = true
			}
		}
	}
	// The order of ids does not matter.
	shuffled := append([]string(nil), subset...)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	q := vec()
	a, errA := x.SearchIn(q, 50, subset)
	b, errB := x.SearchIn(q, 50, shuffled)
	if errA != nil || errB != nil || len(a) != 50 || !reflect.DeepEqual(a, b) {
		t.Fatalf("subset order changed the hits (%v, %v)", errA, errB)
	}
	if !sort.SliceIsSorted(a, func(i, j int) bool { return better(a[i].Score, a[i].ID, a[j].Score, a[j].ID) }) {
		t.Fatal("hits not in rank order")
	}
}

func TestExactSearchInEmptyAndBadK(t *testing.T) {
	x, err := NewExact(4)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add("a", []float32{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if h, err := x.SearchIn([]float32{1, 0, 0, 0}, 5, nil); err != nil || len(h) != 0 {
		t.Fatalf("empty subset: %v, %v", h, err)
	}
	if h, err := x.SearchIn([]float32{1, 0, 0, 0}, 5, []string{"b"}); err != nil || len(h) != 0 {
		t.Fatalf("unknown ids only: %v, %v", h, err)
	}
	if _, err := x.SearchIn([]float32{1, 0, 0, 0}, 0, []string{"a"}); err == nil {
		t.Fatal("k=0 accepted")
	}
	if _, err := x.SearchIn([]float32{1, 0}, 1, []string{"a"}); err == nil {
		t.Fatal("wrong dimension accepted")
	}
}

func itoaTest(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}

// SearchPositions over position lists from Positions equals SearchIn over
// their ids, split into lists in any way; once the index adds or deletes
// a vector, the old positions are refused, and a replaced vector (same
// position) keeps them valid.
func TestExactSearchPositionsEqualsSearchIn(t *testing.T) {
	const dim = 16
	x := mustExact(t, dim)
	addAll(t, x, uniformData(8, 20000, dim))
	more := uniformData(9, 8, dim) // queries and replacements
	var all []string
	for i := 0; i < 20000; i++ {
		all = append(all, idOf(i))
	}
	var a, b []string
	for i, id := range all {
		switch i % 7 {
		case 0:
			a = append(a, id)
		case 3:
			b = append(b, id)
		}
	}
	b = append(b, a[5], "unknown") // a repeat across lists, an unknown id
	pa, la := x.Positions(a)
	pb, lb := x.Positions(b)
	if la != lb || la != x.Layout() || len(pa) != len(a) || len(pb) != len(b)-1 {
		t.Fatalf("layouts %d %d %d, %d and %d positions", la, lb, x.Layout(), len(pa), len(pb))
	}
	for j, k := range []int{1, 10, 200, 5000} {
		q := more[j]
		got, err := x.SearchPositions(q, k, [][]int32{pa, pb}, la)
		if err != nil {
			t.Fatal(err)
		}
		want, err := x.SearchIn(q, k, append(append([]string(nil), a...), b...))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || !reflect.DeepEqual(got, want) {
			t.Fatalf("k=%d: %d hits by positions, %d by ids (or differ)", k, len(got), len(want))
		}
	}
	if err := x.Add(all[3], more[4]); err != nil { // replaced in place
		t.Fatal(err)
	}
	if _, err := x.SearchPositions(more[5], 10, [][]int32{pa}, la); err != nil {
		t.Fatalf("after a replacement: %v", err)
	}
	if err := x.Delete(all[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := x.SearchPositions(more[5], 10, [][]int32{pa}, la); !errors.Is(err, ErrStalePositions) {
		t.Fatalf("after a delete: %v, want ErrStalePositions", err)
	}
	pa, la = x.Positions(a)
	if err := x.Add("new", more[6]); err != nil {
		t.Fatal(err)
	}
	if _, err := x.SearchPositions(more[7], 10, [][]int32{pa}, la); !errors.Is(err, ErrStalePositions) {
		t.Fatalf("after an add: %v, want ErrStalePositions", err)
	}
}
