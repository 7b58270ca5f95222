package projstd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestGraphDeltaTornTail: bytes of graph.delta beyond the recorded length
// (a crash after the append, before the record) are ignored on open and
// cut off by the next save; the graph ends as a single uninterrupted build.
func TestGraphDeltaTornTail(t *testing.T) {
	evs := projtest.Events(5, 900)
	o := VectorOptions{GraphEvery: 50, Graph: true, ExactBelow: 200}
	graphOf := func(v *VectorProjection) []byte {
		t.Helper()
		idx, err := v.Index()
		if err != nil {
			t.Fatal(err)
		}
		b, err := idx.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tears := 0
	run := func(dir string, tear bool) []byte {
		v, err := OpenVectors(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if err := v.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if (i+1)%60 != 0 && i != len(evs)-1 {
				continue
			}
			if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "graph.delta")
			if fi, err := os.Stat(path); tear && err == nil && fi.Size() > 0 {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte("torn record"))
				tears++
				f.Close()
				v.Close()
				if v, err = OpenVectors(dir, o); err != nil {
					t.Fatal(err)
				}
			}
		}
		defer v.Close()
		return graphOf(v)
	}
	want := run(t.TempDir(), false)
	if got := run(t.TempDir(), true); !bytes.Equal(want, got) {
		t.Fatal("a torn delta tail changed the graph")
	}
	if tears == 0 {
		t.Fatal("no delta was written to tear")
	}
}
