package projstd

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// annIn is the query engine's ANN channel under a session filter
// (query.runVec): the searcher's subset search, or when it declines the
// full search of fetch hits cut to the sessions' first k.
func annIn(t *testing.T, v *VectorProjection, q []float32, k, fetch int, sessions []string, sessionOf map[string]string) []vector.Hit {
	t.Helper()
	ctx := context.Background()
	hits, ok, err := v.SearchVectorIn(ctx, q, k, sessions)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return hits
	}
	all, err := v.SearchVector(ctx, q, fetch)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, s := range sessions {
		in[s] = true
	}
	var out []vector.Hit
	for _, h := range all {
		if in[sessionOf[h.ID]] && len(out) < k {
			out = append(out, h)
		}
	}
	return out
}

// A session-filtered vector search answers the same whichever path serves
// it: the first search of a freshly opened projection (vectors scanned in
// place), the second, one after the index is loaded, and the projection
// that built the store (meta and session view kept by Apply). Before the
// fix the first two declined and filtered the full top fetch, which drops
// the sessions' chunks ranked below it store-wide, while the loaded index
// answered the exact top k within the sessions: an attached client and a
// process that opened the store printed different results.
func TestVectorsSessionSearchSameOnEveryPath(t *testing.T) {
	dir := t.TempDir()
	built, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applyCommit(t, built, projtest.Generate(projtest.Config{Seed: 21, N: 3000, Vocab: 3000}))
	sessionOf := liveSessions(t, built)
	var names []string
	seen := map[string]bool{}
	for _, s := range sessionOf {
		if !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	sort.Strings(names)
	if len(names) < 8 {
		t.Fatalf("only %d sessions", len(names))
	}
	if err := built.Close(); err != nil {
		t.Fatal(err)
	}
	type trial struct {
		q   []float32
		set []string
		k   int
		got [][]vector.Hit
	}
	ctx := context.Background()
	r := rand.New(rand.NewSource(4))
	var trials []*trial
	for i := 0; i < 40; i++ {
		q, err := (&VectorProjection{opts: built.opts}).EmbedQuery(ctx, projtest.QueryText(r), nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + r.Intn(3)
		if i%10 == 9 {
			n = len(names) // most of the store: declined on every path
		}
		tr := &trial{q: q, k: []int{10, 40}[i%2]}
		for _, j := range r.Perm(len(names))[:n] {
			tr.set = append(tr.set, names[j])
		}
		if i%4 == 0 {
			tr.set = append(tr.set, "", tr.set[0], "no-such-session")
		}
		trials = append(trials, tr)
	}
	// A process that opens the store: one projection per trial, so each
	// trial's first search is a process's first.
	for _, tr := range trials {
		fresh, err := OpenVectors(dir, VectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // in place, in place or loading, loaded
			tr.got = append(tr.got, annIn(t, fresh, tr.q, tr.k, 4*tr.k, tr.set, sessionOf))
		}
		if fresh.idx == nil {
			t.Fatal("three searches did not load the index: the loaded path is untested")
		}
		if err := fresh.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The owner: meta loaded as Apply loads it, the index warm.
	owner, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := owner.loadMeta(); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Index(); err != nil {
		t.Fatal(err)
	}
	differs, declined, subset := 0, 0, 0
	for n, tr := range trials {
		got := append(tr.got, annIn(t, owner, tr.q, tr.k, 4*tr.k, tr.set, sessionOf))
		if len(got[0]) == 0 {
			t.Fatalf("trial %d: no hits", n)
		}
		for i := 1; i < len(got); i++ {
			if !reflect.DeepEqual(got[0], got[i]) {
				t.Fatalf("trial %d sessions %v k %d: search %d differs from the first:\n%s\n%s",
					n, tr.set, tr.k, i, fmt.Sprint(got[0]), fmt.Sprint(got[i]))
			}
		}
		if _, ok, err := owner.SearchVectorIn(ctx, tr.q, tr.k, tr.set); err != nil {
			t.Fatal(err)
		} else if ok {
			subset++
			if want := subsetOracle(t, owner, tr.q, tr.k, tr.set, sessionOf); !reflect.DeepEqual(got[0], want) {
				differs++
			}
		} else {
			declined++
		}
	}
	if subset == 0 || declined == 0 {
		t.Fatalf("%d subset searches, %d declined: both paths must be compared", subset, declined)
	}
	if differs != 0 {
		t.Fatalf("%d subset searches differ from the exact top k within the sessions", differs)
	}
}
