package projections

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestAbsentKeys: every key added is reported, across layers and both
// key forms; few keys never added are; an empty filter reports none.
func TestAbsentKeys(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	hexID := func() string {
		b := make([]byte, 16)
		r.Read(b)
		return fmt.Sprintf("%x", b)
	}
	f := NewAbsentKeys()
	if f.Has(IDKey(hexID())) || f.Has(IDKey("x")) {
		t.Fatal("an empty filter has a key")
	}
	// Past the first layer's capacity, so that keys live in two layers.
	n := absentFirstKeys + absentFirstKeys/4
	var added [][]byte
	for i := 0; i < n; i++ {
		id := hexID()
		if i%16 == 0 {
			id = fmt.Sprintf("other-%d", i)
		}
		k := IDKey(id)
		f.Add(k)
		if i%97 == 0 {
			added = append(added, k)
		}
	}
	if len(f.layers) != 2 {
		t.Fatalf("%d layers after %d keys, want 2", len(f.layers), n)
	}
	for _, k := range added {
		if !f.Has(k) {
			t.Fatalf("key %x added but reported absent", k)
		}
	}
	fp := 0
	const tries = 100000
	for i := 0; i < tries; i++ {
		k := IDKey(hexID())
		if i%16 == 0 {
			k = IDKey(fmt.Sprintf("never-%d", i))
		}
		if f.Has(k) {
			fp++
		}
	}
	if fp > tries/20 {
		t.Fatalf("%d of %d keys never added reported present", fp, tries)
	}
	t.Logf("false positives: %d of %d", fp, tries)
}

// A filter sized for n keys takes them in one layer of ~10 bits a key,
// reports each, and few keys never added; past n it adds layers.
func TestAbsentKeysSized(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	key := func() []byte {
		b := make([]byte, 16)
		r.Read(b)
		return IDKey(fmt.Sprintf("%x", b))
	}
	const n = 50_000
	f := NewAbsentKeysSized(n)
	var added [][]byte
	for range n {
		k := key()
		f.Add(k)
		added = append(added, k)
	}
	if len(f.layers) != 1 || len(f.layers[0].words) != n*10/64 {
		t.Fatalf("%d layers (first %d words) for %d keys, want one of %d", len(f.layers), len(f.layers[0].words), n, n*10/64)
	}
	for _, k := range added {
		if !f.Has(k) {
			t.Fatalf("key %x added but reported absent", k)
		}
	}
	fp := 0
	for range n {
		if f.Has(key()) {
			fp++
		}
	}
	if fp > n/20 {
		t.Fatalf("%d of %d keys never added reported present", fp, n)
	}
	f.Add(key())
	if len(f.layers) != 2 {
		t.Fatalf("%d layers past %d keys, want 2", len(f.layers), n)
	}
}
