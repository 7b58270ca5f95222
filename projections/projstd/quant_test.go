package projstd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"os"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func TestQuantizeRoundTrip(t *testing.T) {
	v := []float32{3, 4, 0, -12, 0.001}
	vals, rec := quantize(v)
	if len(rec) != 4+len(v) {
		t.Fatalf("record of %d bytes", len(rec))
	}
	got := make([]float32, len(v))
	if err := decodeVec(rec, got); err != nil {
		t.Fatal(err)
	}
	var ss float64
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(vals[i]) {
			t.Fatalf("value %d: decoded %v, indexed %v", i, got[i], vals[i])
		}
		ss += float64(got[i]) * float64(got[i])
	}
	if math.Abs(ss-1) > 0.02 {
		t.Fatalf("norm² %v", ss)
	}
	// The largest component is exactly ±127 steps.
	if int8(rec[4+3]) != -127 {
		t.Fatalf("largest component stored as %d", int8(rec[4+3]))
	}
	zv, zr := quantize(make([]float32, 4))
	for i := range zv {
		if zv[i] != 0 || zr[4+i] != 0 {
			t.Fatal("zero vector")
		}
	}
	// Requantising the decoded values gives the same levels (the step
	// may move in its last bits: the decoded vector's norm is not exactly 1).
	_, again := quantize(vals)
	if string(again[4:]) != string(rec[4:]) {
		t.Fatalf("requantised %v, stored %v", again, rec)
	}
}

func TestDecodeVecRefusesDamage(t *testing.T) {
	_, rec := quantize([]float32{1, 2, 3, 4})
	dst := make([]float32, 4)
	for _, bad := range [][]byte{nil, rec[:7], append(rec, 0), {0, 0, 0xc0, 0x7f, 1, 2, 3, 4}, {0, 0, 0x80, 0xbf, 1, 2, 3, 4}} {
		if err := decodeVec(bad, dst); err == nil {
			t.Errorf("%v decoded", bad)
		}
	}
}

func FuzzDecodeVec(f *testing.F) {
	_, rec := quantize([]float32{0.5, -0.25, 0, 1, 7, -3, 2, 9})
	f.Add(rec)
	f.Add(make([]byte, 12))
	f.Add([]byte{0, 0, 0x80, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]float32, 8)
		if err := decodeVec(b, dst); err != nil {
			return
		}
		for _, x := range dst {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("decoded %v from %v", x, b)
			}
		}
		// What decodes re-encodes to a record that decodes to the same
		// direction (the step may differ when the record was not made by
		// quantize, e.g. no component at ±127).
		vals, rec := quantize(dst)
		back := make([]float32, 8)
		if err := decodeVec(rec, back); err != nil {
			t.Fatal(err)
		}
		for i := range back {
			if back[i] != vals[i] {
				t.Fatalf("round trip %d: %v != %v", i, back[i], vals[i])
			}
		}
	})
}

// recallAgainstFloat is the recall@10 of exact search over the quantised
// vectors against exact search over the float32 ones, for queries qs.
func recallAgainstFloat(t *testing.T, vecs [][]float32, qs [][]float32) float64 {
	t.Helper()
	dim := len(vecs[0])
	exact, err := vector.NewExact(dim)
	if err != nil {
		t.Fatal(err)
	}
	quant, err := vector.NewExact(dim)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		id := string(rune('a'+i%26)) + string(rune(i))
		if err := exact.Add(id, v); err != nil {
			t.Fatal(err)
		}
		q, _ := quantize(v)
		if err := quant.Add(id, q); err != nil {
			t.Fatal(err)
		}
	}
	hits, total := 0, 0
	for _, q := range qs {
		want, err := exact.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		got, err := quant.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]bool{}
		for _, h := range want {
			in[h.ID] = true
		}
		for _, h := range got {
			if in[h.ID] {
				hits++
			}
		}
		total += len(want)
	}
	return float64(hits) / float64(total)
}

// TestQuantizedRecall: exact top-10 over the stored 8-bit vectors against
// exact top-10 over float32, on the default hash embedder's vectors of
// Zipf-like text (near-orthogonal: many near ties) and on clustered
// vectors like a neural embedder's. DESIGN §10 asks recall@10 ≥ 0.95 of
// vector search.
func TestQuantizedRecall(t *testing.T) {
	emb, err := vector.NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	embed := func(seed int64, n int) [][]float32 {
		var texts []string
		for _, ev := range projtest.Generate(projtest.Config{Seed: seed, N: n, StoresOnly: true, Vocab: 30000}) {
			texts = append(texts, ev.Store().Content)
		}
		vs, err := emb.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	hash := recallAgainstFloat(t, embed(42, 5000), embed(7, 200))

	r := rand.New(rand.NewSource(1))
	const dim, clusters = 384, 50
	centres := make([][]float64, clusters)
	for i := range centres {
		centres[i] = make([]float64, dim)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	point := func() []float32 {
		c := centres[r.Intn(clusters)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(c[j] + 0.6*r.NormFloat64())
		}
		return v
	}
	var vecs, qs [][]float32
	for i := 0; i < 5000; i++ {
		vecs = append(vecs, point())
	}
	for i := 0; i < 200; i++ {
		qs = append(qs, point())
	}
	clustered := recallAgainstFloat(t, vecs, qs)
	t.Logf("recall@10 of 8-bit against float32, exact search over 5000 vectors, 200 queries: hash embedder %.4f, clustered %.4f", hash, clustered)
	if hash < 0.95 || clustered < 0.95 {
		t.Fatalf("recall@10 hash %.4f, clustered %.4f; want ≥ 0.95", hash, clustered)
	}
}

// quantizeReference is quantize as it was before it took the maximum
// before dividing (a division per component).
func quantizeReference(v []float32) ([]float32, []byte) {
	out := make([]float32, len(v))
	rec := make([]byte, 4+len(v))
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return out, rec
	}
	norm := math.Sqrt(ss)
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(float64(x)/norm))
	}
	step := float32(m / 127)
	if step == 0 {
		return out, rec
	}
	binary.LittleEndian.PutUint32(rec, math.Float32bits(step))
	for i, x := range v {
		q := math.Round(float64(x) / norm / float64(step))
		q = max(-127, min(127, q))
		rec[4+i] = byte(int8(q))
		out[i] = float32(int8(q)) * step
	}
	return out, rec
}

// TestQuantizeSameBits: quantize gives the reference's values and record
// bits on unit vectors (what the embedders return), on vectors far from
// unit, with one dominant component, and at tiny and huge scales.
func TestQuantizeSameBits(t *testing.T) {
	t.Run("multiply", func(t *testing.T) { testQuantizeSameBits(t, 20000) })
	// Every value through the divisions quantizeInto makes near a half.
	defer func(m float64) { quantHalfMargin = m }(quantHalfMargin)
	quantHalfMargin = 1
	t.Run("divide", func(t *testing.T) { testQuantizeSameBits(t, 4000) })
}

func testQuantizeSameBits(t *testing.T, vectors int) {
	r := rand.New(rand.NewSource(26))
	for n := 0; n < vectors; n++ {
		dim := []int{384, 8, 97, 768}[n%4]
		v := make([]float32, dim)
		scale := []float64{1, 1e-30, 1e30, 3.7, 1e-3}[n%5]
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		if n%3 == 0 {
			v[r.Intn(dim)] *= 50
		}
		if n%2 == 0 { // unit, as an embedder returns it
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			for i := range v {
				v[i] = float32(float64(v[i]) / math.Sqrt(ss))
			}
		}
		got, gotRec := quantize(v)
		want, wantRec := quantizeReference(v)
		if !bytes.Equal(gotRec, wantRec) {
			t.Fatalf("vector %d: record differs from the reference", n)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("vector %d: value %d %v, reference %v", n, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkQuantize: quantizeInto of a unit vector of 384 dimensions
// (UCL_BENCH_QUANT_DIVIDE=1: every value through the divisions).
func BenchmarkQuantize(b *testing.B) {
	if os.Getenv("UCL_BENCH_QUANT_DIVIDE") == "1" {
		defer func(m float64) { quantHalfMargin = m }(quantHalfMargin)
		quantHalfMargin = 1
	}
	r := rand.New(rand.NewSource(1))
	v := make([]float32, 384)
	var ss float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		ss += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(ss))
	}
	out, rec := make([]float32, len(v)), make([]byte, 4+len(v))
	for b.Loop() {
		quantizeInto(out, rec, v)
	}
}

// TestCheckVecRefuses: checkVec refuses NaN and both infinities anywhere
// in a vector and accepts every finite value (the largest, subnormals,
// signed zeros).
func TestCheckVecRefuses(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, at := range []int{0, 3, 7} {
			v := make([]float32, 8)
			v[at] = bad
			if err := checkVec(v, 8); !errors.Is(err, vector.ErrInvalidVector) {
				t.Fatalf("%v at %d: %v", bad, at, err)
			}
		}
	}
	ok := []float32{math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1)), 0, 1e-40, 3}
	if err := checkVec(ok, len(ok)); err != nil {
		t.Fatalf("finite values refused: %v", err)
	}
	if err := checkVec(ok, 3); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("wrong dimension: %v", err)
	}
}
