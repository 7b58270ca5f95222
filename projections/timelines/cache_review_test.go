package timelines

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// A reader whose snapshot is older than the transaction it reads in (a
// commit landed in between: bbolt has committed, the cache not yet moved)
// must not mix the older state's cached records into the newer state's
// index walk. Here the older state cached "a3: no such chunk"; the newer
// state's session index names a3 after a2, and the turns after a2 must be
// a3, not a false ErrCorrupt ("index names missing chunk"), which the
// query engine would take for damage and rebuild the projection over.
func TestReadCacheOlderSnapshotNewerTx(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "one"),
		conv("a2", "A", "assistant", 2000, "two"),
		conv("a3", "A", "user", 3000, "three"),
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs[:2])
	if _, ok, err := tl.ChunkBare("a3"); err != nil || ok {
		t.Fatalf("a3 before its store: %v %v", ok, err)
	}
	old, err := tl.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tl.cache.chunk(old.gen, "a3"); !ok {
		t.Fatal("the absence of a3 was not cached (the test needs it)")
	}
	var list []*Chunk
	var rerr error
	ran := false
	tl.afterWrite = func() {
		ran = true
		rerr = old.db.View(func(tx *bolt.Tx) error {
			if tx.ID() == old.txid {
				return errors.New("the transaction reads the older state (the test needs the newer)")
			}
			var err error
			list, err = tl.aroundTx(tx, old, "a2", 0, 1)
			return err
		})
	}
	applyCommit(t, tl, evs[2:])
	tl.afterWrite = nil
	if !ran {
		t.Fatal("the write hook did not run")
	}
	if rerr != nil {
		t.Fatalf("turns after a2 read in the newer state with an older snapshot: %v", rerr)
	}
	if len(list) != 1 || list[0].ID != "a3" {
		t.Fatalf("turns after a2 = %v, want a3", list)
	}
}

// The text of a tombstoned chunk does not stay in the cache: a reader
// that looked a chunk up before its tombstone and reads its content after
// the tombstone's commit (the log still returns it: it was looked up
// live) must not leave that text cached under the state without the chunk.
func TestReadCacheNoContentAfterTombstone(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "one"),
		conv("a2", "A", "assistant", 2000, "secret two"),
		&log.Tombstone{Chunks: []string{"a2"}},
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs[:2])
	c, ok, err := tl.ChunkBare("a2")
	if err != nil || !ok {
		t.Fatalf("a2: %v %v", ok, err)
	}
	applyCommit(t, tl, evs[2:])
	if _, ok, err := tl.ChunkBare("a2"); err != nil || ok {
		t.Fatalf("a2 after its tombstone: %v %v", ok, err)
	}
	if err := tl.FillContent([]*Chunk{&c}); err != nil {
		t.Fatal(err)
	}
	if cc, ok := tl.cache.content["a2"]; ok {
		t.Fatalf("the text of the tombstoned a2 is cached after its tombstone: %q", cc.s)
	}
	// The same through Chunk, and a lookup of the removed id in between.
	c2 := c
	c2.Content = ""
	if _, _, err := tl.Chunk("a2"); err != nil {
		t.Fatal(err)
	}
	if err := tl.FillContent([]*Chunk{&c2}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tl.cache.content["a2"]; ok {
		t.Fatal("the text of the tombstoned a2 is cached after a second read")
	}
	// A live chunk's content is still cached (the cache is not just off).
	c1, ok, err := tl.ChunkBare("a1")
	if err != nil || !ok {
		t.Fatal(err)
	}
	if err := tl.FillContent([]*Chunk{&c1}); err != nil || c1.Content != "one" {
		t.Fatalf("a1: %q %v", c1.Content, err)
	}
	if cc, ok := tl.cache.content["a1"]; !ok || cc.s != "one" {
		t.Fatal("a1's content was not cached")
	}
}

// A commit that fails halfway (here: the new session title's content
// cannot be read back from the log) rolls back; the cache must not
// answer from what it held before for the state after the retry, nor
// keep the removed chunk's text. The reads between the failure and the
// retry flush the pending tombstone again, and fail the same way.
func TestReadCacheFailedCommit(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "secret one"),
		conv("a2", "A", "user", 2000, "two"),
		conv("a3", "A", "assistant", 3000, "three"),
		&log.Tombstone{Chunks: []string{"a1"}},
	)
	dir := t.TempDir()
	tl := open(t, dir)
	defer tl.Close()
	applyCommit(t, tl, evs[:3])
	// Warm: a1's record, content and neighbours, a2's neighbours.
	c1, ok, err := tl.ChunkBare("a1")
	if err != nil || !ok {
		t.Fatal(err)
	}
	if err := tl.FillContent([]*Chunk{&c1}); err != nil || c1.Content != "secret one" {
		t.Fatalf("a1: %q %v", c1.Content, err)
	}
	if cs, err := tl.Around("a2", 1, 1); err != nil || chunkIDs(cs) != "a1@1,a3@3" {
		t.Fatalf("around a2: %s %v", chunkIDs(cs), err)
	}
	if _, ok := tl.cache.content["a1"]; !ok {
		t.Fatal("a1's content was not cached (the test needs it)")
	}
	// The title moves to a2 when a1 goes; a2's event is unreadable.
	ev2 := evs[1]
	ev := eventsOf(dir)
	ev.mu.Lock()
	delete(ev.m, ev2.Seq)
	ev.mu.Unlock()
	if err := apply(tl, evs[3]); err != nil {
		t.Fatal(err)
	}
	last := evs[3]
	if err := tl.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err == nil {
		t.Fatal("the commit did not fail (the test needs it to)")
	}
	if _, ok := tl.cache.content["a1"]; ok {
		t.Error("a1's text is cached after the failed commit of its tombstone")
	}
	if _, _, err := tl.ChunkBare("a1"); err == nil {
		t.Error("a read after the failed commit did not fail (it flushes the same pending tombstone)")
	}
	ev.add(ev2)
	if err := tl.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second from the cache
		if _, ok, err := tl.ChunkBare("a1"); err != nil || ok {
			t.Fatalf("a1 after its tombstone's retried commit: %v %v", ok, err)
		}
		if cs, err := tl.Around("a2", 1, 1); err != nil || chunkIDs(cs) != "a3@3" {
			t.Fatalf("around a2 after the tombstone: %s %v", chunkIDs(cs), err)
		}
	}
	if _, ok := tl.cache.content["a1"]; ok {
		t.Error("a1's text is cached after its tombstone")
	}
	if ss, err := tl.Sessions(); err != nil || len(ss) != 1 || ss[0].Title != "two" {
		t.Fatalf("sessions: %+v %v", ss, err)
	}
}

// Closing the file drops the cache: a closed timelines (kept referenced
// after a store closed its projection set, say for a key rotation) holds
// no chunk text in memory, and answers no content from it.
func TestReadCacheDroppedOnClose(t *testing.T) {
	evs := chain(t, conv("a1", "A", "user", 1000, "one"), conv("a2", "A", "assistant", 2000, "two"))
	tl := open(t, t.TempDir())
	applyCommit(t, tl, evs)
	c, ok, err := tl.ChunkBare("a1")
	if err != nil || !ok {
		t.Fatal(err)
	}
	if err := tl.FillContent([]*Chunk{&c}); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.AroundBare("a1", 1, 1); err != nil {
		t.Fatal(err)
	}
	if tl.cache.chunks == nil || tl.cache.content == nil || tl.cache.around == nil {
		t.Fatal("the cache was not filled (the test needs it)")
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if tl.cache.chunks != nil || tl.cache.content != nil || tl.cache.around != nil {
		t.Fatal("the cache outlives Close")
	}
}
