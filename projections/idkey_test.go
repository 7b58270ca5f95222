package projections

import (
	"bytes"
	"sort"
	"strings"
	"testing"
)

func TestIDKeyRoundTripAndOrder(t *testing.T) {
	ids := []string{
		"00000000000000000000000000000000", "0123456789abcdef0123456789abcdef",
		"ffffffffffffffffffffffffffffffff", "a0", "c-1-10", "0123456789ABCDEF0123456789ABCDEF",
		"0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef0", "\x00", "z",
	}
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = IDKey(id)
		got, ok := IDOfKey(keys[i])
		if !ok || got != id {
			t.Fatalf("IDOfKey(IDKey(%q)) = %q, %v", id, got, ok)
		}
		if raw := len(id) == 32 && isLowerHex(id); raw != (len(keys[i]) == 17 && keys[i][0] == 0) {
			t.Fatalf("%q stored as %x", id, keys[i])
		}
	}
	// Within each form key order is id order, and no other id sorts
	// between two raw ones.
	byKey := append([]string{}, ids...)
	sort.Slice(byKey, func(i, j int) bool { return bytes.Compare(IDKey(byKey[i]), IDKey(byKey[j])) < 0 })
	var raw, other []string
	seenOther := false
	for _, id := range byKey {
		if len(id) == 32 && isLowerHex(id) {
			if seenOther {
				t.Fatalf("raw id %q sorts after another id: %q", id, byKey)
			}
			raw = append(raw, id)
		} else {
			seenOther = true
			other = append(other, id)
		}
	}
	if !sort.StringsAreSorted(raw) || !sort.StringsAreSorted(other) {
		t.Fatalf("key order is not id order within a form: %q", byKey)
	}
	// One stored form per id: a hex id under the string tag is refused.
	// (The empty id is stored as 1 ‖ nothing and round-trips: dedup and
	// vectors relied on that before the three encoders became this one.)
	if id, ok := IDOfKey(IDKey("")); !ok || id != "" {
		t.Fatalf("empty id: %q, %v", id, ok)
	}
	for _, k := range [][]byte{append([]byte{1}, strings.Repeat("ab", 16)...), {0, 1, 2}, {2, 'a'}, nil} {
		if id, ok := IDOfKey(k); ok {
			t.Fatalf("IDOfKey(%x) = %q, want refused", k, id)
		}
	}
}

func FuzzIDOfKey(f *testing.F) {
	f.Add(IDKey("0123456789abcdef0123456789abcdef"))
	f.Add(IDKey("c-1-10"))
	f.Add(append([]byte{1}, strings.Repeat("ab", 16)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, k []byte) {
		id, ok := IDOfKey(k)
		if ok && !bytes.Equal(IDKey(id), k) {
			t.Fatalf("IDOfKey(%x) = %q, stored again as %x", k, id, IDKey(id))
		}
	})
}
