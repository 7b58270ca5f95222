package projstd

import (
	"testing"
)

func TestVecValueRoundTrip(t *testing.T) {
	vals, rec := quantize([]float32{0.5, -0.25, 0, 1})
	for _, m := range []chunkMeta{{}, {session: "s1", time: 1_700_000_000_000, seq: 42}, {session: "ünï", time: -5, seq: 1 << 40, slot: 1 << 33}} {
		b := appendMeta(rec, m)
		r, raw, err := splitValue(b, 4)
		if err != nil || string(r) != string(rec) {
			t.Fatalf("%+v: split %x, %v", m, r, err)
		}
		got, err := decodeMeta(raw)
		if err != nil || got != m {
			t.Fatalf("%+v: decoded %+v, %v", m, got, err)
		}
		dst := make([]float32, 4)
		if err := decodeVecRecord(b, dst); err != nil {
			t.Fatal(err)
		}
		for i := range dst {
			if dst[i] != vals[i] {
				t.Fatalf("%+v: component %d: %v != %v", m, i, dst[i], vals[i])
			}
		}
	}
	// A value shorter than its vector, and records whose varints are not
	// minimal or cut short, are damage.
	if _, _, err := splitValue(rec[:7], 4); err == nil {
		t.Error("short value split")
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x80, 0x00, 0x01}, {0x02, 0x80}, {0x02, 0x81, 0x00}} {
		if _, err := decodeMeta(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

// FuzzDecodeMeta: a chunk record that decodes re-encodes to the same bytes
// (one encoding per record).
func FuzzDecodeMeta(f *testing.F) {
	f.Add(appendMeta(nil, chunkMeta{session: "s1", time: 1_700_000_000_000, seq: 42}))
	f.Add(appendMeta(nil, chunkMeta{time: -5, slot: 300}))
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		if got := appendMeta(nil, m); string(got) != string(b) {
			t.Fatalf("%x decoded to %+v, re-encodes to %x", b, m, got)
		}
	})
}
