package projstd

import (
	"bytes"
	"sort"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// The graph starts with every live vector in chunk id order, though they
// are stored in slot order (the order chunks were first stored) and the
// ids mix both key tags (the generator's "c-…" ids and hex ids): the
// graph equals one built by hand from the stored vectors sorted by id.
func TestVectorGraphStartsInIDOrder(t *testing.T) {
	evs := projtest.StoreEvents(11, 400)
	a, err := OpenVectors(t.TempDir(), VectorOptions{Graph: true, ExactBelow: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.loadMeta(); err != nil { // kept current by Apply from here
		t.Fatal(err)
	}
	last := 0 // the event that brought the last new chunk
	for i, ev := range evs {
		n := len(a.meta)
		if err := a.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if len(a.meta) > n {
			last = i
		}
	}
	evs = evs[:last+1]
	a.Close()
	if a, err = OpenVectors(t.TempDir(), VectorOptions{Graph: true, ExactBelow: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	applyCommit(t, a, evs)

	type rec struct {
		id  string
		vec []float32
	}
	var recs []rec
	var keyOrder []string // slot order, the stored order
	err = a.forEachRec(func(id string, _, b []byte) error {
		vec := make([]float32, a.opts.Embedder.Dim())
		if err := decodeVec(b, vec); err != nil {
			return err
		}
		recs = append(recs, rec{id, vec})
		keyOrder = append(keyOrder, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sort.StringsAreSorted(keyOrder) {
		t.Fatal("slot order is id order here: the test does not cover it")
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].id < recs[j].id })

	b, err := OpenVectors(t.TempDir(), VectorOptions{Graph: true, ExactBelow: len(recs)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	applyCommit(t, b, evs)
	idx, err := b.Index()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := idx.(*vector.HNSW)
	if !ok {
		t.Fatalf("index %T, want the graph", idx)
	}
	got, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want, err := vector.NewHNSW(b.opts.Embedder.Dim(), b.opts.HNSW)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := want.Add(r.id, r.vec); err != nil {
			t.Fatal(err)
		}
	}
	wb, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wb) {
		t.Fatal("graph differs from one built in id order")
	}
}
