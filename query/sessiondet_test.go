package query_test

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// Same log, same request, same now: the same response whether the engine
// runs in a process that just opened the projections (its first vector
// search scans the stored vectors in place) or in a long-running one whose
// vector index is loaded (an owner an attached client talks to), with the
// L0 pre-filter on (lowered from 50,000 chunks to 100) and with request
// session filters. Before the fix the first search declined the session
// subset and filtered a full top k, the owner searched the subset: the
// ANN channels, and so the results, differed.
func TestSessionFilteredQuerySameInFreshAndWarmProcess(t *testing.T) {
	l, set, dir := generatedSet(t, 21, projstd.Options{})
	ctx := context.Background()
	infos, err := set.Timelines.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	opts := query.Options{PrefilterAbove: 100, PrefilterSessions: 3, LexicalANNSearch: true}
	engine := func(s *projstd.Set) *query.Engine {
		return query.New(query.Sources{Chunks: s.Timelines, Text: s.FTS, Vectors: s.Vectors, Sessions: s.Summary, Log: l}, opts)
	}
	r := rand.New(rand.NewSource(7))
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var reqs []query.Request
	for i := 0; i < 24; i++ {
		req := query.Request{Text: projtest.QueryText(r), K: 10, Now: now, Explain: true}
		req.Mode = []query.Mode{query.ModeHybrid, query.ModeVector}[i%2]
		if i%3 == 0 {
			req.Sessions = []string{infos[r.Intn(len(infos))].ID, infos[r.Intn(len(infos))].ID}
		} // else the pre-filter picks the sessions
		reqs = append(reqs, req)
	}
	// Each request first in a process of its own.
	first := make([]*query.Response, len(reqs))
	for i, req := range reqs {
		s, err := projstd.Open(dir, l, projstd.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if first[i], err = engine(s).Search(ctx, req); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Then all of them, twice, in one long-running process.
	s, err := projstd.Open(dir, l, projstd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := engine(s)
	filtered := 0
	for round := 0; round < 2; round++ {
		for i, req := range reqs {
			got, err := e.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, first[i]) {
				t.Fatalf("round %d %+v: a fresh process and a warm one differ:\nfresh %s\nwarm  %s",
					round, req, fmt.Sprint(first[i].Results), fmt.Sprint(got.Results))
			}
			if round == 0 && (req.Sessions != nil || got.Prefilter != nil) && len(got.Results) > 0 {
				filtered++
			}
		}
	}
	if filtered < len(reqs)/2 {
		t.Fatalf("only %d of %d requests were session-filtered with results", filtered, len(reqs))
	}
}

// generatedSet appends 3,000 generated events (seed) to a new encrypted
// log and catches up the standard projections over it, opened with o
// from dir. The caller closes the set; the log closes with the test.
func generatedSet(t *testing.T, seed int64, o projstd.Options) (l *log.Log, set *projstd.Set, dir string) {
	t.Helper()
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	l, err = log.Open(filepath.Join(t.TempDir(), "log"), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var batch []log.Entry
	for _, ev := range projtest.Generate(projtest.Config{Seed: seed, N: 3000, Vocab: 3000}) {
		batch = append(batch, log.Entry{ID: ev.ID, Time: ev.Time, Body: ev.Body})
	}
	ctx := context.Background()
	if _, err := l.AppendBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "projections")
	if set, err = projstd.Open(dir, l, o); err != nil {
		t.Fatal(err)
	}
	if err := set.CatchUp(ctx, nil); err != nil {
		set.Close()
		t.Fatal(err)
	}
	return l, set, dir
}
