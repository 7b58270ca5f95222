package projstd

import (
	"testing"
)

func TestChunkRecordRoundTrip(t *testing.T) {
	for _, key := range [][]byte{{0, 1, 2, 3}, append([]byte{1}, "ünï"...)} {
		for _, m := range []chunkMeta{{}, {session: "s1", time: 1_700_000_000_000, seq: 42}, {session: "ünï", time: -5, seq: 1 << 40}} {
			b := appendChunk(key, m)
			k, raw, err := splitChunk(b)
			if err != nil || string(k) != string(key) {
				t.Fatalf("%+v: split %x, %v", m, k, err)
			}
			got, err := decodeMeta(raw)
			if err != nil || got != m {
				t.Fatalf("%+v: decoded %+v, %v", m, got, err)
			}
		}
	}
	// Keys cut short or empty, and records whose varints are not minimal
	// or cut short, are damage.
	for _, bad := range [][]byte{nil, {0x00}, {0x05, 1, 2}, {0x81, 0x00, 1}} {
		if _, _, err := splitChunk(bad); err == nil {
			t.Errorf("chunk %x split", bad)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x80, 0x00, 0x01}, {0x02, 0x80}, {0x02, 0x81, 0x00}} {
		if _, err := decodeMeta(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
	for _, s := range []uint64{0, 1, 127, 128, 1 << 40} {
		if got, err := decodeSlotRef(slotRef(s)); err != nil || got != s {
			t.Fatalf("slot %d: %d, %v", s, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x80, 0x00}, {0x01, 0x01}} {
		if _, err := decodeSlotRef(bad); err == nil {
			t.Errorf("slot %x decoded", bad)
		}
	}
}

// FuzzDecodeChunk: a "slots" value that decodes re-encodes to the same
// bytes (one encoding per record).
func FuzzDecodeChunk(f *testing.F) {
	f.Add(appendChunk([]byte{0, 1}, chunkMeta{session: "s1", time: 1_700_000_000_000, seq: 42}))
	f.Add(appendChunk([]byte{1, 'x'}, chunkMeta{time: -5, seq: 300}))
	f.Add([]byte{})
	f.Add([]byte{0x01, 0x00, 0x80, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		key, raw, err := splitChunk(b)
		if err != nil {
			return
		}
		m, err := decodeMeta(raw)
		if err != nil {
			return
		}
		if got := appendChunk(key, m); string(got) != string(b) {
			t.Fatalf("%x decoded to %x %+v, re-encodes to %x", b, key, m, got)
		}
	})
}

// FuzzDecodeSlotRef: an "ids" value that decodes re-encodes to the same
// bytes.
func FuzzDecodeSlotRef(f *testing.F) {
	f.Add(slotRef(0))
	f.Add(slotRef(1 << 33))
	f.Add([]byte{0x80, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSlotRef(b)
		if err != nil {
			return
		}
		if got := slotRef(s); string(got) != string(b) {
			t.Fatalf("%x decoded to %d, re-encodes to %x", b, s, got)
		}
	})
}
