package projstd

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
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
// place), the second, one after the index is loaded, the projection that
// built the store (meta and session view kept by Apply, index updated by
// Commit) and a reopened one with a warm index. Before the fix a fresh
// projection's first two searches declined and filtered the full top
// fetch, which drops the sessions' chunks ranked below it store-wide,
// while the loaded index answered the exact top k within the sessions: an
// attached client and a process that opened the store printed different
// results.
func TestVectorsSessionSearchSameOnEveryPath(t *testing.T) {
	subset, declined := sessionSearchPaths(t, VectorOptions{})
	if subset == 0 || declined == 0 {
		t.Fatalf("%d subset searches, %d declined: both paths must be compared", subset, declined)
	}
}

// Above ExactBelow the graph serves, and every process declines the
// subset search: the graph the builder keeps in memory and the one a
// process opens (graph.bin, its delta records and the operations after
// them) answer the same.
func TestVectorsSessionSearchSameOnGraph(t *testing.T) {
	subset, _ := sessionSearchPaths(t, VectorOptions{Graph: true, ExactBelow: 1000, GraphEvery: 300})
	if subset != 0 {
		t.Fatalf("%d subset searches on the graph", subset)
	}
}

// sessionSearchPaths runs random session-filtered searches through every
// path and fails if any two answers differ, or if a subset search differs
// from the exact top k within the sessions. It returns how many searches
// the warm projection served from the subset and how many it declined.
func sessionSearchPaths(t *testing.T, o VectorOptions) (subset, declined int) {
	dir := t.TempDir()
	built, err := OpenVectors(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { built.Close() }()
	evs := projtest.Generate(projtest.Config{Seed: 21, N: 3000, Vocab: 3000})
	// In three commits, searched between them: the builder's session
	// view and index are updated in place, as a long-running owner's.
	ctx := context.Background()
	for i, cut := range []int{1000, 2000, len(evs)} {
		applyCommit(t, built, evs[[]int{0, 1000, 2000}[i]:cut])
		q, err := built.EmbedQuery(ctx, "cello practice", nil)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 2; j++ {
			if _, _, err := built.SearchVectorIn(ctx, q, 10, []string{""}); err != nil {
				t.Fatal(err)
			}
			if _, err := built.SearchVector(ctx, q, 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	if o.ExactBelow != 0 && !built.graphOn {
		t.Fatalf("%d live, ExactBelow %d: no graph", built.live, o.ExactBelow)
	}
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
	type trial struct {
		q   []float32
		set []string
		k   int
		got [][]vector.Hit
	}
	r := rand.New(rand.NewSource(4))
	var trials []*trial
	for i := 0; i < 40; i++ {
		q, err := built.EmbedQuery(ctx, projtest.QueryText(r), nil)
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
		tr.got = append(tr.got, annIn(t, built, tr.q, tr.k, 4*tr.k, tr.set, sessionOf))
		trials = append(trials, tr)
	}
	if err := built.Close(); err != nil {
		t.Fatal(err)
	}
	// A process that opens the store: one projection per trial, so each
	// trial's first search is a process's first.
	loadedIn := 0
	for _, tr := range trials {
		fresh, err := OpenVectors(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // in place, in place or loading, loaded
			tr.got = append(tr.got, annIn(t, fresh, tr.q, tr.k, 4*tr.k, tr.set, sessionOf))
		}
		// A declined subset searches everything through scan.bin, which
		// loads nothing.
		if fresh.idx != nil {
			loadedIn++
		}
		if err := fresh.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if loadedIn == 0 && !built.graphOn {
		t.Fatal("no trial's searches loaded the index: the loaded path is untested")
	}
	// Reopened with meta loaded as Apply loads it and the index warm.
	warm, err := OpenVectors(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	if o.ExactBelow != 0 && warm.graphSize == 0 {
		t.Fatal("graph.bin not written: opening the graph replays operations only")
	}
	if err := warm.loadMeta(); err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Index(); err != nil {
		t.Fatal(err)
	}
	differs, hits := 0, 0
	for n, tr := range trials {
		got := append(tr.got, annIn(t, warm, tr.q, tr.k, 4*tr.k, tr.set, sessionOf))
		hits += len(got[0])
		for i := 1; i < len(got); i++ {
			if !reflect.DeepEqual(got[0], got[i]) {
				t.Fatalf("trial %d sessions %v k %d: search %d differs from the builder's:\n%s\n%s",
					n, tr.set, tr.k, i, fmt.Sprint(got[0]), fmt.Sprint(got[i]))
			}
		}
		if _, ok, err := warm.SearchVectorIn(ctx, tr.q, tr.k, tr.set); err != nil {
			t.Fatal(err)
		} else if ok {
			subset++
			if want := subsetOracle(t, warm, tr.q, tr.k, tr.set, sessionOf); !reflect.DeepEqual(got[0], want) {
				differs++
			}
		} else {
			declined++
		}
	}
	if hits == 0 {
		t.Fatal("no hits: nothing compared")
	}
	if differs != 0 {
		t.Fatalf("%d subset searches differ from the exact top k within the sessions", differs)
	}
	return subset, declined
}

// A stored chunk record that does not decode, met by the first session
// search's scan in place, is damage (the engine rebuilds the projection),
// whether or not its session is searched: the scan reads every record's.
func TestVectorsSessionScanCorruptRecordIsDamage(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applyCommit(t, v, projtest.Events(3, 200))
	err = v.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSlots)
		k, val := b.Cursor().First()
		key, _, err := splitChunk(val)
		if err != nil {
			return err
		}
		bad := append(appendChunk(key, chunkMeta{})[:1+len(key)], 0x80) // a varint cut short
		return b.Put(append([]byte(nil), k...), bad)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	v, err = OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	q, err := v.EmbedQuery(context.Background(), "cello", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, ok, err := v.SearchVectorIn(context.Background(), q, 10, []string{"no-such-session"})
	if _, damaged := projections.Damaged(err); !damaged || ok {
		t.Fatalf("corrupt record: ok %v err %v, want damage", ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, projections.DamageMarker)); err != nil {
		t.Fatalf("not flagged for a rebuild: %v", err)
	}
}
