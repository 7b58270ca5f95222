package query_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// An engine with Owner serves shared chunks: results say so and whose, an
// "own" request finds nothing, and contexts name the grantor.
func TestSharedEngine(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{Owner: func(id string) string { return "grantor-of-" + id }})
	ctx := context.Background()
	req := query.Request{Text: "replication postgres database logical", Now: now0, K: 50}
	resp, err := e.Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range resp.Results {
		if r.Origin != query.OriginShared || r.From != "grantor-of-"+r.ChunkID {
			t.Fatalf("result %s: origin %q from %q", r.ChunkID, r.Origin, r.From)
		}
	}
	for origin, want := range map[query.Origin]int{query.OriginShared: len(resp.Results), "all": len(resp.Results), query.OriginOwn: 0} {
		req.Origin = origin
		r, err := e.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != want {
			t.Errorf("origin %s: %d results, want %d", origin, len(r.Results), want)
		}
	}
	for _, format := range []query.Format{query.FormatXML, query.FormatJSON, query.FormatText} {
		a, err := e.Assemble(ctx, query.ContextRequest{Request: query.Request{Text: "replication postgres", Now: now0}, Budget: 2000, Format: format})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(a.Output), "grantor-of-") {
			t.Errorf("%s context does not name the grantor:\n%s", format, a.Output)
		}
	}
	// The store's own engine (no Owner) says nothing of grantors.
	own := f.engine(query.Options{})
	a, err := own.Assemble(ctx, query.ContextRequest{Request: query.Request{Text: "replication postgres", Now: now0}, Budget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(a.Output), "from=") {
		t.Errorf("own context names a grantor:\n%s", a.Output)
	}
}

// A context over two origins (ContextRequest.Also): chunks of both compete
// by score, the shared ones name their grantor, the own ones nothing.
func TestContextAlsoShared(t *testing.T) {
	own := smallFixture(t)
	shared := newFixture(t, t.TempDir())
	shared.apply(t, chain(t,
		&log.Store{ChunkID: "s1", Session: "theirs", Role: "user", Kind: log.KindConversation, Time: at(0),
			Content: "Their notes: the Postgres replication cutover needs a sequence resync."},
		&log.Store{ChunkID: "s2", Session: "theirs", Role: "assistant", Kind: log.KindConversation, Time: at(time.Minute),
			Content: "Logical replication of the billing database finished on Sunday."}))
	se := shared.engine(query.Options{Owner: func(string) string { return "GRANTOR" }})
	e := own.engine(query.Options{})
	ctx := context.Background()
	for _, format := range []query.Format{query.FormatXML, query.FormatJSON, query.FormatText} {
		a, err := e.Assemble(ctx, query.ContextRequest{Request: query.Request{Text: "postgres replication cutover", Now: now0},
			Budget: 4000, Format: format, Also: se})
		if err != nil {
			t.Fatal(err)
		}
		out := string(a.Output)
		if !contains(a.Included, "s1") || !contains(a.Included, "a1") || !strings.Contains(out, "GRANTOR") || !strings.Contains(out, "sequence resync") {
			t.Fatalf("%s: merged context lacks a side: included %v\n%s", format, a.Included, out)
		}
		if n := strings.Count(out, "GRANTOR"); format == query.FormatXML && n != 1 {
			t.Errorf("%s: the grantor is named %d times, want once (its one session)", format, n)
		}
	}
}
