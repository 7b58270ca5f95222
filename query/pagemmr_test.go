package query_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// TestPageMMRDiversifiesFirstPage: by default a search keeps its first
// PageKeep results as ranked and gives the rest of its first page to
// results unlike them (Options.PageMMR): here ten copies of one turn
// would fill the page and push out the one turn that says something else.
// Off, the copies fill it; a context keeps the relevance order either way.
func TestPageMMRDiversifiesFirstPage(t *testing.T) {
	f := newFixture(t, t.TempDir())
	var bodies []log.Body
	for i := range 10 {
		bodies = append(bodies, &log.Store{ChunkID: fmt.Sprintf("d%02d", i), Session: "s", Kind: log.KindConversation,
			Time: at(time.Duration(i) * time.Minute), Content: "garden tomato seedlings need more light and a deeper pot"})
	}
	bodies = append(bodies, &log.Store{ChunkID: "x", Session: "s", Kind: log.KindConversation, Time: at(-time.Hour),
		Content: "tomato seedlings in my garden get their light from an east window"})
	f.apply(t, chain(t, bodies...))
	ctx := context.Background()
	req := query.Request{Text: "garden tomato seedlings light", Now: now0}
	off, err := f.engine(query.Options{PageMMR: -1}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(off.Results); len(got) != 10 || contains(got, "x") {
		t.Fatalf("PageMMR off: want the ten copies, got %v", got)
	}
	on, err := f.engine(query.Options{}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(on.Results)
	pos := slices.Index(got, "x")
	if len(got) != 10 || pos < query.PageKeep || !slices.Equal(got[:query.PageKeep], ids(off.Results)[:query.PageKeep]) {
		t.Fatalf("default: got %v, want the first %d as ranked, then x (off: %v)", got, query.PageKeep, ids(off.Results))
	}
	// Results past the first page stay in relevance order.
	req.K = 11
	all, err := f.engine(query.Options{PageMMR: -1}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(all.Results); got[10] != "x" {
		t.Fatalf("k=11, PageMMR off: x should rank 11th, got %v", got)
	}
	// A context ranks by relevance: the same bytes with and without.
	creq := query.ContextRequest{Request: query.Request{Text: req.Text, Now: now0}, Budget: 300}
	c1, err := f.engine(query.Options{}).Context(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := f.engine(query.Options{PageMMR: -1}).Context(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	if string(c1) != string(c2) {
		t.Errorf("context differs with PageMMR:\n%s\nwithout:\n%s", c1, c2)
	}
}
