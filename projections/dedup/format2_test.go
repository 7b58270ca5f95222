package dedup

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// TestLookupCollisionIsNoMatch plants a keys-bucket entry under the
// lookup prefix of (s1, user, conversation, "I like tea") that names an
// item of another session and text, as a collision of the 16-byte lookup
// hash would: Find must check the item and leave it out.
func TestLookupCollisionIsNoMatch(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i, ev := range []*log.Store{
		{ChunkID: "a", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "I like tea"},
		{ChunkID: "z", Kind: log.KindConversation, Session: "s9", Role: "user", Content: "Something else"},
	} {
		if err := x.Apply(&log.Event{Header: log.Header{Seq: uint64(i + 1)}, Body: ev}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Commit(projections.Checkpoint{Seq: 2}); err != nil {
		t.Fatal(err)
	}
	h := Hash("I like tea")
	err = x.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketKeys).Put(append(keyPrefix("s1", "user", log.KindConversation, h), projections.IDKey("z")...), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.Find("s1", "user", log.KindConversation, h)
	if err != nil || len(got) != 1 || got[0].ChunkID != "a" {
		t.Fatalf("find: %+v %v, want only a", got, err)
	}
}

// TestFormat1FileIsRebuilt checks a dedup.db of format 1 (32-byte hashes,
// event ids and hashes in items) is discarded on open: checkpoint zero,
// no item kept.
func TestFormat1FileIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Apply(&log.Event{Header: log.Header{Seq: 1}, Body: &log.Store{ChunkID: "a", Kind: log.KindConversation, Content: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(projections.Checkpoint{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := x.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("v1")) }); err != nil {
		t.Fatal(err)
	}
	x.Close()
	y, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if cp, _ := y.Checkpoint(); cp.Seq != 0 {
		t.Fatalf("checkpoint %d after a format 1 file, want 0", cp.Seq)
	}
	if n, err := y.Count(); err != nil || n != 0 {
		t.Fatalf("%d items kept from a format 1 file (%v)", n, err)
	}
}
