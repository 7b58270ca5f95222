package dedup

import (
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestBulkBuildEqualsCommits: a bulk build (BeginBulk … EndBulk) stores
// what plain commits store, from an empty store (where the writes skip
// the lookup of items the filter of stored keys never saw) and over
// committed items, pending and in the file (where they must not), with
// chunks stored again, edited and removed across commits.
func TestBulkBuildEqualsCommits(t *testing.T) {
	evs := projtest.Generate(projtest.Config{Seed: 7, N: 900, Conversation: true})
	open := func() *Index {
		x, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	commitEvery := func(x *Index, evs []*log.Event, n int) {
		for i := 0; i < len(evs); i += n {
			batch := evs[i:min(i+n, len(evs))]
			for _, ev := range batch {
				if err := x.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			last := batch[len(batch)-1]
			if err := x.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
				t.Fatal(err)
			}
		}
	}
	digest := func(x *Index) [32]byte {
		d, err := x.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	inc := open()
	commitEvery(inc, evs, 7)
	want := digest(inc)

	bulk := open()
	bulk.BeginBulk()
	if bulk.stored == nil {
		t.Fatal("a bulk build of an empty store keeps no filter")
	}
	commitEvery(bulk, evs, 100)
	if err := bulk.EndBulk(); err != nil {
		t.Fatal(err)
	}
	if got := digest(bulk); got != want {
		t.Fatalf("bulk build from empty: digest %x, commits %x", got, want)
	}

	// Committed items only pending (a first commit without a tombstone,
	// which would flush), then in the file.
	for _, flushed := range []bool{false, true} {
		late := open()
		head := 30
		for _, ev := range evs[:head] {
			if _, ok := ev.Body.(*log.Tombstone); ok {
				t.Fatal("a tombstone in the first commit: it flushes")
			}
		}
		commitEvery(late, evs[:head], head)
		if !flushed && len(late.pend.m[bItems]) == 0 {
			t.Fatal("the first commit's items are not pending")
		}
		if flushed {
			if err := late.Compact(); err != nil {
				t.Fatal(err)
			}
			if err := late.flush(); err != nil {
				t.Fatal(err)
			}
		}
		late.BeginBulk()
		commitEvery(late, evs[head:], 100)
		if err := late.EndBulk(); err != nil {
			t.Fatal(err)
		}
		if got := digest(late); got != want {
			t.Fatalf("bulk build over committed items (flushed %v): digest %x, commits %x", flushed, got, want)
		}
	}
}
