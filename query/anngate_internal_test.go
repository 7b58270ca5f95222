package query

import (
	"math"
	"testing"
)

func TestANNGateFactor(t *testing.T) {
	ten := func(b1, b10 float64) []float64 {
		// Best last and the rest between: the factor must not depend on
		// the order the candidates come in.
		bs := []float64{b10}
		for _, f := range []float64{0.9, 0.1, 0.5, 0.5, 0.3, 0.7, 0.2, 0.8} {
			bs = append(bs, b10+f*(b1-b10))
		}
		return append(bs, b1)
	}
	for _, tc := range []struct {
		name string
		bs   []float64
		t    float64
		want float64
	}{
		{"no candidates", nil, 0.75, 1},
		{"fewer than ten", []float64{9, 1, 1}, 0.75, 1},
		{"flat", ten(2, 2), 0.75, 1},
		{"tenth at a quarter of the best", ten(4, 1), 0.75, 0},
		{"tenth far below", ten(40, 1), 0.75, 0},
		{"halfway", ten(8, 5), 0.75, 0.5},
		{"halfway, t 0.5", ten(8, 6), 0.5, 0.5},
		{"eleventh does not count", append(ten(8, 5), 0.01), 0.75, 0.5},
		{"zero best", make([]float64, 10), 0.75, 1},
		{"off", ten(40, 1), -1, 1},
		{"t NaN", ten(40, 1), math.NaN(), 1},
		{"NaN scores are left out", append(ten(8, 5), math.NaN()), 0.75, 0.5},
		{"infinite best is left out", append(ten(8, 5), math.Inf(1)), 0.75, 0.5},
		{"ten with a NaN are nine", append(ten(8, 5)[1:], math.NaN()), 0.75, 1},
		{"all NaN", []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}, 0.75, 1},
		{"negative tenth", ten(4, -4), 0.75, 0},
		{"negative best", ten(-1, -4), 0.75, 1},
	} {
		if got := annGate(tc.bs, tc.t); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("%s: annGate = %v, want %v", tc.name, got, tc.want)
		}
	}
}
