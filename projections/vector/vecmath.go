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
// Determinism: the summation order is fixed (four accumulators over i mod 4,
// combined as (s0+s1)+(s2+s3), then the tail in order) and every product is
// wrapped in an explicit float32 conversion, which the Go spec defines as a
// rounding point that forbids fusing into FMA. So every platform computes the
// same bits; scores, and therefore graph decisions and result order, do not
// depend on the CPU.
func dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
	}
	s := (s0 + s1) + (s2 + s3)
	for ; i < n; i++ {
		s += float32(a[i] * b[i])
	}
	return s
}

// unitTolerance is how far a squared norm may be from 1 for a vector to be
// taken as already normalised (float32 rounding of a unit vector moves it by
// at most ~1.2e-7).
const unitTolerance = 1e-6

// normalized validates v against dim and returns an L2-normalised copy. The
// norm is accumulated in float64 in index order (explicit conversions forbid
// FMA), so the result is bit-for-bit reproducible. A zero vector is returned
// as a zero copy with zero=true.
func normalized(v []float32, dim int) (out []float32, zero bool, err error) {
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
	out = make([]float32, dim)
	if ss == 0 {
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
