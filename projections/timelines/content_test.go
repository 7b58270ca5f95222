package timelines

import (
	"bytes"
	"errors"
	"github.com/unlimitedcontext/ucl/projections"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
)

// The content is not in the file: every read gives it back from the event
// at the chunk's seq, edits included; the session title is kept.
func TestContentReadBackFromEvents(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "Zanzibar question about lanterns. More."),
		conv("a2", "A", "assistant", 2000, "Quokka answer about lanterns."),
		&log.Edit{Target: "a2", Store: *conv("a2", "A", "assistant", 2000, "Pangolin answer, edited.")},
		&log.Store{ChunkID: "d#0", Kind: log.KindDocument, Session: "A", Time: 500, Content: "\tIndented part.", ChunkParent: "d"},
	)
	dir := t.TempDir()
	tl := open(t, dir)
	applyCommit(t, tl, evs)
	defer tl.Close()
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Quokka", "Pangolin", "Indented", "lanterns. More"} {
		if bytes.Contains(raw, []byte(w)) {
			t.Errorf("%q is in %s", w, FileName)
		}
	}
	c, ok, err := tl.Chunk("a2")
	if err != nil || !ok || c.Content != "Pangolin answer, edited." || c.Sum != c.ContentSum() {
		t.Fatalf("edited chunk %+v %v %v", c, ok, err)
	}
	info, chunks, err := tl.Session("A")
	if err != nil || len(chunks) != 3 || chunks[0].Content != "\tIndented part." || chunks[1].Content != "Zanzibar question about lanterns. More." {
		t.Fatalf("session %+v %+v %v", info, chunks, err)
	}
	if info.Title != "Zanzibar question about lanterns." {
		t.Fatalf("title %q", info.Title)
	}
	doc, err := tl.Document("d")
	if err != nil || len(doc) != 1 || doc[0].Content != "\tIndented part." {
		t.Fatalf("document %+v %v", doc, err)
	}
	turns, err := tl.RecentTurns("A", 1)
	if err != nil || len(turns) != 1 || turns[0].Content != "Pangolin answer, edited." {
		t.Fatalf("recent turns %+v %v", turns, err)
	}
	around, err := tl.Around("a1", 1, 1)
	if err != nil || len(around) != 1 || around[0].Content != "Pangolin answer, edited." {
		t.Fatalf("around %+v %v", around, err)
	}
}

// A tombstone of the title's chunk makes the next one the title, read
// back from its event (it is no longer pending).
func TestTitleAfterTombstoneReadsTheLog(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "First question here."),
		conv("a2", "A", "user", 2000, "Second question here."),
		&log.Tombstone{Chunks: []string{"a1"}},
	)
	dir := t.TempDir()
	tl := open(t, dir)
	defer tl.Close()
	applyCommit(t, tl, evs[:2])
	if info, _, err := tl.Session("A"); err != nil || info.Title != "First question here." {
		t.Fatalf("title %+v %v", info, err)
	}
	applyCommit(t, tl, evs[2:])
	info, _, err := tl.Session("A")
	if err != nil || info.Title != "Second question here." {
		t.Fatalf("title %+v %v", info, err)
	}
}

// Without an event reader, what needs content fails with ErrNoEvents;
// the rest works. A record naming a seq that holds another chunk is
// damage.
func TestContentWithoutEventsOrWrongSeq(t *testing.T) {
	evs := chain(t, conv("a1", "A", "user", 1000, "Hello there."), conv("a2", "A", "user", 2000, "Other."))
	dir := t.TempDir()
	tl := open(t, dir)
	applyCommit(t, tl, evs)
	tl.Close()
	bare, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := bare.Count(); err != nil || n != 2 {
		t.Fatalf("count %d %v", n, err)
	}
	if ok, err := bare.Contains("a1"); err != nil || !ok {
		t.Fatalf("contains %v %v", ok, err)
	}
	if _, _, err := bare.Chunk("a1"); !errors.Is(err, ErrNoEvents) {
		t.Fatalf("chunk without events: %v", err)
	}
	bare.Close()

	tl = open(t, dir)
	defer tl.Close()
	err = tl.db.Update(func(tx *bolt.Tx) error {
		c, err := getChunk(tx, "a1")
		if err != nil {
			return err
		}
		c.Seq = 2
		c.Sum = c.ContentSum()
		v, err := encodeChunk(c)
		if err != nil {
			return err
		}
		// Stored under its own seq first: the record does not match its key.
		return tx.Bucket(bChunks).Put(be64(1), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tl.Chunk("a1"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("chunk record under another seq: %v", err)
	}
	err = tl.db.Update(func(tx *bolt.Tx) error {
		// Then under seq 2, which the ids index names: the content read
		// back is the other chunk's.
		v := tx.Bucket(bChunks).Get(be64(1))
		if err := tx.Bucket(bChunks).Put(be64(2), append([]byte(nil), v...)); err != nil {
			return err
		}
		return tx.Bucket(bIDs).Put(projections.IDKey("a1"), be64(2))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tl.Chunk("a1"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("chunk naming another chunk's seq: %v", err)
	}
}
