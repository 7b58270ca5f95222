package query_test

import (
	"context"
	"slices"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// TestContextSupersedeRecent: the rule "a context never packs a superseded
// item next to its successor" holds across the recent turns and the
// retrieved part, in every combination, and the successor is the one kept.
func TestContextSupersedeRecent(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t,
		// Both in the recent turns of "a".
		&log.Store{ChunkID: "a1", Session: "a", Role: "user", Kind: log.KindConversation, Time: at(0), Content: "Anna lives in Lisbon near the river."},
		&log.Store{ChunkID: "a2", Session: "a", Role: "user", Kind: log.KindConversation, Time: at(1), Content: "Anna moved to Berlin last spring.", Supersedes: []string{"a1"}},
		// A retrieved note superseded by a recent turn of "b".
		&log.Store{ChunkID: "n1", Kind: log.KindKnowledge, Time: at(2), Content: "Bruno works at the bakery on Main Street."},
		&log.Store{ChunkID: "b1", Session: "b", Role: "user", Kind: log.KindConversation, Time: at(3), Content: "Bruno quit; he now teaches chemistry.", Supersedes: []string{"n1"}},
		// A recent turn of "c" superseded by a retrieved note.
		&log.Store{ChunkID: "c1", Session: "c", Role: "user", Kind: log.KindConversation, Time: at(4), Content: "Clara drives a red bicycle to work."},
		&log.Store{ChunkID: "k2", Kind: log.KindKnowledge, Time: at(5), Content: "Clara sold the bicycle and drives a tram now.", Supersedes: []string{"c1"}},
	))
	e := f.engine(query.Options{})
	for _, tc := range []struct {
		name, session, text string
		turns               int
		gone, kept          string
	}{
		{"recent-recent", "a", "", 2, "a1", "a2"},
		{"recent-recent with text", "a", "Anna Lisbon", 2, "a1", "a2"},
		{"retrieved superseded by recent", "b", "bakery Main Street", 1, "n1", "b1"},
		{"recent superseded by retrieved", "c", "Clara bicycle tram", 1, "c1", "k2"},
	} {
		for _, inc := range []bool{false, true} {
			a, err := e.Assemble(context.Background(), query.ContextRequest{
				Request: query.Request{Session: tc.session, Text: tc.text, Now: now0, IncludeSuperseded: inc, Mode: query.ModeBM25},
				Budget:  2000, RecentTurns: tc.turns})
			if err != nil {
				t.Fatal(err)
			}
			all := append(slices.Clone(a.Recent), a.Included...)
			if slices.Contains(all, tc.gone) || !slices.Contains(all, tc.kept) {
				t.Errorf("%s (include %v): recent %v included %v: want %s without %s", tc.name, inc, a.Recent, a.Included, tc.kept, tc.gone)
			}
		}
	}
}
