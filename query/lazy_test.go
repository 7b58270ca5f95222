package query_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

// eagerChunks hides the timelines' bare reads: every lookup reads content.
type eagerChunks struct{ tl *timelines.Timelines }

func (c eagerChunks) Chunk(id string) (timelines.Chunk, bool, error) { return c.tl.Chunk(id) }
func (c eagerChunks) RecentTurns(s string, n int) ([]timelines.Chunk, error) {
	return c.tl.RecentTurns(s, n)
}
func (c eagerChunks) Count() (int, error) { return c.tl.Count() }
func (c eagerChunks) SupersededByEach(cs []*timelines.Chunk) ([][]string, error) {
	return c.tl.SupersededByEach(cs)
}
func (c eagerChunks) Around(id string, b, a int) ([]timelines.Chunk, error) {
	return c.tl.Around(id, b, a)
}

// TestBareReadsSameAnswer: reading content only for the candidates that
// can rank (query/lazy.go) answers every search and context exactly as
// reading every candidate does: same results, scores, explanations and
// bytes, over the full event mix with its questions, for several k, modes,
// filters and MMR.
func TestBareReadsSameAnswer(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, projtest.Generate(projtest.Config{Seed: 5, N: 3000, Conversation: true}))
	now := time.UnixMilli(projtest.BaseTime).UTC()
	r := rand.New(rand.NewSource(3))
	ctx := context.Background()
	for _, opts := range []query.Options{{}, {MMRLambda: 0.7}, {QuestionDamp: 0.3, ReplyWeight: 1}} {
		lazy := f.engine(opts)
		eager := query.New(query.Sources{Chunks: eagerChunks{f.tl}, Text: f.ft, Vectors: f.vec, Sessions: f.sum}, opts)
		for i := 0; i < 60; i++ {
			req := query.Request{Text: projtest.QueryText(r), K: []int{1, 5, 10, 40}[i%4], Now: now, Explain: true,
				Mode: []query.Mode{query.ModeHybrid, query.ModeBM25, query.ModeVector}[i%3]}
			if i%5 == 0 {
				if ch := f.evs[r.Intn(len(f.evs))].Chunk(); ch != nil {
					req.Session = ch.Session
				}
			}
			got, err := lazy.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := eager.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("query %q k=%d: bare reads answer\n%s\nreading every candidate answers\n%s", req.Text, req.K, brief(got), brief(want))
			}
			if i%4 == 0 {
				creq := query.ContextRequest{Request: req, Budget: 2000}
				gc, err := lazy.Context(ctx, creq)
				if err != nil {
					t.Fatal(err)
				}
				wc, err := eager.Context(ctx, creq)
				if err != nil {
					t.Fatal(err)
				}
				if string(gc) != string(wc) {
					t.Fatalf("query %q: contexts differ", req.Text)
				}
			}
		}
	}
}

func brief(r *query.Response) string {
	var b strings.Builder
	for _, x := range r.Results {
		fmt.Fprintf(&b, "%s %.6f %+v\n", x.ChunkID, x.Score, *x.Explain)
	}
	return b.String()
}
