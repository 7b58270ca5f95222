package vector

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// reseal replaces (or appends) the SHA-256 trailer so the fuzzer reaches
// the structural decoder instead of stopping at the checksum.
func reseal(data []byte) []byte {
	body := data
	if len(body) >= sha256.Size {
		body = body[:len(body)-sha256.Size]
	}
	sum := sha256.Sum256(body)
	return append(append([]byte(nil), body...), sum[:]...)
}

func seedIndexes(f *testing.F, newIndex func() Index) {
	for _, n := range []int{0, 1, 5, 40} {
		idx := newIndex()
		for i, v := range uniformData(uint64(n), n, 4) {
			if err := idx.Add(idOf(i), v); err != nil {
				f.Fatal(err)
			}
		}
		if n > 3 {
			_ = idx.Add("zero", make([]float32, 4))
			_ = idx.Delete(idOf(1))
		}
		b, err := idx.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if v1, err := os.ReadFile(filepath.Join("testdata", "hnsw-v1.golden")); err == nil {
		f.Add(v1)
	}
	if v2, err := os.ReadFile(filepath.Join("testdata", "hnsw-v2.golden")); err == nil {
		f.Add(v2)
	}
	f.Add([]byte{})
	f.Add([]byte("UCLVHNSW\x01\x00"))
	f.Add([]byte("UCLVHNSW\x02\x00"))
	f.Add([]byte("UCLVEXAC\x01\x00"))
}

func fuzzDecode(t *testing.T, newIndex func() Index, data []byte) {
	for _, in := range [][]byte{data, reseal(data)} {
		idx := newIndex()
		if err := idx.UnmarshalBinary(in); err != nil {
			continue
		}
		out, err := idx.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		again := newIndex()
		if err := again.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-decoding our own encoding: %v", err)
		}
		out2, _ := again.MarshalBinary()
		if !bytes.Equal(out, out2) || again.Digest() != idx.Digest() {
			t.Fatal("encoding is not a fixed point")
		}
		q := make([]float32, idx.Dim())
		q[0] = 1
		if _, err := idx.Search(q, 3); err != nil {
			t.Fatalf("search decoded index: %v", err)
		}
		if err := idx.Add("fuzz-new", q); err != nil {
			t.Fatalf("add to decoded index: %v", err)
		}
		if idx.Len() > 0 {
			if _, err := idx.Search(q, 5); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func FuzzUnmarshalHNSW(f *testing.F) {
	newIndex := func() Index {
		g, _ := NewHNSW(4, HNSWOptions{M: 4, EfConstruction: 8})
		return g
	}
	seedIndexes(f, newIndex)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, newIndex, data) })
}

func FuzzUnmarshalExact(f *testing.F) {
	newIndex := func() Index {
		x, _ := NewExact(4)
		return x
	}
	seedIndexes(f, newIndex)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, newIndex, data) })
}

// FuzzEncodeSlotQ8: for any codes and step, EncodeSlotQ8 writes
// EncodeSlot's slot (or fails as it does) for the vector they decode to.
func FuzzEncodeSlotQ8(f *testing.F) {
	f.Add([]byte{127, 3, 0x81, 40}, float32(0.004))
	f.Add([]byte{0x81, 1, 2}, float32(0.0079))
	f.Add([]byte{0x80, 127}, float32(0.001))
	f.Add([]byte{127}, float32(1e-39))
	f.Add([]byte{5, 6}, float32(0))
	f.Fuzz(func(t *testing.T, b []byte, step float32) {
		if len(b) == 0 || len(b) > 2048 {
			return
		}
		codes := make([]int8, len(b))
		v := make([]float32, len(b))
		for i, c := range b {
			codes[i] = int8(c)
			v[i] = float32(codes[i]) * step
		}
		want := make([]byte, SlotLen(len(b)))
		werr := EncodeSlot(want, v)
		got := make([]byte, SlotLen(len(b)))
		gerr := EncodeSlotQ8(got, codes, step)
		if (werr == nil) != (gerr == nil) || (werr == nil && !bytes.Equal(got, want)) {
			t.Fatalf("codes %v step %g: %x (err %v), EncodeSlot %x (err %v)", codes, step, got, gerr, want, werr)
		}
	})
}
