package vector

import (
	"bytes"
	"errors"
	"math"
	"slices"
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
	for _, n := range []int{300, 3 * slotBlock} {
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
	if _, err := ScanSlots(v, dim, 1, 5, bytes.NewReader(file), 0); err == nil {
		t.Fatal("a slot beyond the file: no error")
	}
	if err := EncodeSlot(file[:sl], []float32{float32(math.NaN())}); err == nil {
		t.Fatal("encoded a NaN vector")
	}
}
