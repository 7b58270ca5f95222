package timelines

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
		keys[i] = idKey(id)
		got, ok := idOfKey(keys[i])
		if !ok || got != id {
			t.Fatalf("idOfKey(idKey(%q)) = %q, %v", id, got, ok)
		}
		if raw := len(id) == 32 && isLowerHex(id); raw != (len(keys[i]) == 17 && keys[i][0] == 0) {
			t.Fatalf("%q stored as %x", id, keys[i])
		}
	}
	// Within each form key order is id order, and no other id sorts
	// between two raw ones.
	byKey := append([]string{}, ids...)
	sort.Slice(byKey, func(i, j int) bool { return bytes.Compare(idKey(byKey[i]), idKey(byKey[j])) < 0 })
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
	for _, k := range [][]byte{append([]byte{1}, strings.Repeat("ab", 16)...), {1}, {0, 1, 2}, {2, 'a'}, nil} {
		if id, ok := idOfKey(k); ok {
			t.Fatalf("idOfKey(%x) = %q, want refused", k, id)
		}
	}
}

func FuzzIDOfKey(f *testing.F) {
	f.Add(idKey("0123456789abcdef0123456789abcdef"))
	f.Add(idKey("c-1-10"))
	f.Add(append([]byte{1}, strings.Repeat("ab", 16)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, k []byte) {
		id, ok := idOfKey(k)
		if ok && !bytes.Equal(idKey(id), k) {
			t.Fatalf("idOfKey(%x) = %q, stored again as %x", k, id, idKey(id))
		}
	})
}

// A role that has a one-byte code is refused spelled out (one encoding
// per record), and so is a code past indexRoles.
func TestChunkRoleCodes(t *testing.T) {
	other := goldenChunks()[2]
	enc, err := encodeChunk(other)
	if err != nil {
		t.Fatal(err)
	}
	spelled := []byte("\x00\x08narrator")
	if !bytes.Contains(enc, spelled) {
		t.Fatalf("role not spelled out in %x", enc)
	}
	for _, repl := range []string{"\x00\x04user", "\x09"} {
		bad := bytes.Replace(enc, spelled, []byte(repl), 1)
		if _, err := decodeChunk(other.ID, bad); err == nil {
			t.Errorf("role %q decoded", repl)
		}
	}
	if _, err := decodeChunk(other.ID, bytes.Replace(enc, spelled, []byte("\x01"), 1)); err != nil {
		t.Errorf("coded role: %v", err)
	}
}
