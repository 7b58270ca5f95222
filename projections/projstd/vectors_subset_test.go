package projstd

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func applyCommit(t *testing.T, v *VectorProjection, evs []*log.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	last := evs[len(evs)-1]
	if err := v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatal(err)
	}
}

// subsetOracle is the exact top k among the chunks of sessions: every
// live vector ranked by the full exact search, then filtered.
func subsetOracle(t *testing.T, v *VectorProjection, q []float32, k int, sessions []string, sessionOf map[string]string) []vector.Hit {
	t.Helper()
	all, err := v.SearchVector(context.Background(), q, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, s := range sessions {
		in[s] = true
	}
	var out []vector.Hit
	for _, h := range all {
		s, ok := sessionOf[h.ID]
		if !ok {
			t.Fatalf("full search returned %s, which is not live", h.ID)
		}
		if in[s] && len(out) < k {
			out = append(out, h)
		}
	}
	return out
}

// liveSessions replays evs to the live chunk → session map (tombstones,
// edits), the oracle's view of what is live.
func liveSessions(t *testing.T, v *VectorProjection) map[string]string {
	t.Helper()
	m := map[string]string{}
	for id, cm := range v.meta {
		m[id] = cm.session
	}
	return m
}

// SearchVectorIn is the exact top k within the sessions, tombstoned chunks
// excluded, kept current across commits that add and remove chunks, and
// the same after a reopen (the session view then comes from the stored
// chunk records).
func TestVectorsSearchVectorInEqualsSubsetOracle(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := projtest.Generate(projtest.Config{Seed: 11, N: 3000})
	half := len(evs) / 2
	applyCommit(t, v, evs[:half])
	ctx := context.Background()
	q, err := v.EmbedQuery(ctx, "cello practice database migration", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the first scans in place, the second loads
		if _, err := v.SearchVector(ctx, q, 10); err != nil {
			t.Fatal(err)
		}
	}
	check := func(v *VectorProjection, sessionOf map[string]string) {
		t.Helper()
		var names []string
		seen := map[string]bool{}
		for _, s := range sessionOf {
			if !seen[s] {
				seen[s] = true
				names = append(names, s)
			}
		}
		sort.Strings(names)
		if len(names) < 5 {
			t.Fatalf("only %d sessions", len(names))
		}
		// Every session: more than a quarter of the store, declined (the
		// full scan is cheaper).
		if _, ok, err := v.SearchVectorIn(ctx, q, 10, names); err != nil || ok {
			t.Fatalf("all sessions: ok %v err %v, want a refusal", ok, err)
		}
		for _, set := range [][]string{names[:1], names[1:4], {names[2], "", "no-such-session"}} {
			for _, k := range []int{1, 10, 200} {
				got, ok, err := v.SearchVectorIn(ctx, q, k, set)
				if err != nil || !ok {
					t.Fatalf("sessions %v: ok %v err %v", set, ok, err)
				}
				want := subsetOracle(t, v, q, k, set, sessionOf)
				if len(want) == 0 || !reflect.DeepEqual(got, want) {
					t.Fatalf("sessions %v k %d: got %d hits, oracle %d (or differ)", set, k, len(got), len(want))
				}
			}
		}
		if got, ok, err := v.SearchVectorIn(ctx, q, 10, []string{"no-such-session"}); err != nil || !ok || len(got) != 0 {
			t.Fatalf("empty subset: %v %v %v", got, ok, err)
		}
		if got, ok, err := v.SearchVectorIn(ctx, q, 10, nil); err != nil || !ok || len(got) != 0 {
			t.Fatalf("no sessions: %v %v %v", got, ok, err)
		}
	}
	check(v, liveSessions(t, v))
	// The second half (tombstones, edits) applied while the session view
	// exists: it is updated in place.
	applyCommit(t, v, evs[half:])
	live := liveSessions(t, v)
	var gone int
	for _, ev := range evs {
		if st, ok := ev.Body.(*log.Store); ok {
			if _, ok := live[st.ChunkID]; !ok {
				gone++
			}
		}
	}
	if gone == 0 {
		t.Fatal("the stream removed no chunk: tombstones untested")
	}
	check(v, live)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened: meta is not loaded; the view is read from the chunk records.
	v2, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	for i := 0; i < 2; i++ {
		if _, err := v2.SearchVector(ctx, q, 10); err != nil {
			t.Fatal(err)
		}
	}
	if v2.meta != nil {
		t.Fatal("meta loaded by searches: the reopen case is not tested")
	}
	check(v2, live)
}

// Once the graph serves, it declines: the engine searches the graph and
// filters.
func TestVectorsSearchVectorInDeclinesOnGraph(t *testing.T) {
	v, err := OpenVectors(t.TempDir(), VectorOptions{Graph: true, ExactBelow: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	applyCommit(t, v, projtest.Events(5, 300))
	ctx := context.Background()
	q, err := v.EmbedQuery(ctx, "cello", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.SearchVector(ctx, q, 10); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := v.SearchVectorIn(ctx, q, 10, []string{""}); err != nil || ok {
		t.Fatalf("graph: ok %v err %v, want a refusal", ok, err)
	}
}
