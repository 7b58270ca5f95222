package dedup

import (
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func TestConformance(t *testing.T) {
	projtest.Run(t, func(t *testing.T, dir string) projections.Projection {
		x, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
}

func TestNormalize(t *testing.T) {
	same := [][2]string{
		{"Hello  World", "hello world"},
		{"  tabs\tand\nnewlines \r\n", "TABS AND NEWLINES"},
		{"zero\u200bwidth", "zerowidth"},
		{"non\u00a0breaking", "non breaking"},
		{"ÉCOLE", "école"},
	}
	for _, p := range same {
		if Hash(p[0]) != Hash(p[1]) {
			t.Errorf("%q and %q should normalize equal: %q vs %q", p[0], p[1], Normalize(p[0]), Normalize(p[1]))
		}
	}
	// Anything a reader sees other than case and spacing stays different.
	differ := [][2]string{
		{"hello world", "hello world."},
		{"hello world", "helloworld"},
		{"cafe", "café"},
		{"ﬁne", "fine"}, // no NFKC
		{"Straße", "STRASSE"},
		{"1,000", "1.000"},
		{"a-b", "a b"},
	}
	for _, p := range differ {
		if Hash(p[0]) == Hash(p[1]) {
			t.Errorf("%q and %q must not normalize equal (%q)", p[0], p[1], Normalize(p[0]))
		}
	}
}

func TestFindHonoursTombstones(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	st := func(seq uint64, id, session, content string) *log.Event {
		return &log.Event{Header: log.Header{Seq: seq}, Body: &log.Store{ChunkID: id, Kind: log.KindConversation, Session: session, Role: "user", Content: content, Time: int64(seq)}}
	}
	for _, ev := range []*log.Event{st(1, "a", "s1", "I like tea"), st(2, "b", "s1", "i  LIKE tea"), st(3, "c", "s2", "I like tea")} {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Commit(projections.Checkpoint{Seq: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := x.Find("s1", "user", log.KindConversation, Hash("I LIKE TEA"))
	if err != nil || len(got) != 2 || got[0].ChunkID != "a" || got[1].ChunkID != "b" {
		t.Fatalf("find: %+v %v", got, err)
	}
	if got, _ := x.Find("s1", "assistant", log.KindConversation, Hash("I like tea")); len(got) != 0 {
		t.Fatalf("another role matched: %+v", got)
	}
	x.Apply(&log.Event{Header: log.Header{Seq: 4}, Body: &log.Tombstone{Session: "s1"}})
	if err := x.Commit(projections.Checkpoint{Seq: 4}); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Find("s1", "user", log.KindConversation, Hash("I like tea")); len(got) != 0 {
		t.Fatalf("tombstoned chunks still found: %+v", got)
	}
	if got, _ := x.Find("s2", "user", log.KindConversation, Hash("I like tea")); len(got) != 1 {
		t.Fatalf("other session lost: %+v", got)
	}
}

func TestCompactKeepsDigest(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	evs := projtest.StoreEvents(3, 2000)
	applyCommit(t, x, evs)
	before, _ := x.Digest()
	size := x.Size()
	var _ projections.Compacter = x
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	after, _ := x.Digest()
	if before != after || x.Size() > size {
		t.Fatalf("compact: digest %x -> %x, size %d -> %d", before, after, size, x.Size())
	}
	t.Logf("2,000 items: %d -> %d bytes", size, x.Size())
}

// An edited item is compared by what it says now: its old text no longer
// makes a store a duplicate, its new text does, and the chunks an edit
// drops leave the index.
func TestFindFollowsEdits(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	st := func(id, parent string, i int, content string) log.Store {
		return log.Store{ChunkID: id, ChunkParent: parent, ChunkIndex: i, Kind: log.KindDocument, Session: "s", Role: "user", Content: content, Time: 1}
	}
	a, d0, d1 := st("a", "", 0, "lives in Lisbon"), st("d#0", "d", 0, "part one"), st("d#1", "d", 1, "part two")
	evs := []*log.Event{
		{Header: log.Header{Seq: 1}, Body: &a},
		{Header: log.Header{Seq: 2}, Body: &d0},
		{Header: log.Header{Seq: 3}, Body: &d1},
		{Header: log.Header{Seq: 4}, Body: &log.Edit{Target: "a", Prev: 1, Store: st("a", "", 0, "lives in Berlin")}},
		{Header: log.Header{Seq: 5}, Body: &log.Edit{Target: "d", Prev: 2, Removes: []string{"d#1"}, Store: st("d#0", "d", 0, "one part only")}},
	}
	for _, ev := range evs {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Commit(projections.Checkpoint{Seq: 5}); err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{"lives in Lisbon": 0, "Lives in BERLIN": 1, "part one": 0, "part two": 0, "one part only": 1} {
		got, err := x.Find("s", "user", log.KindDocument, Hash(text))
		if err != nil || len(got) != want {
			t.Errorf("find %q: %+v %v, want %d", text, got, err, want)
		}
	}
	if doc, err := x.Document("d"); err != nil || len(doc) != 1 || doc[0].ChunkID != "d#0" {
		t.Fatalf("document after re-chunk: %+v %v", doc, err)
	}
}

// Compact weighs the file with the pending writes in it: a commit whose
// keys still wait in memory (below FlushEntries) is flushed first, and the
// file they grow past compactGrowth times its opened size is compacted.
func TestCompactWeighsPendingWrites(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	opened := x.Size()
	evs := projtest.StoreEvents(3, 5000)
	applyCommit(t, x, evs)
	if x.Size() >= compactGrowth*opened {
		t.Fatalf("the commit's keys are in the file already (%d -> %d bytes): the test needs them pending", opened, x.Size())
	}
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	if x.compacted == opened || x.compacted != x.Size() {
		t.Fatalf("not compacted: opened at %d bytes, compacted size %d, file %d", opened, x.compacted, x.Size())
	}
}

// applyCommit applies evs to x and commits at the last one.
func applyCommit(t *testing.T, x *Index, evs []*log.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	last := evs[len(evs)-1]
	if err := x.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatal(err)
	}
}
