package timelines

import (
	"strings"
	"testing"
)

// Sessions whose names prefix one another, or sort next to one another,
// keep their order entries apart in the flat order bucket.
func TestOrderIndexKeepsSessionsApart(t *testing.T) {
	evs := chain(t,
		conv("a1", "a", "user", 1000, "a one."),
		conv("ab1", "ab", "user", 500, "ab one."),
		conv("a2", "a", "assistant", 3000, "a two."),
		conv("ab2", "ab", "assistant", 4000, "ab two."),
		conv("b1", "\U0010ffff", "user", 2000, "max rune."),
		conv("x1", "", "user", 2500, "no session."),
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs)
	ids := func(cs []Chunk) (out []string) {
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for sess, want := range map[string]string{"a": "a1 a2", "ab": "ab1 ab2", "\U0010ffff": "b1"} {
		_, cs, err := tl.Session(sess)
		if err != nil || strings.Join(ids(cs), " ") != want {
			t.Errorf("session %q: %v %v, want %s", sess, ids(cs), err, want)
		}
		turns, err := tl.RecentTurns(sess, 10)
		if err != nil || strings.Join(ids(turns), " ") != want {
			t.Errorf("recent turns %q: %v %v, want %s", sess, ids(turns), err, want)
		}
		_, last, total, err := tl.SessionPage(sess, -1, 0)
		if err != nil || len(last) != 1 || total != len(cs) {
			t.Errorf("last page of %q: %v %d %v", sess, ids(last), total, err)
		}
	}
	if got, err := tl.Around("a2", 5, 5); err != nil || strings.Join(ids(got), " ") != "a1" {
		t.Errorf("around a2: %v %v", ids(got), err)
	}
	if got, err := tl.Around("ab1", 5, 5); err != nil || strings.Join(ids(got), " ") != "ab2" {
		t.Errorf("around ab1: %v %v", ids(got), err)
	}
	ss, err := tl.Sessions()
	if err != nil || len(ss) != 3 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
}
