package vector

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotMatchesGeneric checks the assembly (where present) against the
// portable code bit for bit, over lengths and magnitudes that exercise
// rounding, and against a float64 reference for sanity.
func TestDotMatchesGeneric(t *testing.T) {
	t.Logf("AVX dot in use: %v", useAVX)
	r := rand.New(rand.NewPCG(8, 8))
	for n := 0; n <= 80; n++ {
		for rep := 0; rep < 20; rep++ {
			a, b := make([]float32, n), make([]float32, n)
			scale := math.Pow(10, float64(r.IntN(9)-4))
			var ref float64
			for i := range a {
				a[i] = float32(r.NormFloat64() * scale)
				b[i] = float32(r.NormFloat64())
				ref += float64(a[i]) * float64(b[i])
			}
			got := dot(a, b)
			n16 := n &^ 15
			var want float32
			if n16 > 0 {
				want = dotGeneric16(a[:n16], b[:n16])
			}
			for i := n16; i < n; i++ {
				want += float32(a[i] * b[i])
			}
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n=%d: dot=%v (%08x) generic=%v (%08x)", n, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			if math.Abs(float64(got)-ref) > 1e-4*scale*float64(n+1) {
				t.Fatalf("n=%d: dot=%v, float64 reference %v", n, got, ref)
			}
		}
	}
}

func BenchmarkDot384(b *testing.B) {
	vs := uniformData(1, 2, 384)
	var s float32
	for i := 0; i < b.N; i++ {
		s += dot(vs[0], vs[1])
	}
	_ = s
}
