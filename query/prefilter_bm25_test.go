package query_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/projections/summary"
	"github.com/unlimitedcontext/ucl/query"
)

// countingSessions counts the L0 session searches an engine runs.
type countingSessions struct {
	s     query.SessionSearcher
	calls int
}

func (c *countingSessions) Search(ctx context.Context, text string, k int) ([]summary.SessionHit, error) {
	c.calls++
	return c.s.Search(ctx, text, k)
}

// TestPrefilterSkippedInBM25Mode: the pre-filter only restricts the
// vector channel, so a mode without it (bm25, or any mode without a
// vector index) must not pay for the session search, and its output is
// byte for byte the one with the pre-filter switched off, search and
// context alike. The pre-filter is forced on (threshold 1) and must run
// in hybrid mode, or the comparison would prove nothing.
func TestPrefilterSkippedInBM25Mode(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, projtest.Generate(projtest.Config{Seed: 11, N: 3000, Vocab: 5000, Conversation: true}))
	infos, err := f.tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	on := &countingSessions{s: f.sum}
	forced := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: f.vec, Sessions: on}, query.Options{PrefilterAbove: 1, PrefilterSessions: 3, LexicalANNSearch: true})
	off := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: f.vec, Sessions: f.sum}, query.Options{PrefilterAbove: -1})
	noVec := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Sessions: on}, query.Options{PrefilterAbove: 1, PrefilterSessions: 3, LexicalANNSearch: true})
	noVecOff := query.New(query.Sources{Chunks: f.tl, Text: f.ft}, query.Options{PrefilterAbove: -1})
	ctx := context.Background()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewSource(3))
	results := 0
	for i := 0; i < 40; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: 15, Now: now, Explain: true, Mode: query.ModeBM25}
		if i%2 == 0 {
			req.Session = infos[r.Intn(len(infos))].ID // joins the kept sessions when the pre-filter runs
		}
		pairs := []struct {
			a, b *query.Engine
			mode query.Mode
		}{{forced, off, query.ModeBM25}, {noVec, noVecOff, query.ModeHybrid}}
		for _, pr := range pairs {
			req.Mode = pr.mode
			a, err := pr.a.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := pr.b.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("%+v: pre-filter on vs off differ:\n%s\n%s", req, ja, jb)
			}
			results += len(a.Results)
			creq := query.ContextRequest{Request: req, Budget: 600, RecentTurns: 2, Format: query.FormatJSON}
			ca, err := pr.a.Context(ctx, creq)
			if err != nil {
				t.Fatal(err)
			}
			cb, err := pr.b.Context(ctx, creq)
			if err != nil {
				t.Fatal(err)
			}
			if string(ca) != string(cb) {
				t.Fatalf("%+v: context with pre-filter on vs off differ:\n%s\n%s", req, ca, cb)
			}
		}
	}
	if on.calls != 0 {
		t.Errorf("session search ran %d times without a vector channel", on.calls)
	}
	if results == 0 {
		t.Fatal("nothing compared")
	}
	// The same forced engine runs the pre-filter when the vector channel
	// is used: the skip is by mode, not a pre-filter that never ran.
	resp, err := forced.Search(ctx, query.Request{Text: projtest.QueryText(r), K: 15, Now: now, Mode: query.ModeHybrid})
	if err != nil {
		t.Fatal(err)
	}
	if on.calls == 0 || resp.Prefilter == nil {
		t.Errorf("hybrid: pre-filter did not run (%d calls, %v)", on.calls, resp.Prefilter)
	}
}
