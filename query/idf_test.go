package query_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// The ANN query weights its words by IDF: a name every turn carries
// ("Caroline:") no longer outweighs the one rare word of the question, so
// the turn about apples comes first in vector mode, with a higher cosine
// than the unweighted query gives it.
func TestVectorQueryWeightsWordsByIDF(t *testing.T) {
	var bodies []log.Body
	at := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	for i, s := range []string{"the weather was grey", "work ran late again", "a long walk by the river", "coffee with an old friend",
		"the train was delayed", "painted the fence blue", "watched a film at home", "read a novel in the park"} {
		bodies = append(bodies, &log.Store{ChunkID: fmt.Sprintf("t%d", i), Session: "s", Kind: log.KindConversation, Role: "user",
			Content: "Caroline: " + s, Time: at.Add(time.Duration(i) * time.Minute).UnixMilli()})
	}
	bodies = append(bodies, &log.Store{ChunkID: "apples", Session: "s", Kind: log.KindConversation, Role: "user",
		Content: "Melanie: we picked apples at the orchard", Time: at.Add(time.Hour).UnixMilli()})
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, bodies...))
	req := query.Request{Text: "What does Caroline think of apples?", K: 5, Now: at.Add(24 * time.Hour), Mode: query.ModeVector, Explain: true}
	ann := func(opts query.Options) (string, float64) {
		resp, err := f.engine(opts).Search(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for _, r := range resp.Results {
			if r.ChunkID == "apples" {
				s = r.Explain.ANNScore
			}
		}
		return resp.Results[0].ChunkID, s
	}
	top, weighted := ann(query.Options{})
	_, plain := ann(query.Options{PlainVectorQuery: true})
	if top != "apples" || weighted <= plain {
		t.Fatalf("weighted: top %q, cos(apples) %.3f; unweighted cos %.3f: want apples first and a higher cosine", top, weighted, plain)
	}
}
