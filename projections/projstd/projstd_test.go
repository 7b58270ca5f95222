package projstd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func TestVectorConformance(t *testing.T) {
	projtest.Run(t, func(t *testing.T, dir string) projections.Projection {
		v, err := OpenVectors(dir, VectorOptions{GraphEvery: 50})
		if err != nil {
			t.Fatal(err)
		}
		return v
	})
}

// Contains lets the conformance suite check tombstones.
func (v *VectorProjection) Contains(id string) (bool, error) {
	if err := v.loadMeta(); err != nil {
		return false, err
	}
	_, ok := v.meta[id]
	return ok, nil
}

// The graph file + operation replay path gives the same graph bytes as one
// uninterrupted build, and as a build with a different graph interval and
// other commit boundaries: the graph starts (at ExactBelow live vectors)
// at the same operation whichever commit it falls in.
func TestVectorGraphBytesDeterministic(t *testing.T) {
	evs := projtest.Events(7, 1500)
	deltas := 0 // commits after which graph.delta held records
	build := func(graphEvery, commitEvery int, reopen bool) []byte {
		dir := t.TempDir()
		o := VectorOptions{GraphEvery: graphEvery, Graph: true, ExactBelow: 300}
		v, err := OpenVectors(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if err := v.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if (i+1)%commitEvery == 0 || i == len(evs)-1 {
				if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(filepath.Join(dir, "graph.delta")); err == nil && fi.Size() > 0 {
					deltas++
				}
				if reopen {
					v.Close()
					if v, err = OpenVectors(dir, o); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		defer v.Close()
		idx, err := v.Index()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := idx.(*vector.HNSW); !ok {
			t.Fatalf("index %T after %d events, want the graph", idx, len(evs))
		}
		b, err := idx.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := build(100000, 100000, false)
	for _, tc := range []struct{ graph, commit int }{{40, 7}, {1000, 250}, {3, 1}} {
		deltas = 0
		if b := build(tc.graph, tc.commit, true); !bytes.Equal(a, b) {
			t.Fatalf("graph bytes differ (graphEvery %d, commitEvery %d)", tc.graph, tc.commit)
		}
		// Once graph.bin exists, commits append deltas (opened, with
		// reopen, from graph.bin + graph.delta).
		if tc.commit < 1000 && deltas == 0 {
			t.Fatalf("graphEvery %d, commitEvery %d: no commit saved a delta", tc.graph, tc.commit)
		}
	}
}

// The whole standard set over a real encrypted log: a rebuild twice, and a
// build in many small catch-ups, give the same digests.
func TestSetDeterministicOverRealLog(t *testing.T) {
	kr, _ := crypto.NewKeyring()
	l, err := log.Open(filepath.Join(t.TempDir(), "log"), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	evs := projtest.Events(11, 1200)
	incDir := filepath.Join(t.TempDir(), "inc")
	inc, err := Open(incDir, l, Options{Vectors: VectorOptions{GraphEvery: 200}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(evs); i += 97 {
		var batch []log.Entry
		for _, ev := range evs[i:min(i+97, len(evs))] {
			batch = append(batch, log.Entry{ID: ev.ID, Time: ev.Time, Body: ev.Body})
		}
		if _, err := l.AppendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := inc.CatchUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := inc.Projector.Digests()
	inc.Close()
	for round := 0; round < 2; round++ {
		full, err := Open(filepath.Join(t.TempDir(), "full"), l, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := full.CatchUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		got, _ := full.Projector.Digests()
		full.Close()
		for _, n := range Names {
			if got[n] == "" || got[n] != want[n] {
				t.Fatalf("round %d: %s digest %s, incremental %s", round, n, got[n], want[n])
			}
		}
	}
	// Reopening the incremental set resumes from its checkpoints without work.
	inc, err = Open(incDir, l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inc.Close()
	st, _ := inc.Projector.Status()
	for _, s := range st {
		if s.Behind != 0 || !s.OnChain {
			t.Fatalf("%s not resumed: %+v", s.Name, s)
		}
	}
}
