package query_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/projections/summary"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

// vecAdapter is the test's vector projection: HashEmbedder + Exact index,
// fed by the same events as the other projections.
type vecAdapter struct {
	emb  *vector.HashEmbedder
	idx  vector.Index
	info map[string]vecInfo
	// bySession: live ids per session, as the projection keeps them for
	// SearchVectorIn.
	bySession map[string]map[string]bool
}

type vecInfo struct {
	seq     uint64
	session string
	time    int64
	vec     []float32 // as embedded (ScoreVectors)
}

// newVecAdapter uses the exact index (the oracle) for tests, or with
// graph set the HNSW index with the vector projection's parameters, as
// ucl queries use it on stores above projstd.DefaultExactBelow vectors.
func newVecAdapter(t testing.TB, graph bool) *vecAdapter {
	emb, err := vector.NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	var idx vector.Index
	if graph {
		idx, err = vector.NewHNSW(emb.Dim(), vector.HNSWOptions{EfConstruction: 64, EfSearch: 256})
	} else {
		idx, err = vector.NewExact(emb.Dim())
	}
	if err != nil {
		t.Fatal(err)
	}
	return &vecAdapter{emb: emb, idx: idx, info: map[string]vecInfo{}, bySession: map[string]map[string]bool{}}
}

func (v *vecAdapter) Apply(ev *log.Event) error {
	switch b := ev.Body.(type) {
	case *log.Store:
		if old, ok := v.info[b.ChunkID]; ok {
			delete(v.bySession[old.session], b.ChunkID)
		}
		vec := v.emb.EmbedOne(b.Content)
		v.info[b.ChunkID] = vecInfo{ev.Seq, b.Session, b.Time, vec}
		if v.bySession[b.Session] == nil {
			v.bySession[b.Session] = map[string]bool{}
		}
		v.bySession[b.Session][b.ChunkID] = true
		return v.idx.Add(b.ChunkID, vec)
	case *log.Tombstone:
		var gone []string
		for id, in := range v.info {
			if in.seq < ev.Seq && projections.TombstoneMatches(b, id, in.session, in.time) {
				gone = append(gone, id)
			}
		}
		sort.Strings(gone)
		for _, id := range gone {
			delete(v.bySession[v.info[id].session], id)
			delete(v.info, id)
			if err := v.idx.Delete(id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v *vecAdapter) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	return v.idx.Search(v.emb.EmbedOne(text), k)
}

func (v *vecAdapter) EmbedQuery(ctx context.Context, text string, weight func(string) float64) ([]float32, error) {
	return v.emb.EmbedWeighted(text, weight), nil
}

// SearchVectorIn is the projection's session-restricted exact search
// (query.SessionVectorSearcher); like the projection it declines once the
// graph serves.
func (v *vecAdapter) SearchVectorIn(ctx context.Context, q []float32, k int, sessions []string) ([]vector.Hit, bool, error) {
	x, ok := v.idx.(*vector.Exact)
	if !ok {
		return nil, false, nil
	}
	var ids []string
	for _, s := range sessions {
		for id := range v.bySession[s] {
			ids = append(ids, id)
		}
	}
	if len(ids) > x.Len()/4 { // as the projection: a large share is cheaper scanned
		return nil, false, nil
	}
	hits, err := x.SearchIn(q, k, ids)
	return hits, true, err
}

func (v *vecAdapter) SearchVector(ctx context.Context, q []float32, k int) ([]vector.Hit, error) {
	return v.idx.Search(q, k)
}

// ScoreVectors is the projection's (query.VectorScorer).
func (v *vecAdapter) ScoreVectors(ctx context.Context, q []float32, ids []string) ([]vector.Hit, error) {
	return vector.ScoreEach(q, v.emb.Dim(), func(fn func(string, []float32) error) error {
		seen := map[string]bool{}
		for _, id := range ids {
			if in, ok := v.info[id]; ok && !seen[id] {
				seen[id] = true
				if err := fn(id, in.vec); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// fixture is a full set of real projections over a stream of events.
type fixture struct {
	tl  *timelines.Timelines
	ft  *fts.Index
	sum *summary.Index
	vec *vecAdapter
	evs []*log.Event
	// bySeq is the log the timelines read content back from.
	mu    sync.Mutex
	bySeq map[uint64]*log.Event
}

// EventAt makes the fixture the timelines' event reader.
func (f *fixture) EventAt(seq uint64) (*log.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev, ok := f.bySeq[seq]
	if !ok {
		return nil, fmt.Errorf("event %d: %w", seq, log.ErrNotFound)
	}
	return ev, nil
}

func newFixture(t testing.TB, dir string) *fixture { return newFixtureGraph(t, dir, false) }

func newFixtureGraph(t testing.TB, dir string, graph bool) *fixture {
	t.Helper()
	f := &fixture{vec: newVecAdapter(t, graph), bySeq: map[uint64]*log.Event{}}
	var err error
	if f.tl, err = timelines.Open(filepath.Join(dir, "timelines"), f); err != nil {
		t.Fatal(err)
	}
	if f.ft, err = fts.Open(filepath.Join(dir, "fts")); err != nil {
		t.Fatal(err)
	}
	if f.sum, err = summary.Open(filepath.Join(dir, "summary"), f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.tl.Close()
		f.ft.Close()
		f.sum.Close()
	})
	return f
}

// apply applies evs to every projection (or only to those named in only)
// and commits.
func (f *fixture) apply(t testing.TB, evs []*log.Event, only ...string) {
	t.Helper()
	use := func(n string) bool {
		if len(only) == 0 {
			return true
		}
		for _, o := range only {
			if o == n {
				return true
			}
		}
		return false
	}
	f.mu.Lock()
	for _, ev := range evs {
		f.bySeq[ev.Seq] = ev
	}
	f.mu.Unlock()
	type applier interface{ Apply(*log.Event) error }
	ps := map[string]applier{"timelines": f.tl, "fts": f.ft, "summary": f.sum, "vector": f.vec}
	for _, ev := range evs {
		for _, n := range []string{"timelines", "fts", "summary", "vector"} {
			if use(n) {
				if err := ps[n].Apply(ev); err != nil {
					t.Fatalf("apply seq %d to %s: %v", ev.Seq, n, err)
				}
			}
		}
	}
	if len(evs) == 0 {
		return
	}
	last := evs[len(evs)-1]
	cp := projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}
	for _, p := range []projections.Projection{f.tl, f.ft, f.sum} {
		if use(p.Name()) {
			if err := p.Commit(cp); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.evs = append(f.evs, evs...)
}

func (f *fixture) engine(opts query.Options) *query.Engine {
	return query.New(query.Sources{Chunks: f.tl, Text: f.ft, Vectors: f.vec, Sessions: f.sum}, opts)
}

// chain seals bodies into events (seq from 1).
func chain(t testing.TB, bodies ...log.Body) []*log.Event {
	t.Helper()
	evs, err := projtest.Chain(bodies...)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// loadLog appends the JSONL file through a real encrypted log and returns
// the events read back from it (decrypted and verified).
func loadLog(t testing.TB, path string) []*log.Event {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	entries, err := ingest.ReadAll(fh, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(t.TempDir(), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range entries {
		entries[i].Time = projtest.BaseTime + int64(i)*1000 // pinned append times
	}
	if _, err := l.AppendBatch(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	var evs []*log.Event
	if err := l.Events(context.Background(), 1, 0, func(ev *log.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// Lexical forwards the embedder's capability, as the vector projection
// does, so the tests rank as ucl does (Options.ANNGate).
func (v *vecAdapter) Lexical() bool { return vector.IsLexical(v.emb) }
