package timelines

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// A version 2 file (no links bucket) opens and is rebuilt by the
// projector instead of being reported damaged.
func TestVersion2FileIsRebuilt(t *testing.T) {
	evs := projtest.ConvEvents(5, 200)
	dir := t.TempDir()
	tl := open(t, dir)
	applyCommit(t, tl, evs)
	want, _ := tl.Digest()
	err := tl.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bLinks); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(kVersion, []byte{2, 0, 0, 0})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	tl = open(t, dir)
	pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{tl}, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := tl.Digest(); got != want {
		t.Fatalf("digest after the upgrade %x, want %x", got, want)
	}
}

// Replies and successors follow edits: an edit that drops the parent
// drops the link, and the successor of an edited item stays its successor.
func TestLinksFollowEdits(t *testing.T) {
	tl := open(t, t.TempDir())
	q := conv("q", "s", "user", 1000, "question")
	a := conv("a", "s", "assistant", 2000, "answer")
	a.Parent = "q"
	n := &log.Store{ChunkID: "n", Kind: log.KindKnowledge, Content: "new fact", Supersedes: []string{"q"}, Time: 3000}
	edit := &log.Edit{Target: "a", Prev: 2, By: "x", Store: *conv("a", "s", "assistant", 2000, "answer without parent")}
	evs := chain(t, q, a, n)
	applyCommit(t, tl, evs)
	if r, err := tl.Replies("q"); err != nil || len(r) != 1 || r[0].ID != "a" {
		t.Fatalf("replies %v %v", r, err)
	}
	qc, _, _ := tl.Chunk("q")
	if by, err := tl.SupersededBy(&qc); err != nil || len(by) != 1 || by[0] != "n" {
		t.Fatalf("superseded by %v %v", by, err)
	}
	evs = chain(t, q, a, n, edit)
	applyCommit(t, tl, evs[3:])
	if r, err := tl.Replies("q"); err != nil || len(r) != 0 {
		t.Fatalf("replies after the edit dropped the parent: %v %v", r, err)
	}
	c, _, _ := tl.Chunk("a")
	if !c.Edited || c.EditedBy != "x" || c.Content != "answer without parent" || c.Seq != 4 {
		t.Fatalf("edited chunk %+v", c)
	}
}

// An edit keeps the item's place among chunks of the same content time.
func TestEditKeepsPlace(t *testing.T) {
	tl := open(t, t.TempDir())
	first, second := conv("x", "s", "user", 1000, "first"), conv("y", "s", "user", 1000, "second")
	evs := chain(t, first, second, &log.Edit{Target: "x", Prev: 1, Store: *conv("x", "s", "user", 1000, "first, edited")},
		&log.Edit{Target: "x", Prev: 3, Store: *conv("x", "s", "user", 1000, "first, edited twice")})
	applyCommit(t, tl, evs[:3])
	applyCommit(t, tl, evs[3:])
	_, cs, err := tl.Session("s")
	if err != nil || len(cs) != 2 || cs[0].ID != "x" || cs[0].Content != "first, edited twice" || cs[0].Order != 1 {
		t.Fatalf("session after edits: %+v %v", cs, err)
	}
	if a, err := tl.Around("x", 1, 1); err != nil || len(a) == 0 {
		t.Fatalf("around an edited chunk: %v %v", a, err)
	}
}
