package query_test

import (
	"context"
	"strings"
	"testing"

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
