package vector

import (
	"sync"
)

// Exact search scans 8-bit codes, not float32 vectors (a quarter of the
// memory traffic, which is what bounds a scan of 100K×384 floats), then
// re-ranks a few candidates by the float dot product:
//
//   - every stored (normalised) vector also keeps codes in [-127, 127]
//     with its own step s = m/127, m = max|v[i]| (float64): c[i] = v[i]
//     × (127/m) rounded half away from zero (roundClamp);
//   - the query is coded the same way on 16 bits, c[i] in [-32767, 32767]
//     with step m/32767: its rounding error is 1/258 of an 8-bit code's,
//     so the approximate score's error is the stored vector's alone;
//   - approx = float32(float64(Σ cq[i]·cv[i]) · sq · sv), the sum in exact
//     integer arithmetic (int64; the AVX2 kernel's int32 lanes cannot
//     overflow for dim ≤ q8AsmMaxDim), so every platform computes the same
//     bits;
//   - the rerank(k) best by (approx desc, id asc) are scored by dot (the
//     float32 dot of the float vectors, as before) and the k best of those
//     by (score desc, id asc) are the answer.
//
// The answer is a pure function of the stored (id, vector) set and the
// query, whatever the insertion order or the split of the scan, and equals
// the float32 exact search whenever the true top k are among the
// rerank(k) best approximations. Vectors coded this way from 8-bit stored
// vectors (projstd) get their stored codes back, so the approximation is
// the float score up to float rounding; TestQ8MatchesFloat measures it.

// q8AsmMaxDim bounds the dimension the AVX2 kernel takes: each of its 8
// int32 lanes sums dim/8 products of at most 127·32767.
const q8AsmMaxDim = 4096

// rerank is how many approximate candidates are scored in float for k.
// TestQ8MatchesFloat finds the float scan's answers with this margin (k+4
// is not enough for uniform random vectors, whose codes carry their full
// rounding error); 2k cost 9% more CPU at k=200 over 100K vectors (the
// heap's churn and the float dots).
func rerank(k int) int { return k + max(32, k/4) }

// quantizeVec writes the 8-bit codes of v into c and returns the step.
func quantizeVec(v []float32, c []int8) float64 {
	m := maxAbs(v)
	if m == 0 {
		clear(c)
		return 0
	}
	s := m / 127
	inv := 127 / m // a multiply per component, not a division
	for i, x := range v {
		c[i] = int8(roundClamp(float64(x)*inv, 127))
	}
	return s
}

// maxAbs returns max |v[i]| (v holds no NaN: the indexes refuse them).
func maxAbs(v []float32) float64 {
	var m float32
	for _, x := range v {
		if x < 0 {
			x = -x
		}
		if x > m {
			m = x
		}
	}
	return float64(m)
}

// roundClamp rounds f half away from zero (as ⌊|f| + ½⌋ with f's sign)
// and clamps it to [-lim, lim]: integer operations, not math.Round and
// the float min and max, which cost several times the multiply at every
// component of every vector loaded.
func roundClamp(f float64, lim int) int {
	if f >= 0 {
		return min(int(f+0.5), lim)
	}
	return -min(int(-f+0.5), lim)
}

// quantizeQuery returns the 16-bit codes of q and their step.
func quantizeQuery(q []float32) ([]int16, float64) {
	c := make([]int16, len(q))
	m := maxAbs(q)
	if m == 0 {
		return c, 0
	}
	s := m / 32767
	inv := 32767 / m
	for i, x := range q {
		c[i] = int16(roundClamp(float64(x)*inv, 32767))
	}
	return c, s
}

// dotQ8 returns Σ q[i]·v[i] exactly (len(v) == len(q)).
func dotQ8(q []int16, v []int8) int64 {
	v = v[:len(q)]
	n16 := len(q) &^ 15
	var r int64
	if n16 > 0 && len(q) <= q8AsmMaxDim {
		r = dotQ8Blocks(q[:n16], v[:n16])
	} else {
		n16 = 0
	}
	for i := n16; i < len(q); i++ {
		r += int64(q[i]) * int64(v[i])
	}
	return r
}

// dotQ8Generic is the portable sum.
func dotQ8Generic(q []int16, v []int8) int64 {
	var r int64
	for i := range q {
		r += int64(q[i]) * int64(v[i])
	}
	return r
}

func approx(d int64, qs, vs float64) float32 { return float32(float64(d) * qs * vs) }

// q8Cand is an approximate candidate: its position in the scan and, for
// ScanSearch, its float score.
type q8Cand struct {
	id    string
	s     float32 // approximate score
	pos   int
	exact float32
}

// topR keeps the r best approximate candidates; the root is the worst.
type topR struct {
	r int
	h []q8Cand
}

func (t *topR) worse(i, j int) bool { return better(t.h[j].s, t.h[j].id, t.h[i].s, t.h[i].id) }

// admits reports whether a candidate of score s would be kept, without its
// id (a tie with the root needs the id: admitted, then offer decides).
func (t *topR) admits(s float32) bool { return len(t.h) < t.r || s >= t.h[0].s }

func (t *topR) offer(c q8Cand) {
	if len(t.h) < t.r {
		t.h = append(t.h, c)
		i := len(t.h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !t.worse(i, p) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !better(c.s, c.id, t.h[0].s, t.h[0].id) {
		return
	}
	t.h[0] = c
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.worse(l, m) {
			m = l
		}
		if r < len(t.h) && t.worse(r, m) {
			m = r
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// scanTopR runs scan over items [0, n) into a top-r and returns its
// entries (unordered). From exactParallelMin items on it scans two halves
// concurrently; the merge keeps the same set, since (score, id) is a
// total order.
func scanTopR(n, r int, scan func(lo, hi int, t *topR)) []q8Cand {
	a := &topR{r: r}
	if n < exactParallelMin {
		scan(0, n, a)
		return a.h
	}
	b := &topR{r: r}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); scan(0, n/2, a) }()
	scan(n/2, n, b)
	wg.Wait()
	for _, c := range b.h {
		a.offer(c)
	}
	return a.h
}
