package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotQ8MatchesGeneric checks the AVX2 kernel (where present) against
// the portable sum over lengths, tails and the extreme codes.
func TestDotQ8MatchesGeneric(t *testing.T) {
	t.Logf("AVX2 int8 dot in use: %v", useAVX2)
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 48, 384, 385, 768, 1536, q8AsmMaxDim, q8AsmMaxDim + 16} {
		for rep := 0; rep < 20; rep++ {
			q, v := make([]int16, n), make([]int8, n)
			for i := range q {
				switch rep {
				case 0: // the largest sum the lanes must hold
					q[i], v[i] = 32767, 127
				case 1:
					q[i], v[i] = -32767, 127
				default:
					q[i], v[i] = int16(r.IntN(65535)-32767), int8(r.IntN(255)-127)
				}
			}
			if got, want := dotQ8(q, v), dotQ8Generic(q, v); got != want {
				t.Fatalf("n=%d rep=%d: dotQ8=%d, generic=%d", n, rep, got, want)
			}
		}
	}
}

// floatExact is the exact search Search answered before the 8-bit scan:
// every stored float vector scored by dot.
func floatExact(x *Exact, q []float32, k int) []Hit {
	nq, _, _ := normalized(q, x.dim)
	return scanTopK(len(x.ids), k, func(i int) (string, float32, bool) {
		if x.zero[i] {
			return "", 0, false
		}
		return x.ids[i], dot(nq, x.vecs[i*x.dim:(i+1)*x.dim]), true
	})
}

// quantized8 returns v as the vector projection stores it: 8 bits a
// component with a per-vector step (projstd/quant.go), decoded.
func quantized8(v []float32) []float32 {
	c := make([]int8, len(v))
	s := float32(quantizeVec(v, c))
	out := make([]float32, len(v))
	for i := range c {
		out[i] = float32(c[i]) * s
	}
	return out
}

// TestQ8MatchesFloat: the 8-bit scan with its float rerank returns exactly
// the hits (ids, scores, order) of the float scan, for uniform, clustered,
// hash-embedded and 8-bit-stored vectors, at the k the query engine uses.
// Search, SearchIn and ScanSearch are all checked.
func TestQ8MatchesFloat(t *testing.T) {
	const dim = 384
	n, nq := 20000, 60
	if raceOn {
		n, nq = 4000, 20 // about 25 s without -race: minutes under it
	}
	sets := map[string][][]float32{
		"uniform":   uniformData(5, n+nq, dim),
		"clustered": clusteredData(6, n+nq, dim, 50, 0.04),
	}
	e, err := NewHashEmbedder(dim)
	if err != nil {
		t.Fatal(err)
	}
	hv, err := e.Embed(t.Context(), sentences(7, n+nq))
	if err != nil {
		t.Fatal(err)
	}
	sets["hash"] = hv
	var q8 [][]float32
	codes := map[string][][]int8{}
	for _, v := range hv {
		q8 = append(q8, quantized8(v))
		c := make([]int8, dim)
		quantizeVec(v, c)
		codes["hash-8bit"] = append(codes["hash-8bit"], c)
	}
	sets["hash-8bit"] = q8
	for name, vs := range sets {
		x := mustExact(t, dim)
		for i, v := range vs[:n] {
			if err := x.Add(fmt.Sprintf("id%06d", i), v); err != nil {
				t.Fatal(err)
			}
		}
		var ids []string
		for i := 0; i < n; i += 3 {
			ids = append(ids, fmt.Sprintf("id%06d", i))
		}
		sub := mustExact(t, dim)
		for i := 0; i < n; i += 3 {
			sub.Add(fmt.Sprintf("id%06d", i), vs[i])
		}
		for _, k := range []int{10, 50, 200} {
			for qi, q := range vs[n:] {
				want := floatExact(x, q, k)
				got, err := x.Search(q, k)
				if err != nil {
					t.Fatal(err)
				}
				if !sameHits(got, want) {
					t.Fatalf("%s k=%d query %d: Search differs from the float scan", name, k, qi)
				}
				in, err := x.SearchIn(q, k, ids)
				if err != nil {
					t.Fatal(err)
				}
				if !sameHits(in, floatExact(sub, q, k)) {
					t.Fatalf("%s k=%d query %d: SearchIn differs from the float scan of the subset", name, k, qi)
				}
				if qi%10 == 0 {
					// With the stored codes (the projection's scan) and
					// without them: both must answer as the float scan.
					for _, withCodes := range []bool{false, true} {
						sc, err := ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
							for i, v := range vs[:n] {
								var c []int8
								if withCodes && codes[name] != nil {
									c = codes[name][i]
								}
								if err := fn(fmt.Sprintf("id%06d", i), v, c); err != nil {
									return err
								}
							}
							return nil
						})
						if err != nil {
							t.Fatal(err)
						}
						if !sameHits(sc, want) {
							t.Fatalf("%s k=%d query %d (codes %v): ScanSearch differs from the float scan", name, k, qi, withCodes)
						}
					}
				}
			}
		}
	}
}

func sameHits(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func BenchmarkDotQ8384(b *testing.B) {
	q, v := make([]int16, 384), make([]int8, 384)
	var s int64
	for i := 0; i < b.N; i++ {
		s += dotQ8(q, v)
	}
	_ = s
}

// BenchmarkExactScan100K compares the 8-bit scan with its rerank
// ("q8") against the float scan it replaced ("float32") over 100K×384
// uniform vectors, k=200 (the ANN channel's fetch under a session filter).
func BenchmarkExactScan100K(b *testing.B) {
	const n, dim, k = 100_000, 384, 200
	vs := uniformData(9, n+16, dim)
	x := mustExact(b, dim)
	x.Reserve(n)
	for i, v := range vs[:n] {
		if err := x.Add(idOf(i), v); err != nil {
			b.Fatal(err)
		}
	}
	qs := vs[n:]
	b.Run("q8", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := x.Search(qs[i%len(qs)], k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("float32", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			floatExact(x, qs[i%len(qs)], k)
		}
	})
}

func BenchmarkQuantizeVec384(b *testing.B) {
	v := uniformData(1, 1, 384)[0]
	c := make([]int8, 384)
	for i := 0; i < b.N; i++ {
		quantizeVec(v, c)
	}
}

// TestStoredCodesAreTheCoding: for full-range codes c (some |c[i]| = 127)
// and any step, the vector c·step, normalised as the indexes normalise it,
// codes back to c with the step storedStep computes, which is what lets
// ScanSearch use a projection's stored codes instead of re-coding.
func TestStoredCodesAreTheCoding(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, dim := range []int{3, 64, 384} {
		c := make([]int8, dim)
		v := make([]float32, dim)
		nvBuf := make([]float32, dim)
		got := make([]int8, dim)
		for trial := 0; trial < 3000; trial++ {
			spread := 1 + r.IntN(127)
			for i := range c {
				c[i] = int8(r.IntN(2*spread+1) - spread)
			}
			j := r.IntN(dim)
			c[j] = 127
			if r.IntN(2) == 0 {
				c[j] = -127
			}
			// Steps as the projection makes them (max component of a unit
			// vector over 127) and far outside that range.
			step := float32(math.Ldexp(1+r.Float64(), -7-r.IntN(4)))
			if trial%10 == 0 {
				step = float32(math.Ldexp(1+r.Float64(), r.IntN(60)-30))
			}
			for i := range c {
				v[i] = float32(c[i]) * step
			}
			nv, zero, err := normalizedInto(nvBuf, v, dim)
			if err != nil || zero {
				t.Fatalf("normalise: %v %v", err, zero)
			}
			want := quantizeVec(nv, got)
			if !slices.Equal(got, c) {
				t.Fatalf("dim %d step %g: codes %v, want %v", dim, step, got, c)
			}
			if k := storedMax(c, dim); k < 0 || storedStep(nv, k) != want {
				t.Fatalf("dim %d step %g: storedStep %v, want %v", dim, step, storedStep(nv, max(k, 0)), want)
			}
		}
	}
	if storedMax([]int8{1, -128, 127}, 3) != -1 || storedMax([]int8{1, 2, 126}, 3) != -1 || storedMax([]int8{127}, 2) != -1 {
		t.Fatal("storedMax accepted codes that are not a full-range coding")
	}
}
