package query_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// vecSessions is the test adapter with the ChunkSessioner capability.
type vecSessions struct {
	*vecAdapter
	asked int
}

func (v *vecSessions) ChunkSession(id string) (string, bool) {
	v.asked++
	in, ok := v.info[id]
	return in.session, ok
}

// TestChunkSessionerKeepsResults checks that dropping ANN hits outside a
// session filter by the searcher's own session knowledge changes nothing:
// the same responses as looking every hit up, with user session filters
// and with the L0 pre-filter, over a stream with tombstones.
func TestChunkSessionerKeepsResults(t *testing.T) {
	f := newFixture(t, t.TempDir())
	f.apply(t, projtest.Generate(projtest.Config{Seed: 5, N: 3000}))
	with := &vecSessions{vecAdapter: f.vec}
	opts := query.Options{PrefilterAbove: 100, PrefilterSessions: 3}
	plain := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: f.vec, Sessions: f.sum}, opts)
	fast := query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: with, Sessions: f.sum}, opts)
	infos, err := f.tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(8))
	ctx := context.Background()
	results := 0
	for i := 0; i < 60; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: 10, Now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		switch i % 3 {
		case 0:
			req.Session = infos[r.Intn(len(infos))].ID
		case 1:
			req.Sessions = []string{infos[r.Intn(len(infos))].ID, infos[r.Intn(len(infos))].ID}
		} // case 2: the pre-filter picks the sessions
		a, err := plain.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fast.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%+v: responses differ:\n%s\n%s", req, fmt.Sprint(a.Results), fmt.Sprint(b.Results))
		}
		results += len(a.Results)
	}
	if with.asked == 0 || results == 0 {
		t.Fatalf("nothing compared: %d sessions asked, %d results", with.asked, results)
	}
}
