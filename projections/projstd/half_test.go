package projstd

import (
	"math"
	"math/rand"
	"testing"
)

// Every finite binary16 value widens and narrows back to itself.
func TestHalfRoundTripsEveryValue(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if h&0x7c00 == 0x7c00 {
			continue // Inf and NaN
		}
		if got := toHalf(fromHalf(h)); got != h {
			t.Fatalf("%#04x -> %v -> %#04x", h, fromHalf(h), got)
		}
	}
}

// toHalf picks the nearest binary16 value (ties to even), checked against
// the neighbours of the result.
func TestHalfRoundsToNearest(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 200000; i++ {
		f := float32(r.NormFloat64() * math.Pow(2, float64(r.Intn(30)-24)))
		h := toHalf(f)
		got := float64(fromHalf(h))
		for _, n := range []uint16{h - 1, h + 1} {
			if n&0x7c00 == 0x7c00 || (n^h)&0x8000 != 0 {
				continue
			}
			if d, dn := math.Abs(got-float64(f)), math.Abs(float64(fromHalf(n))-float64(f)); dn < d || (dn == d && n&1 == 0) {
				t.Fatalf("%v rounded to %v (%#04x), %v (%#04x) is nearer", f, got, h, fromHalf(n), n)
			}
		}
	}
	if toHalf(1) != 0x3c00 || toHalf(-2) != 0xc000 || toHalf(65520) != 0x7c00 || toHalf(1e-9) != 0 {
		t.Fatal("fixed values")
	}
}

func TestQuantizeIsUnitAndStable(t *testing.T) {
	v := []float32{3, 4, 0, -12}
	q := quantize(v)
	var ss float64
	for _, x := range q {
		ss += float64(x) * float64(x)
	}
	if math.Abs(ss-1) > 1e-3 {
		t.Fatalf("norm² %v", ss)
	}
	if z := quantize(make([]float32, 4)); z[0] != 0 || z[3] != 0 {
		t.Fatal("zero vector")
	}
	again := quantize(q)
	for i := range q {
		if math.Abs(float64(again[i]-q[i])) > 1e-3 {
			t.Fatalf("requantizing moved %d: %v -> %v", i, q[i], again[i])
		}
	}
}
