package timelines

import (
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestBulkBuildEqualsCommits: a bulk build (BeginBulk … EndBulk) stores
// what plain commits store, from an empty store (where flushes skip the
// lookup of chunks the filter of stored keys never saw) and over
// committed chunks (where they must not), with chunks stored again,
// edited and removed across commits.
func TestBulkBuildEqualsCommits(t *testing.T) {
	evs := projtest.Events(11, 600)
	commitEvery := func(tl *Timelines, evs []*log.Event, n int) {
		for i := 0; i < len(evs); i += n {
			applyCommit(t, tl, evs[i:min(i+n, len(evs))])
		}
	}
	digest := func(tl *Timelines) [32]byte {
		d, err := tl.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	inc := open(t, t.TempDir())
	defer inc.Close()
	commitEvery(inc, evs, 7)
	want := digest(inc)

	bulk := open(t, t.TempDir())
	defer bulk.Close()
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

	late := open(t, t.TempDir())
	defer late.Close()
	commitEvery(late, evs[:len(evs)/2], 100)
	late.BeginBulk()
	commitEvery(late, evs[len(evs)/2:], 100)
	if err := late.EndBulk(); err != nil {
		t.Fatal(err)
	}
	if got := digest(late); got != want {
		t.Fatalf("bulk build over committed chunks: digest %x, commits %x", got, want)
	}
	n, err := late.Count()
	if err != nil || n != len(projtest.LiveIDs(evs)) {
		t.Fatalf("count %d %v, want %d", n, err, len(projtest.LiveIDs(evs)))
	}
}
