package projstd

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// Vectors are stored as 8-bit scalar-quantised values (vector format v3):
// the vector is scaled to unit length, then each component is rounded to
// a multiple of a per-vector step, step = max|component| / 127, kept as a
// signed byte in [-127, 127]:
//
//	record = step float32 LE ‖ q int8 × dim        (4 + dim bytes)
//	value  = float32(q) × step                     (float32 arithmetic)
//
// One byte a dimension instead of binary16's two. The step is per vector,
// not one fixed step for all unit vectors: a unit vector of 384
// dimensions has components around 1/√384 ≈ 0.05 and a largest one of a
// few tenths, so a fixed step of 1/127 would leave a typical component
// 6 levels of 127 and move rankings, while the vector's own maximum gives
// every vector the full 255 levels (rounding error ≤ step/2, a relative
// error under 0.4% of the largest component) for 4 bytes. Measured recall@10
// of exact search over these values against exact float32 search is in
// quant_test.go (TestQuantizedRecall); there is no float copy to rescore
// with, by design. (The exact index scans 8-bit codes of its own, coded
// from these values the same way, and re-ranks by these values: package
// vector's q8.go. Its answers are those of a float scan of these values.) The in-memory indexes hold exactly the decoded values,
// so the digest and every search are the same whichever path built the
// projection; the value is a single float32 multiply, so every platform
// decodes the same bits.

// quantize returns v scaled to unit length and rounded as described
// above: the float32 values indexed and their stored record. A zero vector
// stays zero (step 0).
func quantize(v []float32) ([]float32, []byte) {
	out := make([]float32, len(v))
	rec := make([]byte, 4+len(v))
	quantizeInto(out, rec, v)
	return out, rec
}

// quantizeInto is quantize writing the values into out and the record
// into rec (len(v) and 4+len(v), zeroed); out may be v itself (each
// component is read before its value is written).
func quantizeInto(out []float32, rec []byte, v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		clear(out)
		return
	}
	norm := math.Sqrt(ss)
	// max |x|/norm is (max |x|)/norm: a correctly rounded division by the
	// same positive number keeps the order, so one division gives the
	// bits a division per component gave.
	// A comparison, not the float max (which orders NaNs and signed
	// zeros, half of this function's time): the components are finite
	// (checkVec), and the conversion to float64 keeps their order.
	var am float32
	for _, x := range v {
		am = max32(am, abs32(x))
	}
	m := float64(am) / norm
	step := float32(m / 127)
	if step == 0 { // components too small for float32 after scaling
		clear(out)
		return
	}
	binary.LittleEndian.PutUint32(rec, math.Float32bits(step))
	// The value rounded is x/norm/step, two float64 divisions. A multiply
	// by 1/(norm·step) is within 6 units in the last place of it (|d| ≤
	// 128: 1e-13), so the two round to the same integer unless the
	// product is that close to a half; only then are the divisions made.
	// The divisions, math.Round and the float min and max were a seventh
	// of a vector rebuild's CPU.
	inv := 1 / (norm * float64(step))
	for i, x := range v {
		t := float64(x) * inv
		a := math.Abs(t)
		// a + 0.5 is rounded only when a's fraction is within an ulp
		// (~3e-14) of a half, far inside the margin: elsewhere its floor
		// is a rounded half away from zero, with no branch on which way
		// (a branch that went either way at random for every nonzero
		// component of a hash vector).
		q := int(a + 0.5) // a ≤ ~128: exact
		if f := a - float64(int(a)); f > 0.5-quantHalfMargin && f < 0.5+quantHalfMargin {
			r := math.Round(float64(x) / norm / float64(step))
			q = int(math.Abs(r))
		}
		q = min(q, 127)
		if t < 0 {
			q = -q
		}
		rec[4+i] = byte(int8(q))
		out[i] = float32(int8(q)) * step
	}
}

// quantHalfMargin is how close to a half the multiplied value must be
// for quantizeInto to divide: far above the multiply's error (1e-13). A
// variable for tests (1: always divide).
var quantHalfMargin = 1e-9

// codeRec writes the code slot (vector.EncodeSlot) of the vector the
// record rec decodes to into c, from the record's codes and step
// (vector.EncodeSlotQ8: a quarter of the work of normalising and coding
// the values again).
func codeRec(c, rec []byte) error {
	if len(rec) < 4 {
		return fmt.Errorf("code vector record: %d bytes: %w", len(rec), errVectorsCorrupt)
	}
	return vector.EncodeSlotQ8(c, recCodes(rec), math.Float32frombits(binary.LittleEndian.Uint32(rec)))
}

// decodeVec decodes a stored record into dst (len dim).
func decodeVec(b []byte, dst []float32) error {
	if len(b) != 4+len(dst) {
		return fmt.Errorf("decode vector record: %d bytes for %d dimensions: %w", len(b), len(dst), errVectorsCorrupt)
	}
	step := math.Float32frombits(binary.LittleEndian.Uint32(b))
	if !(step >= 0) || math.IsInf(float64(step), 0) {
		return fmt.Errorf("decode vector record: step %v: %w", step, errVectorsCorrupt)
	}
	for i := range dst {
		dst[i] = float32(int8(b[4+i])) * step
	}
	return nil
}

// recCodes returns a stored record's codes as int8s, in place (no copy:
// the slice is valid only as long as the record's bytes are).
func recCodes(b []byte) []int8 {
	if len(b) <= 4 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b[4])), len(b)-4)
}

// abs32 clears the sign bit: no branch on the sign, which is random. It
// makes -0 +0, which orders the same.
func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

func max32(a, b float32) float32 {
	if b > a {
		return b
	}
	return a
}
