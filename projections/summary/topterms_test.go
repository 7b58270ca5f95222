package summary

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// topTerms keeps the n heaviest terms as it goes; it must give what
// sorting every term by (weight desc, word) and taking the first n gives,
// ties and all.
func TestTopTermsMatchesSort(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for round := 0; round < 2000; round++ {
		m := r.Intn(40)
		weights := map[string]float64{}
		var terms []string
		for len(terms) < m {
			w := fmt.Sprintf("w%d", r.Intn(200))
			if _, ok := weights[w]; ok {
				continue
			}
			weights[w] = float64(r.Intn(6)) / 2 // many ties
			terms = append(terms, w)
		}
		n := r.Intn(12)
		want := slices.Clone(terms)
		sort.Slice(want, func(i, j int) bool {
			if weights[want[i]] != weights[want[j]] {
				return weights[want[i]] > weights[want[j]]
			}
			return want[i] < want[j]
		})
		want = want[:min(n, len(want))]
		got := topTerms(slices.Clone(terms), weights, n)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, n %d of %v: got %v, want %v", round, n, terms, got, want)
		}
	}
}
