package vector

import (
	"fmt"
	"math"
)

// MaxDim bounds the dimension of an index; it keeps a corrupt header from
// asking for absurd allocations.
const MaxDim = 1 << 16

// MaxIDLen bounds the byte length of an id.
const MaxIDLen = 1 << 12

// dot returns the float32 dot product of a and b (len(b) >= len(a)).
//
// Determinism: the result is defined by one fixed evaluation order, and
// every implementation (the AVX assembly on amd64, dotGeneric elsewhere)
// computes exactly that order, so every platform returns the same bits and
// graph decisions and result order never depend on the CPU:
//
//   - 16 lanes: s[j] accumulates round32(a[i]*b[i]) for i ≡ j (mod 16),
//     i < n16 = len(a) rounded down to a multiple of 16, in increasing i;
//   - t[j] = s[j]+s[j+8] (j<8); u[j] = t[j]+t[j+4] (j<4);
//     v[j] = u[j]+u[j+2] (j<2); r = v[0]+v[1];
//   - then for i = n16.. len(a)-1 in order: r += round32(a[i]*b[i]).
//
// Products are rounded to float32 before adding (explicit conversions in
// Go, VMULPS then VADDPS in assembly): the Go spec forbids fusing across an
// explicit conversion, so no FMA can change the bits.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	n16 := len(a) &^ 15
	var r float32
	if n16 > 0 {
		r = dotBlocks(a[:n16], b[:n16])
	}
	for i := n16; i < len(a); i++ {
		r += float32(a[i] * b[i])
	}
	return r
}

// dotGeneric16 is the portable form of the 16-lane block sum (len(a) is a
// multiple of 16, len(b) == len(a)).
func dotGeneric16(a, b []float32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15 float32
	for len(a) >= 16 && len(b) >= 16 {
		x, y := a[:16:16], b[:16:16]
		s0 += float32(x[0] * y[0])
		s1 += float32(x[1] * y[1])
		s2 += float32(x[2] * y[2])
		s3 += float32(x[3] * y[3])
		s4 += float32(x[4] * y[4])
		s5 += float32(x[5] * y[5])
		s6 += float32(x[6] * y[6])
		s7 += float32(x[7] * y[7])
		s8 += float32(x[8] * y[8])
		s9 += float32(x[9] * y[9])
		s10 += float32(x[10] * y[10])
		s11 += float32(x[11] * y[11])
		s12 += float32(x[12] * y[12])
		s13 += float32(x[13] * y[13])
		s14 += float32(x[14] * y[14])
		s15 += float32(x[15] * y[15])
		a, b = a[16:], b[16:]
	}
	t0, t1, t2, t3 := s0+s8, s1+s9, s2+s10, s3+s11
	t4, t5, t6, t7 := s4+s12, s5+s13, s6+s14, s7+s15
	u0, u1, u2, u3 := t0+t4, t1+t5, t2+t6, t3+t7
	v0, v1 := u0+u2, u1+u3
	return v0 + v1
}

// unitTolerance is how far a squared norm may be from 1 for a vector to be
// taken as already normalised (float32 rounding of a unit vector moves it by
// at most ~1.2e-7).
const unitTolerance = 1e-6

// normalized validates v against dim and returns an L2-normalised copy. The
// norm is accumulated in float64 in index order (explicit conversions forbid
// FMA), so the result is bit-for-bit reproducible. A vector whose squared
// norm is already within unitTolerance of 1 is copied unchanged, which makes
// normalisation idempotent (re-adding a stored vector stores the same bits).
// A zero vector is returned as a zero copy with zero=true.
func normalized(v []float32, dim int) (out []float32, zero bool, err error) {
	return normalizedInto(make([]float32, dim), v, dim)
}

// normalizedInto is normalized writing into out (len dim), for scans
// that must not allocate per vector.
func normalizedInto(out, v []float32, dim int) ([]float32, bool, error) {
	if len(v) != dim {
		return nil, false, fmt.Errorf("check vector: got %d values, want %d: %w", len(v), dim, ErrDimension)
	}
	var ss float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, false, fmt.Errorf("check vector: value %d is %v: %w", i, x, ErrInvalidVector)
		}
		ss += float64(float64(x) * float64(x))
	}
	if ss == 0 {
		clear(out)
		return out, true, nil
	}
	if math.Abs(ss-1) <= unitTolerance {
		copy(out, v) // already unit: storing as-is makes normalisation idempotent
		return out, false, nil
	}
	norm := math.Sqrt(ss)
	if math.IsInf(norm, 0) {
		return nil, false, fmt.Errorf("check vector: norm overflows: %w", ErrInvalidVector)
	}
	for i, x := range v {
		out[i] = float32(float64(x) / norm)
	}
	return out, false, nil
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("check id %.40q: %w", id, ErrInvalidID)
	}
	return nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
