package vector

import (
	"bytes"
	"math/rand"
	"os"
	"testing"

	"github.com/coder/hnsw"
)

// TestCoderHNSWv061 re-measures why ucl carries its own HNSW (see the
// package doc): github.com/coder/hnsw v0.6.1's recall@10 against exact
// search, and whether two builds of the same data serialize identically. It
// fails if the library ever becomes both accurate and deterministic, which
// would be the moment to reconsider.
func TestCoderHNSWv061(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement of a third-party library; slow")
	}
	// The race detector checks nothing here (one goroutine in a pinned
	// third-party library, fixed seeds) and slows the measurement to a
	// minute of make test's CPU; it runs without -race, or with
	// UCL_TEST_LARGE=1 (make test-large).
	if raceOn && os.Getenv("UCL_TEST_LARGE") == "" {
		t.Skip("a measurement of github.com/coder/hnsw, not of ucl: run without -race or with UCL_TEST_LARGE=1")
	}
	const n, nq, dim = 3000, 100, 384
	data := map[string][][]float32{
		"uniform":   uniformData(41, n+nq, dim),
		"clustered": clusteredData(42, n+nq, dim, 50, 0.04),
	}
	build := func(vs [][]float32, ef int) *hnsw.Graph[string] {
		g := hnsw.NewGraph[string]()
		g.M, g.EfSearch = 16, ef
		g.Rng = rand.New(rand.NewSource(1)) // fixed: only its own nondeterminism remains
		for i, v := range vs {
			g.Add(hnsw.MakeNode(idOf(i), v))
		}
		return g
	}
	best := 0.0
	for _, name := range []string{"uniform", "clustered"} {
		vs := data[name]
		x := mustExact(t, dim)
		addAll(t, x, vs[:n])
		for _, ef := range []int{20, 100, 400} {
			g := build(vs[:n], ef)
			found, total := 0, 0
			for _, q := range vs[n:] {
				want, _ := x.Search(q, 10)
				got := g.Search(q, 10)
				set := map[string]bool{}
				for _, nd := range got {
					set[nd.Key] = true
				}
				for _, h := range want {
					if set[h.ID] {
						found++
					}
				}
				total += len(want)
			}
			rc := float64(found) / float64(total)
			best = max(best, rc)
			t.Logf("coder/hnsw v0.6.1 %s n=%d dim=%d M=16 EfSearch=%d: recall@10 = %.3f", name, n, dim, ef, rc)
		}
		// Ours on the same data, for comparison.
		own := mustHNSW(t, dim, HNSWOptions{})
		addAll(t, own, vs[:n])
		for _, ef := range []int{20, 100, DefaultEfSearch} {
			if err := own.SetEfSearch(ef); err != nil {
				t.Fatal(err)
			}
			t.Logf("ucl HNSW %s n=%d dim=%d M=16 EfSearch=%d: recall@10 = %.3f", name, n, dim, ef, recall(t, x, own, vs[n:], 10))
		}
	}
	var a, b bytes.Buffer
	vs := data["clustered"][:1000]
	if err := build(vs, 20).Export(&a); err != nil {
		t.Fatal(err)
	}
	if err := build(vs, 20).Export(&b); err != nil {
		t.Fatal(err)
	}
	same := bytes.Equal(a.Bytes(), b.Bytes())
	t.Logf("coder/hnsw v0.6.1: two builds of the same 1000 vectors (same Rng seed) export identical bytes: %v", same)
	if same && best >= 0.95 {
		t.Fatal("coder/hnsw now looks accurate and deterministic: reconsider carrying our own HNSW")
	}
}
