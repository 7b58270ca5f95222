package fts

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// DocFreqs counts live documents per word as the analyzer sees it
// (stemmed, case-folded), gives a stopword n, and forgets a tombstoned
// document after Commit.
func TestDocFreqs(t *testing.T) {
	var e evs
	e.store("a", "s1", "user", log.KindConversation, 1, "Caroline: I was running the pottery class")
	e.store("b", "s1", "user", log.KindConversation, 2, "Melanie: Caroline runs every morning")
	e.store("c", "s2", "user", log.KindConversation, 3, "Caroline: pottery again today")
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, e.out, 0)
	ctx := context.Background()
	n, dfs, err := x.DocFreqs(ctx, []string{"caroline", "Pottery", "running", "the", "zebra"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || !reflect.DeepEqual(dfs, []int{3, 2, 2, 3, 0}) {
		t.Fatalf("DocFreqs = %d, %v; want 3, [3 2 2 3 0]", n, dfs)
	}
	more := e.add(&log.Tombstone{Session: "s2"})
	applyAll(t, x, []*log.Event{more}, 0)
	n, dfs, err = x.DocFreqs(ctx, []string{"pottery", "caroline"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || !reflect.DeepEqual(dfs, []int{1, 2}) {
		t.Fatalf("after the tombstone: %d, %v; want 2, [1 2]", n, dfs)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.DocFreqs(ctx, []string{"pottery"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed index: err %v, want ErrClosed", err)
	}
}
