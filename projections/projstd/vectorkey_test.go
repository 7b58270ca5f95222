package projstd

import (
	"bytes"
	"encoding/hex"
	"github.com/unlimitedcontext/ucl/projections"
	"sort"
	"strings"
	"testing"
)

func TestVecKey(t *testing.T) {
	hexID := strings.Repeat("0f", 16)
	for _, tc := range []struct {
		id   string
		tag  byte
		size int
	}{
		{hexID, 0, 17},
		{strings.ToUpper(hexID), 1, 33}, // upper case: not the canonical form
		{hexID[:31], 1, 32},
		{hexID + "0", 1, 34},
		{"", 1, 1},
		{"chunk-1", 1, 8},
	} {
		k := projections.IDKey(tc.id)
		if k[0] != tc.tag || len(k) != tc.size {
			t.Fatalf("projections.IDKey(%q) = %x, want tag %d and %d bytes", tc.id, k, tc.tag, tc.size)
		}
		if id, ok := projections.IDOfKey(k); !ok || id != tc.id {
			t.Fatalf("projections.IDOfKey(projections.IDKey(%q)) = %q, %v", tc.id, id, ok)
		}
	}
	for _, k := range [][]byte{nil, {0}, {2, 'a'}, append([]byte{0}, make([]byte, 15)...), append([]byte{1}, hexID...)} {
		if id, ok := projections.IDOfKey(k); ok {
			t.Fatalf("projections.IDOfKey(%x) = %q, want a refusal", k, id)
		}
	}
}

// Within a tag, key order is id order: the buckets iterate hex ids (and,
// separately, other ids) as the ids sort.
func TestVecKeyOrder(t *testing.T) {
	var ids []string
	for i := 0; i < 300; i++ {
		b := make([]byte, 16)
		for j := range b {
			b[j] = byte(i*31 + j*i*7)
		}
		ids = append(ids, hex.EncodeToString(b), "c"+hex.EncodeToString(b[:3]))
	}
	byKey := append([]string(nil), ids...)
	sort.Slice(byKey, func(i, j int) bool {
		return bytes.Compare(projections.IDKey(byKey[i]), projections.IDKey(byKey[j])) < 0
	})
	var hexes, others []string
	for _, id := range byKey {
		if projections.IDKey(id)[0] == 0 {
			hexes = append(hexes, id)
		} else {
			others = append(others, id)
		}
	}
	if len(hexes) != 300 || !sort.StringsAreSorted(hexes) || !sort.StringsAreSorted(others) {
		t.Fatal("key order is not id order within a tag")
	}
}

func FuzzVecKey(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(append([]byte{1}, "chunk-1"...))
	f.Add(append([]byte{1}, strings.Repeat("ab", 16)...))
	f.Add(append([]byte{1}, strings.Repeat("AB", 16)...))
	f.Add([]byte{0, 1})
	f.Add([]byte{2})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, k []byte) {
		if id, ok := projections.IDOfKey(k); ok && !bytes.Equal(projections.IDKey(id), k) {
			t.Fatalf("key %x decodes to %q, which encodes to %x", k, id, projections.IDKey(id))
		}
		id := string(k)
		if got, ok := projections.IDOfKey(projections.IDKey(id)); !ok || got != id {
			t.Fatalf("id %q: round trip gives %q, %v", id, got, ok)
		}
	})
}
