package vector

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHNSWDeltas: saving a file and then only deltas, at arbitrary points,
// and opening file + deltas gives the graph of never stopping, byte for
// byte; continuing from it too.
func TestHNSWDeltas(t *testing.T) {
	vs := clusteredData(31, 1200, 24, 8, 0.1)
	opts := HNSWOptions{M: 6, EfConstruction: 32}
	a := mustHNSW(t, 24, opts)
	runOps(t, a, vs, 7, 0, 3000)

	b := mustHNSW(t, 24, opts)
	runOps(t, b, vs, 7, 0, 900)
	path := writeGraphFile(t, b)
	g, err := OpenHNSWFile(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if g.DeltaPending() {
		t.Fatal("a freshly opened file has pending changes")
	}
	var deltas bytes.Buffer
	for _, cut := range [][2]int{{900, 901}, {901, 1500}, {1500, 1500}, {1500, 2400}, {2400, 3000}} {
		runOps(t, g, vs, 7, cut[0], cut[1])
		if _, err := g.WriteDelta(&deltas); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadFile(path)
	c, err := OpenHNSWFile(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyDeltas(deltas.Bytes()); err != nil {
		t.Fatal(err)
	}
	want, _ := a.MarshalBinary()
	got, _ := c.MarshalBinary()
	if !bytes.Equal(want, got) {
		t.Fatal("file + deltas is not the graph of never stopping")
	}
	if a.Digest() != c.Digest() || a.Len() != c.Len() {
		t.Fatal("digest or length differ")
	}
	runOps(t, a, vs, 7, 3000, 3500)
	runOps(t, c, vs, 7, 3000, 3500)
	want, _ = a.MarshalBinary()
	got, _ = c.MarshalBinary()
	if !bytes.Equal(want, got) {
		t.Fatal("continuing after deltas changed the graph")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("applying deltas wrote to the file")
	}

	// A damaged record is refused; the records before it stay applied.
	bad := append([]byte(nil), deltas.Bytes()...)
	bad[len(bad)-40] ^= 1
	d, _ := OpenHNSWFile(path, opts)
	if err := d.ApplyDeltas(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged delta: %v", err)
	}
	if err := d.ApplyDeltas(deltas.Bytes()[:len(deltas.Bytes())-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated delta: %v", err)
	}
	// Without a saved mark there is no delta.
	if _, err := mustHNSW(t, 24, opts).WriteDelta(&deltas); !errors.Is(err, ErrNoDelta) {
		t.Fatalf("delta of an unsaved graph: %v", err)
	}
}

// FuzzApplyDeltas: whatever a delta says, applying it either fails with
// ErrCorrupt or leaves a graph that searches, and whose full encoding
// passes every check of the decoder.
func FuzzApplyDeltas(f *testing.F) {
	base := filepath.Join("testdata", "hnsw-v2.golden")
	opts := HNSWOptions{M: 4, EfConstruction: 16}
	g, err := OpenHNSWFile(base, opts)
	if err != nil {
		f.Fatal(err)
	}
	var seed bytes.Buffer
	vs := uniformData(9, 60, 8)
	for i := 0; i < 60; i += 15 {
		for j := i; j < i+15; j++ {
			if j%7 == 3 {
				_ = g.Delete(idOf(j - 2))
			}
			if err := g.Add(idOf(j), vs[j]); err != nil {
				f.Fatal(err)
			}
		}
		if _, err := g.WriteDelta(&seed); err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte(nil), seed.Bytes()...))
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, resealDelta(data)} {
			g, err := OpenHNSWFile(base, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.ApplyDeltas(in); err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("not ErrCorrupt: %v", err)
				}
				continue
			}
			q := make([]float32, 8)
			q[0] = 1
			if _, err := g.Search(q, 5); err != nil {
				t.Fatal(err)
			}
			out, err := g.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if err := mustHNSW(t, 8, HNSWOptions{}).UnmarshalBinary(out); err != nil {
				t.Fatalf("graph after a delta fails the decoder: %v", err)
			}
		}
	})
}

// resealDelta fixes the first record's length and checksum so the fuzzer
// reaches the structural checks.
func resealDelta(data []byte) []byte {
	if len(data) < 4+32 {
		return data
	}
	body := data[4 : len(data)-32]
	out := make([]byte, 4, len(data))
	out[0], out[1], out[2], out[3] = byte(len(body)), byte(len(body)>>8), byte(len(body)>>16), byte(len(body)>>24)
	out = append(out, body...)
	sum := sha256Sum(string(body))
	return append(out, sum[:]...)
}
