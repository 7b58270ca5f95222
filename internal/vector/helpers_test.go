package vector

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Test data is generated from fixed PCG seeds (printed on failure paths by
// the callers), so every run sees the same vectors.

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return unit(v)
}

func unit(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	n := float32(math.Sqrt(ss))
	for i := range v {
		v[i] /= n
	}
	return v
}

// uniformData returns n random unit vectors.
func uniformData(seed uint64, n, dim int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, n)
	for i := range out {
		out[i] = randUnit(r, dim)
	}
	return out
}

// clusteredData returns n unit vectors around `clusters` random centres:
// centre + N(0, sigma²) per coordinate, normalised. With sigma=0.04 in 384-d
// the noise norm is ~0.8 of the centre's, so points are clearly clustered
// yet neighbours inside a cluster are not trivial to find.
func clusteredData(seed uint64, n, dim, clusters int, sigma float64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	centres := make([][]float32, clusters)
	for i := range centres {
		centres[i] = randUnit(r, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(clusters)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*sigma)
		}
		out[i] = unit(v)
	}
	return out
}

var topics = [][]string{
	{"database", "index", "query", "table", "postgres", "schema", "migration", "column", "transaction", "replica"},
	{"garden", "tomato", "soil", "compost", "seeds", "watering", "harvest", "greenhouse", "pruning", "mulch"},
	{"flight", "airport", "luggage", "passport", "booking", "hotel", "itinerary", "layover", "boarding", "visa"},
	{"recipe", "oven", "flour", "butter", "baking", "dough", "sugar", "knead", "yeast", "bread"},
	{"kernel", "driver", "compile", "linux", "module", "panic", "scheduler", "memory", "syscall", "interrupt"},
	{"guitar", "chord", "melody", "rhythm", "practice", "strings", "amplifier", "song", "tempo", "scale"},
	{"invoice", "payment", "customer", "refund", "billing", "subscription", "receipt", "tax", "account", "ledger"},
	{"running", "marathon", "training", "shoes", "stretching", "pace", "injury", "recovery", "hydration", "miles"},
}

var fillers = []string{"the", "we", "should", "check", "about", "yesterday", "maybe", "really", "again", "with", "after", "before", "need", "told", "think"}

// sentences returns n generated ~15-word sentences mixing one topic's words
// with fillers.
func sentences(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([]string, n)
	for i := range out {
		t := topics[r.IntN(len(topics))]
		var b strings.Builder
		for j := 0; j < 15; j++ {
			if r.IntN(3) == 0 {
				b.WriteString(fillers[r.IntN(len(fillers))])
			} else {
				b.WriteString(t[r.IntN(len(t))])
			}
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "n%d", r.IntN(1000))
		out[i] = b.String()
	}
	return out
}

func idOf(i int) string { return fmt.Sprintf("c%07d", i) }

// recall returns mean recall@k of approx against exact over the queries.
func recall(tb testing.TB, exact, approx Index, queries [][]float32, k int) float64 {
	tb.Helper()
	var found, total int
	for _, q := range queries {
		want, err := exact.Search(q, k)
		if err != nil {
			tb.Fatal(err)
		}
		got, err := approx.Search(q, k)
		if err != nil {
			tb.Fatal(err)
		}
		set := map[string]bool{}
		for _, h := range got {
			set[h.ID] = true
		}
		for _, h := range want {
			if set[h.ID] {
				found++
			}
		}
		total += len(want)
	}
	if total == 0 {
		return 1
	}
	return float64(found) / float64(total)
}

func mustHNSW(tb testing.TB, dim int, o HNSWOptions) *HNSW {
	tb.Helper()
	g, err := NewHNSW(dim, o)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func mustExact(tb testing.TB, dim int) *Exact {
	tb.Helper()
	x, err := NewExact(dim)
	if err != nil {
		tb.Fatal(err)
	}
	return x
}

func addAll(tb testing.TB, idx Index, vs [][]float32) {
	tb.Helper()
	for i, v := range vs {
		if err := idx.Add(idOf(i), v); err != nil {
			tb.Fatal(err)
		}
	}
}

func fmtSscan(id string, i *int) (int, error) { return fmt.Sscanf(id, "c%d", i) }

func sha256Sum(s string) [32]byte { return sha256.Sum256([]byte(s)) }
