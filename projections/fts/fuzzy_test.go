package fts

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func fuzzyIndex(t *testing.T) *Index {
	t.Helper()
	x := openT(t, t.TempDir(), Options{})
	var e evs
	e.store("lis", "trip", "user", log.KindConversation, 1, "Cheap Lisbon fares in March, the train is slower")
	e.store("por", "trip", "user", log.KindConversation, 2, "Porto hotels are booked out in March")
	e.store("far", "misc", "user", log.KindConversation, 3, "The garden is a long way from the station")
	e.store("mad", "trip", "user", log.KindConversation, 4, "Madrid fares went up; Lisboa is a nicer name")
	applyAll(t, x, e.out, 0)
	return x
}

// A misspelled query finds its item: "Lisbn fars" matches nothing exactly
// (no chunk holds "lisbn" or "far", the stem of "fars"), and finds the Lisbon fares.
func TestFuzzyFindsMisspelling(t *testing.T) {
	x := fuzzyIndex(t)
	got := find(t, x, Query{Text: "Lisbn fars", K: 3})
	if len(got) == 0 || got[0] != "lis" {
		t.Fatalf("Lisbn fars: %v, want lis first", got)
	}
	if got := find(t, x, Query{Text: "Lisbn", K: 3, NoFuzzy: true}); len(got) != 0 {
		t.Fatalf("NoFuzzy still matched %v", got)
	}
}

// Typo tolerance never costs exact matches: a query whose words all
// occur scores exactly as with NoFuzzy, and a word that occurs is never
// widened to its neighbours.
func TestFuzzyKeepsExactMatches(t *testing.T) {
	x := fuzzyIndex(t)
	ctx := context.Background()
	for _, text := range []string{"Lisbon fares", "hotels in March", "garden station", "Madrid fares Lisboa"} {
		a, err := x.Search(ctx, Query{Text: text, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		b, err := x.Search(ctx, Query{Text: text, K: 10, NoFuzzy: true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: %v with typo tolerance, %v without", text, a, b)
		}
	}
	// A misspelled word beside an exact one: the exact match keeps its
	// rank; the fuzzy one only adds.
	got := find(t, x, Query{Text: "Madrid Lisbn", K: 4})
	if len(got) < 2 || got[0] != "mad" {
		t.Fatalf("Madrid Lisbn: %v, want mad first", got)
	}
}

// A misspelled word widens to its fuzzyExpansions nearest terms only:
// fewest edits, then the most frequent, then byte order. "hoat" is one
// edit from coat (3 chunks), boat and goat (2), moat and heat (1); the
// chunks that hold only moat or heat are not matched (bleve's fuzzy
// query took every term in reach and scored all their postings).
func TestFuzzyNearestTermsOnly(t *testing.T) {
	x := openT(t, t.TempDir(), Options{})
	var e evs
	for i, c := range []string{"coat one", "coat two", "coat three", "boat one", "boat two", "goat one", "goat two", "moat one", "heat one"} {
		e.store(fmt.Sprintf("d%02d-%s", i, strings.Fields(c)[0]), "s", "user", log.KindConversation, int64(i+1), c)
	}
	applyAll(t, x, e.out, 0)
	got := map[string]bool{}
	for _, id := range find(t, x, Query{Text: "hoat", K: 20}) {
		got[strings.SplitN(id, "-", 2)[1]] = true
	}
	if want := map[string]bool{"coat": true, "boat": true, "goat": true}; !reflect.DeepEqual(got, want) {
		t.Fatalf("hoat matched the chunks of %v, want %v", got, want)
	}
}
