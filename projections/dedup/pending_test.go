package dedup

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// setFlush sets FlushEntries and flushChunk for one test.
func setFlush(t *testing.T, entries, chunk int) {
	oe, oc := FlushEntries, flushChunk
	FlushEntries, flushChunk = entries, chunk
	t.Cleanup(func() { FlushEntries, flushChunk = oe, oc })
}

// The conformance suite again with every Commit written to the file in
// transactions of three keys (flushes of several transactions).
func TestConformanceFlushEveryCommit(t *testing.T) {
	setFlush(t, 1, 3)
	TestConformance(t)
}

// Reads through pending see what reads of the file see when every Commit
// is written at once, after every Commit, and the files end equal: the
// mixed stream (edits of documents, tombstones by id, session and time).
func TestPendingReadsEqualFile(t *testing.T) {
	evs := projtest.Generate(projtest.Config{Seed: 7, N: 900, Conversation: true})
	held, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	direct, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	pending := 0
	setFlush(t, FlushEntries, flushChunk) // restored at the end
	defEntries, defChunk := FlushEntries, flushChunk
	for i := 0; i < len(evs); i += 13 {
		batch := evs[i:min(i+13, len(evs))]
		last := batch[len(batch)-1]
		cp := projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}
		// held keeps its commits in memory (but for tombstones); direct
		// writes each one in transactions of 40 keys.
		for _, x := range []*Index{held, direct} {
			if x == held {
				FlushEntries, flushChunk = 1<<30, 8192
			} else {
				FlushEntries, flushChunk = 1, 40
			}
			for _, ev := range batch {
				if err := x.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Commit(cp); err != nil {
				t.Fatal(err)
			}
		}
		FlushEntries, flushChunk = defEntries, defChunk
		pending = max(pending, held.pend.n)
		sameReads(t, held, direct, evs[max(0, i-130):i+len(batch)])
	}
	t.Logf("at most %d keys held in memory", pending)
	if pending == 0 {
		t.Fatal("nothing was held in memory")
	}
	d1, err1 := held.Digest()
	d2, err2 := direct.Digest()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Fatalf("digests %x %v, %x %v", d1, err1, d2, err2)
	}
}

// A flush that did not finish (the process died between its
// transactions) leaves the file marked; opening it starts over.
func TestUnfinishedFlushIsRebuilt(t *testing.T) {
	setFlush(t, 1, 4)
	dir := t.TempDir()
	x, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	evs := projtest.StoreEvents(5, 50)
	applyCommit(t, x, evs)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "dedup.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFlushing, []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	x, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if cp, _ := x.Checkpoint(); cp.Seq != 0 {
		t.Fatalf("checkpoint %d after an unfinished flush, want 0", cp.Seq)
	}
	if n, _ := x.Count(); n != 0 {
		t.Fatalf("%d items after an unfinished flush, want 0", n)
	}
}
