package timelines

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestBulkBuildEqualsCommits: a bulk build (BeginBulk … EndBulk) stores
// what plain commits store, from an empty store (where flushes skip the
// lookup of chunks the filter of stored keys never saw) and over
// committed chunks (where they must not), with chunks stored again,
// edited and removed across commits.
func TestBulkBuildEqualsCommits(t *testing.T) {
	projtest.SmallPendingWindow(t)
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

// hasIDsMark reports whether the file holds the mark of ids kept out of
// "ids" (idsbulk.go).
func hasIDsMark(t *testing.T, tl *Timelines) bool {
	t.Helper()
	var marked bool
	if err := tl.db.View(func(tx *bolt.Tx) error {
		marked = tx.Bucket(bMeta).Get(kIDsStale) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return marked
}

// TestBulkBuildDefersIDs: a bulk build keeps the ids of the chunks it
// stores new out of "ids" (marked in the file) until EndBulk, a read in
// between writes them first and sees every chunk, and a build stopped
// before EndBulk (the process killed: the pending ids are lost) is
// brought back by Open from the records and the time index, to the
// digest of plain commits.
func TestBulkBuildDefersIDs(t *testing.T) {
	projtest.SmallPendingWindow(t)
	evs := projtest.Events(13, 600)
	inc := open(t, t.TempDir())
	defer inc.Close()
	for i := 0; i < len(evs); i += 9 {
		applyCommit(t, inc, evs[i:min(i+9, len(evs))])
	}
	want, err := inc.Digest()
	if err != nil {
		t.Fatal(err)
	}
	wantN, err := inc.Count()
	if err != nil {
		t.Fatal(err)
	}

	// A read in the middle of a bulk build.
	mid := open(t, t.TempDir())
	defer mid.Close()
	mid.BeginBulk()
	applyCommit(t, mid, evs[:300])
	if mid.bulk.Len() == 0 || !hasIDsMark(t, mid) {
		t.Fatalf("bulk build: %d ids pending, mark %v; want some, and the mark", mid.bulk.Len(), hasIDsMark(t, mid))
	}
	if _, err := mid.Count(); err != nil {
		t.Fatal(err)
	}
	if mid.bulk.Len() != 0 || hasIDsMark(t, mid) {
		t.Fatalf("after a read: %d ids pending, mark %v", mid.bulk.Len(), hasIDsMark(t, mid))
	}
	applyCommit(t, mid, evs[300:])
	if err := mid.EndBulk(); err != nil {
		t.Fatal(err)
	}
	if hasIDsMark(t, mid) {
		t.Fatal("EndBulk left the mark")
	}
	if got, err := mid.Digest(); err != nil || got != want {
		t.Fatalf("bulk build with a read: digest %x %v, commits %x", got, err, want)
	}

	// A build that stops before EndBulk, from empty and over committed
	// chunks.
	for _, from := range []int{0, 200} {
		dir := t.TempDir()
		crash := open(t, dir)
		if from > 0 {
			applyCommit(t, crash, evs[:from])
		}
		crash.BeginBulk()
		for i := from; i < len(evs); i += 100 {
			applyCommit(t, crash, evs[i:min(i+100, len(evs))])
		}
		if !hasIDsMark(t, crash) {
			t.Fatal("no mark before EndBulk")
		}
		crash.bulk = nil // the process dies: what it kept in memory is gone
		if err := crash.db.Close(); err != nil {
			t.Fatal(err)
		}
		crash.closed = true
		re := open(t, dir)
		if hasIDsMark(t, re) {
			t.Fatal("Open left the mark")
		}
		if got, err := re.Digest(); err != nil || got != want {
			t.Fatalf("from %d: reopened after a build cut short: digest %x %v, commits %x", from, got, err, want)
		}
		if n, err := re.Count(); err != nil || n != wantN {
			t.Fatalf("from %d: count %d %v, want %d", from, n, err, wantN)
		}
		re.Close()
	}
}
