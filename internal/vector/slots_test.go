package vector

import (
	"bytes"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestScanSlotsIsExact: the slots ScanSlots selects, scored by
// ScanSearch, answer what Exact.Search answers over the same vectors,
// with duplicates (ties at the candidate boundary, broken by id), zero
// vectors and emptied slots among them, through the one-goroutine and
// the two-goroutine scans. The ids are numbered against slot order, so a
// tie broken by slot instead of id would show.
func TestScanSlotsIsExact(t *testing.T) {
	const dim = 32
	for _, n := range []int{300, 2*slotBlock + 77} {
		vs := clusteredData(7, n, dim, 8, 0.3)
		for i := 0; i < n; i += 5 {
			vs[i] = vs[0] // 1/5 identical: ties at every boundary
		}
		vs[3] = make([]float32, dim)
		x := mustExact(t, dim)
		sl := SlotLen(dim)
		file := make([]byte, n*sl)
		ids := make([]string, n)
		for i, v := range vs {
			ids[i] = idOf(n - i)
			if i%7 == 6 {
				continue // an emptied slot: all zeros
			}
			if err := x.Add(ids[i], v); err != nil {
				t.Fatal(err)
			}
			if err := EncodeSlot(file[i*sl:(i+1)*sl], v); err != nil {
				t.Fatal(err)
			}
		}
		// The same slots in a file, after 3 bytes of header.
		f, err := os.Create(filepath.Join(t.TempDir(), "slots"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append([]byte("hdr"), file...)); err != nil {
			t.Fatal(err)
		}
		for qi, q := range clusteredData(8, 20, dim, 8, 0.3) {
			if qi == 0 {
				q = vs[0]
			}
			for _, k := range []int{1, 10, 50} {
				want, err := x.Search(q, k)
				if err != nil {
					t.Fatal(err)
				}
				cands, err := ScanSlots(q, dim, k, uint64(n), bytes.NewReader(file), 0)
				if err != nil {
					t.Fatal(err)
				}
				fromFile, err := ScanSlots(q, dim, k, uint64(n), f, 3)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(fromFile, cands) {
					t.Fatalf("n=%d query %d k=%d: the file gives %v, the reader %v", n, qi, k, fromFile, cands)
				}
				inMem, err := ScanSlotsMem(q, dim, k, file[:n*SlotLen(dim)])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(inMem, cands) {
					t.Fatalf("n=%d query %d k=%d: memory gives %v, the reader %v", n, qi, k, inMem, cands)
				}
				got, err := ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
					for _, c := range cands {
						if err := fn(ids[c.Slot], vs[c.Slot], nil); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d query %d k=%d: slots give %v, exact %v", n, qi, k, got, want)
				}
			}
		}
	}
}

// TestScanSlotsDamage: a slot whose step is not a step is an error that
// names the damage, and a short file is a read error.
func TestScanSlotsDamage(t *testing.T) {
	const dim = 16
	sl := SlotLen(dim)
	file := make([]byte, 4*sl)
	v := make([]float32, dim)
	v[0] = 1
	for i := 0; i < 4; i++ {
		if err := EncodeSlot(file[i*sl:(i+1)*sl], v); err != nil {
			t.Fatal(err)
		}
	}
	bad := slices.Clone(file)
	copy(bad[2*sl:], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}) // NaN
	if _, err := ScanSlots(v, dim, 1, 4, bytes.NewReader(bad), 0); !errors.Is(err, ErrSlotFile) {
		t.Fatalf("NaN step: %v", err)
	}
	if _, err := ScanSlotsMem(v, dim, 1, bad); !errors.Is(err, ErrSlotFile) {
		t.Fatalf("NaN step in memory: %v", err)
	}
	if _, err := ScanSlotsMem(v, dim, 1, file[:sl+1]); !errors.Is(err, ErrSlotFile) {
		t.Fatalf("a partial slot in memory: %v", err)
	}
	if _, err := ScanSlots(v, dim, 1, 5, bytes.NewReader(file), 0); err == nil {
		t.Fatal("a slot beyond the file: no error")
	}
	if err := EncodeSlot(file[:sl], []float32{float32(math.NaN())}); err == nil {
		t.Fatal("encoded a NaN vector")
	}
}

// BenchmarkScanSlots: an exact k=10 search of a file of 100K 384-d code
// slots (39 MB, read through the page cache), as projstd's scan.bin is
// searched. UCL_BENCH_SLOTS sets the count.
func BenchmarkScanSlots(b *testing.B) {
	n := 100_000
	if s := os.Getenv("UCL_BENCH_SLOTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("UCL_BENCH_SLOTS %q", s)
		}
	}
	const dim = 384
	path := filepath.Join(b.TempDir(), "slots")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sl := SlotLen(dim)
	buf := make([]byte, 0, 1024*sl)
	for i, v := range uniformData(3, n, dim) {
		buf = buf[:len(buf)+sl]
		if err := EncodeSlot(buf[len(buf)-sl:], v); err != nil {
			b.Fatal(err)
		}
		if len(buf) == cap(buf) || i == n-1 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	qs := uniformData(4, 16, dim)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ScanSlots(qs[i%len(qs)], dim, 10, uint64(n), f, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeSlotQ8: EncodeSlotQ8 writes EncodeSlot's bytes for the
// decoded 8-bit vector: codes from quantising random vectors (largest
// code ±127, steps of unit and far-from-unit vectors), codes whose
// largest magnitude is not 127 or is -128, zero, and extreme steps.
func TestEncodeSlotQ8(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for n := 0; n < 30000; n++ {
		dim := []int{384, 7, 96, 768, 1}[n%5]
		codes := make([]int8, dim)
		var step float32
		switch n % 7 {
		case 0: // not the ±127 of quantizeVec
			for i := range codes {
				codes[i] = int8(r.Intn(255) - 127)
			}
			step = float32(r.Float64() * 0.02)
		case 1: // -128 among them
			for i := range codes {
				codes[i] = int8(r.Intn(60) - 30)
			}
			codes[r.Intn(dim)], codes[r.Intn(dim)] = -128, 127
			step = 0.004
		case 2: // zero, or extreme steps
			step = []float32{0, 1e-38, 3e35, 1e-45}[r.Intn(4)]
			for i := range codes {
				codes[i] = int8(r.Intn(255) - 127)
			}
			codes[0] = 127
		default: // what projstd stores: a quantised vector
			v := make([]float32, dim)
			scale := []float64{1, 1e-3, 40}[n%3]
			for i := range v {
				v[i] = float32(r.NormFloat64() * scale)
			}
			if n%2 == 0 {
				v[r.Intn(dim)] *= 30
			}
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			if n%4 == 0 { // unit: normalizedInto's copy branch
				for i := range v {
					v[i] = float32(float64(v[i]) / math.Sqrt(ss))
				}
			}
			// projstd's quantize: step from the largest component of
			// the unit vector, each code its rounded multiple.
			if n%4 == 0 {
				ss = 0
				for _, x := range v {
					ss += float64(x) * float64(x)
				}
			}
			norm := math.Sqrt(ss)
			step = float32(maxAbs(v) / norm / 127)
			for i, x := range v {
				q := math.Round(float64(x) / norm / float64(step))
				codes[i] = int8(max(-127, min(127, q)))
			}
		}
		v := make([]float32, dim)
		for i, c := range codes {
			v[i] = float32(c) * step
		}
		want := make([]byte, SlotLen(dim))
		werr := EncodeSlot(want, v)
		got := make([]byte, SlotLen(dim))
		gerr := EncodeSlotQ8(got, codes, step)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("vector %d: error %v, EncodeSlot's %v", n, gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("vector %d (case %d, step %g): slot differs from EncodeSlot's", n, n%7, step)
		}
	}
}
