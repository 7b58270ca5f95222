package summary

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

// rankHits keeps the best k by (score desc, session asc), as sorting every
// scored session and cutting did, with many equal scores.
func TestRankHitsMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for trial := 0; trial < 200; trial++ {
		scores := map[string]float64{}
		for i, n := 0, r.Intn(300); i < n; i++ {
			scores[fmt.Sprintf("s%d", r.Intn(1000))] = float64(r.Intn(8)) / 4
		}
		var all []SessionHit
		for id, s := range scores {
			all = append(all, SessionHit{Session: id, Score: s})
		}
		sort.Slice(all, func(i, j int) bool {
			if all[i].Score != all[j].Score {
				return all[i].Score > all[j].Score
			}
			return all[i].Session < all[j].Session
		})
		for _, k := range []int{0, 1, 5, 20, 400} {
			want := all[:min(k, len(all))]
			if want == nil {
				want = []SessionHit{}
			}
			in := make([]SessionHit, 0, len(scores))
			for id, s := range scores {
				in = append(in, SessionHit{Session: id, Score: s})
			}
			got := rankHits(in, k)
			if len(got) == 0 && len(want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d k=%d:\n got %v\nwant %v", trial, k, got, want)
			}
		}
	}
}
