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
	for _, ev := range evs {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	last := evs[len(evs)-1]
	if err := x.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatal(err)
	}
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
