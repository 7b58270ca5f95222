package fts

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// Time filters come from the side table and the pending changes, not from
// the index: a batch executed before its Commit (full batch) is filtered
// by the same times as a committed one, a re-stored chunk by its new time,
// and times before 1970 (negative) order correctly.
func TestTimeFilterBeforeAndAfterCommit(t *testing.T) {
	const t0 = 1_700_000_000_000
	var e evs
	e.store("c1", "s1", "user", log.KindConversation, -5000, "gateway in the old days")
	e.store("c2", "s1", "user", log.KindConversation, t0, "gateway up")
	e.store("c3", "s1", "user", log.KindConversation, t0+1000, "gateway down")
	e.store("c4", "s1", "user", log.KindConversation, t0+2000, "gateway again")
	e.store("c2", "s1", "user", log.KindConversation, t0+3000, "gateway moved later")
	x := openT(t, t.TempDir(), Options{BatchSize: 1}) // every Apply executes its batch
	for _, ev := range e.out {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"until before 1970", Query{Until: 0 - 1}, []string{"c1"}},
		{"since", Query{Since: t0 + 1000}, []string{"c2", "c3", "c4"}},
		{"until exclusive", Query{Until: t0 + 1000}, []string{"c1"}},
		{"window", Query{Since: t0 + 500, Until: t0 + 2001}, []string{"c3", "c4"}},
		{"empty window", Query{Since: t0 + 5000, Until: t0 + 6000}, nil},
	}
	check := func(stage string) {
		for _, tc := range tests {
			q := tc.q
			q.Text = "gateway"
			if got := find(t, x, q); !reflect.DeepEqual(sorted(got), sorted(tc.want)) {
				t.Errorf("%s, %s: got %v, want %v", stage, tc.name, got, tc.want)
			}
		}
	}
	check("before commit")
	if err := x.Commit(cpOf(e.out[len(e.out)-1])); err != nil {
		t.Fatal(err)
	}
	check("after commit")
}

// MaxInTime bounds a time range by its chunk count: a range holding more
// is refused (ErrWideTimeRange), one holding at most that many is searched.
func TestMaxInTime(t *testing.T) {
	const t0 = 1_700_000_000_000
	var e evs
	for i, id := range []string{"c1", "c2", "c3", "c4"} {
		e.store(id, "s1", "user", log.KindConversation, t0+int64(i)*1000, "gateway "+id)
	}
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, e.out, 0)
	q := Query{Text: "gateway", K: 10, Since: t0, Until: t0 + 3000, MaxInTime: 3}
	if got := find(t, x, q); !reflect.DeepEqual(sorted(got), []string{"c1", "c2", "c3"}) {
		t.Errorf("3 chunks, MaxInTime 3: got %v", got)
	}
	q.MaxInTime = 2
	if _, err := x.Search(context.Background(), q); !errors.Is(err, ErrWideTimeRange) {
		t.Errorf("3 chunks, MaxInTime 2: error %v, want ErrWideTimeRange", err)
	}
	// A range refused is counted, its documents not looked up (each a
	// random read of side.db's "ids"); a chunk stored since the Commit
	// counts too.
	inTime := func(limit int) ([]string, int) {
		t.Helper()
		x.mu.RLock()
		defer x.mu.RUnlock()
		docs, n, err := x.idsInTime(t0, t0+3000, limit)
		if err != nil {
			t.Fatal(err)
		}
		return docs, n
	}
	if docs, n := inTime(3); len(docs) != 3 || n != 3 {
		t.Errorf("3 chunks, limit 3: %d documents, n %d", len(docs), n)
	}
	if docs, n := inTime(2); docs != nil || n != 3 {
		t.Errorf("3 chunks, limit 2: %d documents, n %d; want none, 3", len(docs), n)
	}
	if err := x.Apply(e.store("c5", "s1", "user", log.KindConversation, t0+500, "gateway c5")); err != nil {
		t.Fatal(err)
	}
	if docs, n := inTime(3); docs != nil || n != 4 {
		t.Errorf("3 chunks and a pending one, limit 3: %d documents, n %d; want none, 4", len(docs), n)
	}
	if docs, n := inTime(0); len(docs) != 4 || n != 4 {
		t.Errorf("3 chunks and a pending one, no limit: %d documents, n %d", len(docs), n)
	}
}
