package ucl

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

func TestJoinChunks(t *testing.T) {
	c := func(i int, s string) timelines.Chunk { return timelines.Chunk{ChunkIndex: i, Content: s} }
	for _, tc := range []struct {
		parts   []timelines.Chunk
		want    string
		missing []int
	}{
		{nil, "", nil},
		{[]timelines.Chunk{c(0, "a\n"), c(1, "\tb"), c(2, " c")}, "a\n\tb c", nil},
		{[]timelines.Chunk{c(1, "b"), c(3, "d")}, "bd", []int{0, 2}},
		{[]timelines.Chunk{c(0, "a"), c(0, "a"), c(1, "b")}, "aab", nil},
	} {
		got, missing := joinChunks(tc.parts)
		if got != tc.want || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("joinChunks(%v) = %q, %v; want %q, %v", tc.parts, got, missing, tc.want, tc.missing)
		}
	}
}

// Remember reports the document id of a split document; Get returns the
// document exactly, and names the chunks a tombstone took out of it.
func TestRememberGetDocument(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	var b strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "\tline %d of the runbook:  keep   the spacing\n", i)
		if i%25 == 24 {
			b.WriteString("\n\n")
		}
	}
	doc := b.String()
	res, err := s.Remember(ctx, RememberRequest{Content: doc, Kind: "document", ChunkTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) < 3 || res.Document == "" {
		t.Fatalf("want a split document with an id: %+v", res)
	}
	for i, r := range res.Results {
		if r.ChunkParent != res.Document || r.ChunkID != fmt.Sprintf("%s#%d", res.Document, i) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	g, err := s.Get(ctx, GetRequest{IDs: []string{res.Document, res.Results[1].ChunkID}})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Items[0].Found || g.Items[0].Content != doc || g.Items[0].Missing != nil {
		t.Fatalf("document: found %v, %d bytes (want %d), missing %v", g.Items[0].Found, len(g.Items[0].Content), len(doc), g.Items[0].Missing)
	}
	if g.Items[1].Content != g.Items[0].Chunks[1].Content {
		t.Fatal("a chunk id returns that chunk's content")
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{res.Results[1].ChunkID}}); err != nil {
		t.Fatal(err)
	}
	g, err = s.Get(ctx, GetRequest{IDs: []string{res.Document}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.Items[0].Missing, []int{1}) || len(g.Items[0].Content) >= len(doc) {
		t.Fatalf("after a tombstone: missing %v", g.Items[0].Missing)
	}
	// Short content is stored whole: no document id.
	res, err = s.Remember(ctx, RememberRequest{Content: "short", Kind: "document"})
	if err != nil || res.Document != "" {
		t.Fatalf("short document: %+v %v", res, err)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{res.Results[0].ID.String() + "-nosuch"}}); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("tombstone of an unknown chunk: %v", err)
	}
}

// timeNote: a phrase filter that left nothing reports the count without
// it; a boost whose window holds no result says so; otherwise no note.
func TestTimeNote(t *testing.T) {
	const day = 24 * 60 * 60 * 1000
	yesterday := []query.TemporalMatch{{Phrase: "yesterday", Since: 10 * day, Until: 11 * day}}
	res := func(times ...int64) []query.Result {
		var out []query.Result
		for _, tm := range times {
			out = append(out, query.Result{Time: tm})
		}
		return out
	}
	seven := func() (int, error) { return 7, nil }
	for _, tc := range []struct {
		name    string
		q       query.Request
		r       query.Response
		mode    string
		without int
	}{
		{"filter emptied", query.Request{}, query.Response{Temporal: yesterday, Since: 10 * day, Until: 11 * day}, "filter", 7},
		{"filter with results", query.Request{}, query.Response{Temporal: yesterday, Since: 10 * day, Until: 11 * day, Results: res(10*day + 5)}, "", 0},
		{"boost, all outside", query.Request{}, query.Response{Temporal: yesterday, Results: res(3*day, 12*day)}, "boost", 0},
		{"boost, one inside", query.Request{}, query.Response{Temporal: yesterday, Results: res(3*day, 10*day+1)}, "", 0},
		{"boost, no results", query.Request{}, query.Response{Temporal: yesterday}, "", 0},
		{"boost, one talks about the window", query.Request{}, query.Response{Temporal: yesterday, Results: []query.Result{{Time: 3 * day}, {Time: 12 * day, MentionsWindow: true}}}, "", 0},
		{"explicit window only", query.Request{Since: day, Until: 2 * day}, query.Response{Since: day, Until: 2 * day}, "", 0},
		{"phrases off", query.Request{NoTemporal: true}, query.Response{Temporal: yesterday, Since: 10 * day, Until: 11 * day}, "", 0},
	} {
		n, err := timeNote(tc.q, &tc.r, seven)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.mode == "" && n != nil:
			t.Errorf("%s: unexpected note %+v", tc.name, n)
		case tc.mode != "" && (n == nil || n.Mode != tc.mode):
			t.Errorf("%s: note %+v, want mode %s", tc.name, n, tc.mode)
		case tc.mode == "filter" && (n.Without == nil || *n.Without != tc.without):
			t.Errorf("%s: without %v, want %d", tc.name, n.Without, tc.without)
		case tc.mode == "boost" && (n.Since != 10*day || n.Until != 11*day || n.Without != nil):
			t.Errorf("%s: boost note %+v", tc.name, n)
		}
	}
	if _, err := timeNote(query.Request{}, &query.Response{Temporal: yesterday, Since: 10 * day, Until: 11 * day},
		func() (int, error) { return 0, errors.New("boom") }); err == nil {
		t.Error("an error of the second search is dropped")
	}
}
