package projstd

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// Without a graph, opening the vector projection loads nothing; every
// search scans scan.bin and loads nothing either, with the hits of the
// loaded exact index; no graph file is written.
func TestVectorsLoadLazilyAndScanMatchesIndex(t *testing.T) {
	dir := t.TempDir()
	evs := projtest.Events(9, 600)
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	last := evs[len(evs)-1]
	if err := v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatal(err)
	}
	want, err := v.Digest()
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if v, err = OpenVectors(dir, VectorOptions{}); err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.idx != nil || v.meta != nil || v.graphOn {
		t.Fatalf("open loaded state: idx %v, meta %d, graph %v", v.idx != nil, len(v.meta), v.graphOn)
	}
	ctx := context.Background()
	for _, q := range []string{"cello practice", "database migration rollback", "tomato garden"} {
		v.idx, v.scans = nil, 0
		scanned, err := v.SearchText(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if v.idx != nil {
			t.Fatal("the first search loaded the index")
		}
		again, err := v.SearchText(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if v.idx != nil {
			t.Fatal("the second search loaded the index")
		}
		if !reflect.DeepEqual(scanned, again) {
			t.Fatalf("%q: scans %v, then %v", q, scanned, again)
		}
		if _, err := v.index(); err != nil {
			t.Fatal(err)
		}
		loaded, err := v.SearchText(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(scanned) == 0 || !reflect.DeepEqual(scanned, loaded) {
			t.Fatalf("%q: scan %v, index %v", q, scanned, loaded)
		}
	}
	if got, err := v.Digest(); err != nil || got != want {
		t.Fatalf("digest after reopen %x, want %x (%v)", got, want, err)
	}
	if v.Size() <= 0 || fileExists(dir, "graph.bin") {
		t.Fatal("graph.bin written below the threshold")
	}
}

func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
