package fts

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

// TestSessionConjunctKeepsScores checks the session restriction (a
// zero-boost conjunct, see Search) against an oracle: the unrestricted
// search of every match, restricted to the sessions here. Ids, order and
// scores must be identical, bit for bit.
func TestSessionConjunctKeepsScores(t *testing.T) {
	events := randomEvents(7, 1500)
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, events, 0)
	live := model(events)
	ctx := context.Background()
	r := rand.New(rand.NewSource(3))
	checked := 0
	for i := 0; i < 40; i++ {
		text := vocab[r.Intn(len(vocab))] + " " + vocab[r.Intn(len(vocab))]
		if i%3 == 0 {
			text += " " + vocab[r.Intn(len(vocab))]
		}
		sessions := []string{fmt.Sprintf("s%d", r.Intn(8))}
		if i%2 == 0 {
			sessions = append(sessions, fmt.Sprintf("s%d", r.Intn(8)))
		}
		all, err := x.Search(ctx, Query{Text: text, K: len(live) + 1})
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]bool{}
		for _, s := range sessions {
			in[s] = true
		}
		var want []Hit
		for _, h := range all {
			if in[live[h.ChunkID].Session] {
				want = append(want, h)
			}
		}
		sort.SliceStable(want, func(i, j int) bool {
			if want[i].Score != want[j].Score {
				return want[i].Score > want[j].Score
			}
			return want[i].ChunkID < want[j].ChunkID
		})
		for _, k := range []int{1, 10, 1000} {
			got, err := x.Search(ctx, Query{Text: text, K: k, Sessions: sessions})
			if err != nil {
				t.Fatal(err)
			}
			w := want[:min(k, len(want))]
			if len(got) == 0 && len(w) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("%q in %v, k %d: got %v, want %v", text, sessions, k, got, w)
			}
			checked++
		}
	}
	if checked < 60 {
		t.Fatalf("only %d non-empty comparisons", checked)
	}
}
