package fts

import (
	"reflect"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// Mentioned gives the same answer whatever seqs it is handed: none, the
// live version's seq (read directly), another chunk's seq, the seq of a
// version since overwritten (no record there any more), a seq past the
// log, 0, and for a chunk changed since the last Commit its pending
// state.
func TestMentionedWhateverTheSeqs(t *testing.T) {
	const day = 24 * 3600 * 1000
	const t0 = 1_700_000_000_000 - 1_700_000_000_000%day
	var e evs
	a := e.store("a", "s1", "user", log.KindConversation, t0, "yesterday I went to the lake")
	e.store("b", "s1", "user", log.KindConversation, t0+day, "two days ago we met")
	old := e.store("c", "s1", "user", log.KindConversation, t0+2*day, "last week was busy")
	c := e.store("c", "s1", "user", log.KindConversation, t0+3*day, "yesterday it rained")
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, e.out, 0)
	ids := []string{"a", "b", "c", "missing"}
	check := func(stage string, cMentions bool) {
		t.Helper()
		want, err := x.Mentioned(ids, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(want["a"]) == 0 || (len(want["c"]) > 0) != cMentions {
			t.Fatalf("%s: Mentioned %v: want mentions for a, for c %v", stage, want, cMentions)
		}
		for _, seqs := range [][]uint64{
			{a.Seq, e.out[1].Seq, c.Seq, 0},      // the live versions'
			{c.Seq, a.Seq, e.out[1].Seq, a.Seq},  // other chunks'
			{old.Seq, old.Seq, old.Seq, old.Seq}, // a replaced version's
			{999, 0, 1 << 40, 999},               // none
			nil,
		} {
			got, err := x.Mentioned(ids, seqs)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Mentioned(%v) = %v, %v; want %v", stage, seqs, got, err, want)
			}
		}
	}
	check("committed", true)
	// c changed since the Commit: its pending state, whatever its seq.
	if err := x.Apply(e.store("c", "s1", "user", log.KindConversation, t0+4*day, "nothing about time")); err != nil {
		t.Fatal(err)
	}
	check("pending", false)
	if _, err := x.Mentioned(ids, []uint64{1}); err == nil {
		t.Error("Mentioned with fewer seqs than ids: no error")
	}
}
