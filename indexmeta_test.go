package ucl

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/index"
)

// Index with Meta keeps only items whose meta holds every pair, with a
// query and without one, whatever their session; its zoom links repeat
// the filter; an empty key is a bad request. The same through the socket.
func TestIndexByMeta(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ids := map[string]string{}
	for _, r := range []RememberRequest{
		{Content: "Budget review for the lighthouse project.", Session: "s1", Role: "user", Meta: map[string]string{"project": "lighthouse", "team": "a"}},
		{Content: "Lighthouse budget, second pass.", Kind: "knowledge", Meta: map[string]string{"project": "lighthouse"}},
		{Content: "Budget review for the harbour project.", Session: "s2", Role: "user", Meta: map[string]string{"project": "harbour"}},
		{Content: "An unrelated budget note.", Session: "s2", Role: "user"},
	} {
		res, err := s.Remember(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		id := res.Results[0].ChunkID
		if id == "" {
			id = res.Results[0].ID.String()
		}
		ids[r.Content] = id
	}
	want := func(contents ...string) []string {
		var out []string
		for _, c := range contents {
			out = append(out, ids[c])
		}
		sort.Strings(out)
		return out
	}
	got := func(res *IndexResult) []string {
		var out []string
		for _, it := range append(append([]index.Item(nil), res.Items...), res.Snippets...) {
			out = append(out, it.ID)
		}
		sort.Strings(out)
		return out
	}
	for _, api := range []API{s, serve(t, s)} {
		for _, tc := range []struct {
			query string
			meta  map[string]string
			want  []string
		}{
			{"", map[string]string{"project": "lighthouse"}, want("Budget review for the lighthouse project.", "Lighthouse budget, second pass.")},
			{"budget", map[string]string{"project": "lighthouse"}, want("Budget review for the lighthouse project.", "Lighthouse budget, second pass.")},
			{"budget", map[string]string{"project": "lighthouse", "team": "a"}, want("Budget review for the lighthouse project.")},
			{"", map[string]string{"project": "harbour"}, want("Budget review for the harbour project.")},
			{"", map[string]string{"project": "none"}, nil},
			{"budget", nil, want("Budget review for the lighthouse project.", "Lighthouse budget, second pass.", "Budget review for the harbour project.", "An unrelated budget note.")},
		} {
			res, err := api.Index(ctx, IndexRequest{Query: tc.query, Meta: tc.meta, Now: "2030-01-01"})
			if err != nil {
				t.Fatal(err)
			}
			if g := got(res); strings.Join(g, ",") != strings.Join(tc.want, ",") || res.Matches != len(tc.want) {
				t.Errorf("%T: index %q meta %v: %v (%d matches), want %v", api, tc.query, tc.meta, g, res.Matches, tc.want)
			}
			for _, g := range res.Sessions {
				if tc.meta != nil && g.Open.Method == "index" && g.Open.Args["meta"] == nil {
					t.Errorf("%T: link %v drops the meta filter", api, g.Open)
				}
			}
		}
		if _, err := api.Index(ctx, IndexRequest{Meta: map[string]string{"": "x"}}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%T: empty meta key: %v, want ErrBadRequest", api, err)
		}
	}
}
