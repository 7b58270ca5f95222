package query_test

import (
	"context"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// A long-running engine answers after changes what a fresh one answers:
// the timelines keep a read cache across queries (timelines/cache.go), so
// an engine that searched before stores, re-stores, edits and tombstones
// landed must not rank what it read then. One fixture takes the events in
// steps and is searched after every step; a fixture built fresh from all
// the events so far must give the same responses and contexts.
func TestWarmEngineAnswersAsFreshAfterChanges(t *testing.T) {
	evs := projtest.Generate(projtest.Config{Seed: 21, N: 2400, Sessions: 12, Conversation: true})
	now := time.UnixMilli(projtest.BaseTime).UTC()
	r := rand.New(rand.NewSource(8))
	var reqs []query.Request
	for i := 0; i < 24; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: []int{5, 10, 30}[i%3], Now: now, Explain: true,
			Mode: []query.Mode{query.ModeHybrid, query.ModeBM25, query.ModeVector}[i%3]}
		if i%4 == 0 {
			if ch := evs[r.Intn(len(evs))].Chunk(); ch != nil {
				req.Session = ch.Session
			}
		}
		reqs = append(reqs, req)
	}
	opts := query.Options{QuestionDamp: 0.3, ReplyWeight: 1}
	ctx := context.Background()
	warm := newFixture(t, t.TempDir())
	we := warm.engine(opts)
	const step = 600
	for end := step; end <= len(evs); end += step {
		warm.apply(t, evs[end-step:end])
		fresh := newFixture(t, t.TempDir())
		fresh.apply(t, evs[:end])
		fe := fresh.engine(opts)
		for _, req := range reqs {
			got, err := we.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fe.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after %d events, query %q k=%d: the warm engine answers\n%s\na fresh one answers\n%s", end, req.Text, req.K, brief(got), brief(want))
			}
			creq := query.ContextRequest{Request: req, Budget: 1500}
			gc, err := we.Context(ctx, creq)
			if err != nil {
				t.Fatal(err)
			}
			wc, err := fe.Context(ctx, creq)
			if err != nil {
				t.Fatal(err)
			}
			if string(gc) != string(wc) {
				t.Fatalf("after %d events, query %q: the contexts differ", end, req.Text)
			}
		}
	}
}
