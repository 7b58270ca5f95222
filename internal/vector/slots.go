package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"unsafe"
)

// Code slots: the form in which a store too large to hold in memory is
// searched exactly. A slot is what Exact keeps to scan one vector (q8.go):
//
//	slot = step float64 LE ‖ codes int8 × dim        (8 + dim bytes)
//
// where codes and step are quantizeVec of the vector normalised as Add
// stores it. A zero vector, and an empty (deleted) slot, are all zeros
// (step 0): never a candidate. Slots sit back to back in a file that the
// caller numbers and keeps (projstd's scan.bin); ScanSlots reads them in
// blocks through an io.ReaderAt, so a scan costs the process a few
// blocks of memory however large the file (read from the page cache, not
// mapped: a mapped scan would count the whole file in the process's
// resident set), and adding a vector costs one slot, whatever the size.
//
// ScanSlots computes the approximate score exactly as Exact.Search does
// and returns every slot whose score is at least the rerank(k)-th best,
// ties at that boundary included. Those slots' ids and vectors, given to
// ScanSearch, give exactly Exact.Search's answer over the same (id,
// vector) set: ScanSearch keeps the rerank(k) best of them by (score, id),
// which are Exact's rerank(k) best, then ranks them by the float score.

// SlotLen returns the length of a code slot of dim dimensions.
func SlotLen(dim int) int { return 8 + dim }

// EncodeSlot writes the code slot of v (dim = len(v)) into dst (len
// SlotLen(dim)). It fails as Add fails on v.
func EncodeSlot(dst []byte, v []float32) error {
	dim := len(v)
	if len(dst) != SlotLen(dim) {
		return fmt.Errorf("encode slot: %d bytes for %d dimensions: %w", len(dst), dim, ErrDimension)
	}
	// The normalised vector on the stack at the usual dimensions, and the
	// codes written in place: a catch-up codes every vector it stores.
	var buf [1024]float32
	nb := buf[:0]
	if dim > len(buf) {
		nb = make([]float32, dim)
	}
	nv, zero, err := normalizedInto(nb[:dim], v, dim)
	if err != nil {
		return fmt.Errorf("encode slot: %w", err)
	}
	if zero {
		clear(dst)
		return nil
	}
	s := quantizeVec(nv, unsafe.Slice((*int8)(unsafe.Pointer(&dst[8])), dim))
	binary.LittleEndian.PutUint64(dst, math.Float64bits(s))
	return nil
}

// EncodeSlotQ8 writes into dst what EncodeSlot writes for the vector v
// whose values are float32(codes[i]) * step (float32 products: an 8-bit
// vector with its own step, like projstd's records), without the
// normalisation and re-quantisation per component when the codes' largest
// magnitude is 127 and step is far from float32's limits.
//
// Why the codes come back unchanged: normalising divides every value by
// one norm and rounds to float32, which keeps their order, so the largest
// magnitude m is that of a code ±127; quantizeVec then rounds
// v[i]/norm · 127/m, which is codes[i] · (1 + ε) with |ε| ≤ 2.4e-7 (four
// float32 roundings, three float64 ones), at most 3e-5 from codes[i]. So
// only the step, m/127, is computed, and m needs the norm (the squared
// norm summed in EncodeSlot's order) and one division. Any other input
// goes through EncodeSlot.
func EncodeSlotQ8(dst []byte, codes []int8, step float32) error {
	dim := len(codes)
	if len(dst) != SlotLen(dim) {
		return fmt.Errorf("encode slot: %d bytes for %d dimensions: %w", len(dst), dim, ErrDimension)
	}
	top, hi := -1, 0
	for i, c := range codes {
		a := int(c)
		if a < 0 {
			a = -a // 128 for -128: not a code of quantizeVec (EncodeSlot's path)
		}
		if a > hi {
			hi, top = a, i
		}
	}
	if hi != 127 || !(step >= 1e-30 && step <= 1e30) {
		v := make([]float32, dim)
		for i, c := range codes {
			v[i] = float32(c) * step
		}
		return EncodeSlot(dst, v)
	}
	var ss float64
	for _, c := range codes {
		x := float32(c) * step
		ss += float64(float64(x) * float64(x))
	}
	// As normalizedInto, for the largest value alone.
	m := float32(codes[top]) * step
	if math.Abs(ss-1) > unitTolerance {
		m = float32(float64(m) / math.Sqrt(ss))
	}
	if m < 0 {
		m = -m
	}
	binary.LittleEndian.PutUint64(dst, math.Float64bits(float64(m)/127))
	copy(dst[8:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(codes))), dim))
	return nil
}

// SlotCand is a candidate slot of ScanSlots: its number and approximate
// score.
type SlotCand struct {
	Slot  uint64
	Score float32
}

// slotBlock is how many slots ScanSlots reads at once (~100 KB at 384
// dimensions).
const slotBlock = 256

// ErrSlotFile is returned (wrapped) when a slot's step is not a valid
// step (negative, NaN, infinite): the slot file is damaged.
var ErrSlotFile = errors.New("vector: damaged slot file")

// ScanSlots scans n slots of dimension dim stored back to back in r from
// offset off, scores them against q as Exact.Search does, and returns
// the slots whose score is among the rerank(k) best, with every slot tied
// with the last of those (so the caller can break the ties by id), in
// slot order. A zero q returns none. From two blocks on, the halves are
// read and scored by two goroutines.
func ScanSlots(q []float32, dim, k int, n uint64, r io.ReaderAt, off int64) ([]SlotCand, error) {
	sl := SlotLen(dim)
	return scanSlots(q, dim, k, n, func(b, m uint64, buf []byte) ([]byte, error) {
		if buf == nil {
			buf = make([]byte, slotBlock*sl)
		}
		chunk := buf[:int(m)*sl]
		if _, err := r.ReadAt(chunk, off+int64(b)*int64(sl)); err != nil {
			return nil, fmt.Errorf("scan slots: read slots %d..%d: %w", b, b+m, err)
		}
		return chunk, nil
	})
}

// ScanSlotsMem is ScanSlots over slots held in memory (len(slots) a
// multiple of SlotLen(dim); slot s at s·SlotLen(dim)): the same
// candidates, without a read (a long-lived process keeps its slots).
func ScanSlotsMem(q []float32, dim, k int, slots []byte) ([]SlotCand, error) {
	sl := SlotLen(dim)
	if len(slots)%sl != 0 {
		return nil, fmt.Errorf("scan slots: %d bytes, slots of %d: %w", len(slots), sl, ErrSlotFile)
	}
	return scanSlots(q, dim, k, uint64(len(slots)/sl), func(b, m uint64, _ []byte) ([]byte, error) {
		return slots[int(b)*sl : int(b+m)*sl], nil
	})
}

// scanSlots is ScanSlots over n slots whose block [b, b+m) read returns
// (m ≤ slotBlock; buf is the calling goroutine's buffer from its
// previous call, nil at first, which read may fill and return).
func scanSlots(q []float32, dim, k int, n uint64, read func(b, m uint64, buf []byte) ([]byte, error)) ([]SlotCand, error) {
	if k <= 0 {
		return nil, fmt.Errorf("scan slots: k=%d: %w", k, ErrInvalidK)
	}
	nq, zero, err := normalized(q, dim)
	if err != nil {
		return nil, fmt.Errorf("scan slots: %w", err)
	}
	if zero || n == 0 {
		return nil, nil
	}
	cq, qs := quantizeQuery(nq)
	sl := SlotLen(dim)
	scan := func(lo, hi uint64, t *slotTop) error {
		var buf []byte
		for b := lo; b < hi; b += slotBlock {
			m := min(hi-b, slotBlock)
			chunk, err := read(b, m, buf)
			if err != nil {
				return err
			}
			if cap(chunk) >= slotBlock*sl {
				buf = chunk[:cap(chunk)]
			}
			for j := 0; j < int(m); j++ {
				s := chunk[j*sl : (j+1)*sl]
				vs := math.Float64frombits(binary.LittleEndian.Uint64(s))
				if vs == 0 {
					continue
				}
				if !(vs > 0) || math.IsInf(vs, 0) {
					return fmt.Errorf("scan slots: slot %d step %v: %w", b+uint64(j), vs, ErrSlotFile)
				}
				sc := approx(dotQ8(cq, int8s(s[8:])), qs, vs)
				if t.admits(sc) {
					t.offer(SlotCand{Slot: b + uint64(j), Score: sc})
				}
			}
		}
		return nil
	}
	want := rerank(k)
	a := &slotTop{r: want}
	if n < 2*slotBlock {
		if err := scan(0, n, a); err != nil {
			return nil, err
		}
	} else {
		b := &slotTop{r: want}
		mid := n / 2
		var berr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); berr = scan(mid, n, b) }()
		aerr := scan(0, mid, a)
		wg.Wait()
		if err := errors.Join(aerr, berr); err != nil {
			return nil, err
		}
		for _, c := range b.all() {
			a.offer(c)
		}
	}
	out := a.all()
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}

// slotTop keeps the r best candidates by score (a min-heap on score, the
// worst at the root) and, beside them, every candidate tied with the
// root's score that did not fit: together, all candidates scoring at
// least the r-th best score. Slot numbers do not decide anything.
type slotTop struct {
	r    int
	h    []SlotCand
	ties []SlotCand // score == h[0].Score, beyond r
}

func (t *slotTop) admits(s float32) bool { return len(t.h) < t.r || s >= t.h[0].Score }

func (t *slotTop) offer(c SlotCand) {
	if len(t.h) < t.r {
		t.h = append(t.h, c)
		i := len(t.h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if t.h[p].Score <= t.h[i].Score {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	root := t.h[0].Score
	switch {
	case c.Score < root:
		return
	case c.Score == root:
		t.ties = append(t.ties, c)
		return
	}
	out := t.h[0]
	t.h[0] = c
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.h[l].Score < t.h[m].Score {
			m = l
		}
		if r < len(t.h) && t.h[r].Score < t.h[m].Score {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
	// The evicted candidate, and the ties, still tie the r-th best
	// score if the new root has it.
	if t.h[0].Score == root {
		t.ties = append(t.ties, out)
	} else {
		t.ties = t.ties[:0]
	}
}

func (t *slotTop) all() []SlotCand {
	return append(append([]SlotCand(nil), t.h...), t.ties...)
}

// int8s views b as int8s (same memory, no copy).
func int8s(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), len(b))
}

// DigestEach is ContentDigest of the (id, vector) pairs read gives, each
// vector normalised as Add stores it: the Digest of an index holding
// them, computed without one. ids need not be sorted; read(id, dst)
// writes id's vector into dst (len dim).
func DigestEach(dim int, ids []string, read func(id string, dst []float32) error) ([32]byte, error) {
	raw := make([]float32, dim)
	nv := make([]float32, dim)
	var rerr error
	d := ContentDigest(dim, ids, func(id string) []float32 {
		if rerr != nil {
			return nv
		}
		if err := read(id, raw); err != nil {
			rerr = err
			return nv
		}
		if _, _, err := normalizedInto(nv, raw, dim); err != nil {
			rerr = fmt.Errorf("digest vector %q: %w", id, err)
		}
		return nv
	})
	if rerr != nil {
		return [32]byte{}, rerr
	}
	return d, nil
}
