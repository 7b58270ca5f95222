package vector

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestLevelDistribution(t *testing.T) {
	const n = 200000
	counts := make([]int, maxLevelCap+1)
	for i := 0; i < n; i++ {
		counts[levelFor(idOf(i), 16)]++
	}
	// P(level >= 1) = 1/16, P(level >= 2) = 1/256.
	ge1 := float64(n-counts[0]) / n
	ge2 := float64(n-counts[0]-counts[1]) / n
	if ge1 < 0.055 || ge1 > 0.07 || ge2 < 0.0030 || ge2 > 0.0048 {
		t.Fatalf("P(l>=1)=%.4f P(l>=2)=%.4f, want ~0.0625 and ~0.0039 (counts %v)", ge1, ge2, counts)
	}
	if levelFor("abc", 16) != levelFor("abc", 16) {
		t.Fatal("level not a function of the id")
	}
}

// ops is a scripted sequence of adds (with replaces) and deletes.
func runOps(t *testing.T, g *HNSW, vs [][]float32, seed uint64, from, to int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	for op := 0; op < to; op++ {
		a, b, c := r.IntN(10), r.IntN(len(vs)), r.IntN(len(vs))
		if op < from {
			continue
		}
		var err error
		switch {
		case a == 0:
			err = g.Delete(idOf(b))
		case a == 1:
			err = g.Add(idOf(b), vs[c]) // replace (or add) with another vector
		default:
			err = g.Add(idOf(b), vs[b])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestHNSWDeterminism(t *testing.T) {
	vs := clusteredData(11, 1500, 32, 10, 0.1)
	build := func() *HNSW {
		g := mustHNSW(t, 32, HNSWOptions{M: 8, EfConstruction: 48})
		runOps(t, g, vs, 3, 0, 4000)
		return g
	}
	a, b := build(), build()
	ab, _ := a.MarshalBinary()
	bb, _ := b.MarshalBinary()
	if !bytes.Equal(ab, bb) {
		t.Fatal("two builds from the same operations serialize differently")
	}

	// Marshal halfway, unmarshal into a fresh index, continue: same bytes
	// as never stopping (slot squeezing preserves order and tie-breaks).
	c := mustHNSW(t, 32, HNSWOptions{M: 8, EfConstruction: 48})
	runOps(t, c, vs, 3, 0, 2000)
	mid, _ := c.MarshalBinary()
	d := mustHNSW(t, 32, HNSWOptions{})
	if err := d.UnmarshalBinary(mid); err != nil {
		t.Fatal(err)
	}
	runOps(t, d, vs, 3, 2000, 4000)
	db, _ := d.MarshalBinary()
	if !bytes.Equal(ab, db) {
		t.Fatal("marshal/unmarshal midway changed the final graph")
	}

	// A different interleaving reaching the same content: same Digest (the
	// graph may differ), equal to Exact's.
	e := mustHNSW(t, 32, HNSWOptions{M: 8, EfConstruction: 48})
	x := mustExact(t, 32)
	for i := len(vs) - 1; i >= 0; i-- {
		id := idOf(i)
		if _, ok := a.lookup(id); !ok {
			continue
		}
		j, _ := a.lookup(id)
		v := a.vec(j)
		if err := e.Add(id, vs[(i+1)%len(vs)]); err != nil { // wrong first, replaced below
			t.Fatal(err)
		}
		if err := e.Add(id, v); err != nil {
			t.Fatal(err)
		}
		if err := x.Add(id, v); err != nil {
			t.Fatal(err)
		}
	}
	if e.Digest() != a.Digest() || x.Digest() != a.Digest() {
		t.Fatal("same content, different digests")
	}
	xb, _ := x.MarshalBinary()
	x2 := mustExact(t, 32)
	for i := 0; i < len(vs); i++ { // ascending this time
		if j, ok := a.lookup(idOf(i)); ok {
			if err := x2.Add(idOf(i), a.vec(j)); err != nil {
				t.Fatal(err)
			}
		}
	}
	x2b, _ := x2.MarshalBinary()
	if !bytes.Equal(xb, x2b) {
		t.Fatal("Exact serialization depends on insertion order")
	}
}

func TestHNSWRecallClustered(t *testing.T) {
	n, nq := 8000, 200
	if testing.Short() {
		n, nq = 2000, 100
	}
	const dim = 384
	vs := clusteredData(21, n+nq, dim, 50, 0.04)
	g := mustHNSW(t, dim, HNSWOptions{})
	x := mustExact(t, dim)
	addAll(t, g, vs[:n])
	addAll(t, x, vs[:n])
	rc := recall(t, x, g, vs[n:], 10)
	t.Logf("HNSW recall@10, %d clustered 384-d vectors (50 clusters), M=16 efC=128 efS=128: %.4f", n, rc)
	if rc < 0.95 {
		t.Fatalf("recall@10 = %.4f < 0.95", rc)
	}

	// Delete 20% (including, very likely, upper-level nodes) and re-check:
	// repairs must keep recall and deleted ids must never come back.
	for i := 0; i < n; i += 5 {
		for _, idx := range []Index{g, x} {
			if err := idx.Delete(idOf(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if g.entry >= 0 && g.lvl[g.entry] < 0 {
		t.Fatal("entry point is a deleted node")
	}
	rc = recall(t, x, g, vs[n:], 10)
	t.Logf("after deleting 20%%: recall@10 = %.4f", rc)
	if rc < 0.95 {
		t.Fatalf("recall@10 after deletes = %.4f < 0.95", rc)
	}
	for _, q := range vs[n : n+20] {
		hits, _ := g.Search(q, 10)
		for _, h := range hits {
			var i int
			if _, err := fmtSscan(h.ID, &i); err == nil && i%5 == 0 {
				t.Fatalf("deleted id %s returned", h.ID)
			}
		}
	}
}

func TestHNSWRecallHashSentences(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1500
	}
	texts := sentences(5, n+100)
	emb, _ := NewHashEmbedder(0)
	vs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	g := mustHNSW(t, emb.Dim(), HNSWOptions{})
	x := mustExact(t, emb.Dim())
	addAll(t, g, vs[:n])
	addAll(t, x, vs[:n])
	rc := recall(t, x, g, vs[n:], 10)
	t.Logf("HNSW recall@10 on %d HashEmbedder sentence vectors: %.4f", n, rc)
	if rc < 0.95 {
		t.Fatalf("recall@10 = %.4f < 0.95", rc)
	}
}

func TestHNSWDeleteEntryPoint(t *testing.T) {
	vs := uniformData(3, 400, 16)
	g := mustHNSW(t, 16, HNSWOptions{M: 4})
	x := mustExact(t, 16)
	addAll(t, g, vs)
	addAll(t, x, vs)
	// Delete entry points repeatedly; each time the new entry must be the
	// lowest-index node of the highest remaining level.
	for round := 0; round < 50 && g.entry >= 0; round++ {
		id := g.id(g.entry)
		if err := g.Delete(id); err != nil {
			t.Fatal(err)
		}
		_ = x.Delete(id)
		want, wl := int32(-1), -1
		for i, lv := range g.lvl {
			if int(lv) > wl {
				want, wl = int32(i), int(lv)
			}
		}
		if g.entry != want || g.maxLevel != wl {
			t.Fatalf("entry %d/%d, want %d/%d", g.entry, g.maxLevel, want, wl)
		}
	}
	if rc := recall(t, x, g, vs[:50], 10); rc < 0.95 {
		t.Fatalf("recall after deleting 50 entry points = %.3f", rc)
	}
	for _, v := range vs { // delete everything: empty again
		_ = g.Delete(idOf(indexOfVec(vs, v)))
	}
	if g.Len() != 0 || g.entry != -1 {
		t.Fatalf("Len=%d entry=%d after deleting all", g.Len(), g.entry)
	}
	if hits, err := g.Search(vs[0], 3); err != nil || len(hits) != 0 {
		t.Fatalf("search emptied index = %v, %v", hits, err)
	}
	addAll(t, g, vs[:10])
	if hits, _ := g.Search(vs[3], 1); len(hits) != 1 || hits[0].ID != idOf(3) {
		t.Fatalf("reuse after emptying: %v", hits)
	}
}

func indexOfVec(vs [][]float32, v []float32) int {
	for i := range vs {
		if &vs[i][0] == &v[0] {
			return i
		}
	}
	return -1
}

func TestHNSWSearchExactMatchesExact(t *testing.T) {
	vs := uniformData(17, 300, 24)
	g, x := mustHNSW(t, 24, HNSWOptions{M: 6}), mustExact(t, 24)
	for _, idx := range []Index{g, x} {
		addAll(t, idx, vs[:250])
		_ = idx.Add("zero", make([]float32, 24))
		for i := 0; i < 250; i += 4 {
			_ = idx.Delete(idOf(i))
		}
	}
	for _, q := range vs[250:] {
		a, err := g.SearchExact(q, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := x.Search(q, 7)
		if len(a) != len(b) {
			t.Fatalf("SearchExact %v, Exact %v", a, b)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("SearchExact %v, Exact %v", a, b)
			}
		}
	}
	if _, err := g.SearchExact(vs[0], 0); !errors.Is(err, ErrInvalidK) {
		t.Fatalf("k=0: %v", err)
	}
}
