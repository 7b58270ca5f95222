package query_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// day0 is 2023-05-08 00:00 UTC in unix ms.
var day0 = time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) int64 { return day0.Add(d).UnixMilli() }

const dayDur = 24 * time.Hour

// smallBodies is a small store: three sessions, several kinds and roles,
// a split document and a sessionless knowledge chunk.
func smallBodies() []log.Body {
	st := func(id, session, role string, kind log.Kind, tm int64, content string, meta map[string]string) *log.Store {
		return &log.Store{ChunkID: id, Session: session, Role: role, Kind: kind, Time: tm, Content: content, Meta: meta}
	}
	conv := log.KindConversation
	return []log.Body{
		st("a1", "alpha", "user", conv, at(0), "We should migrate the billing database to Postgres 15 using logical replication.", map[string]string{"eid": "a1", "source": "cli"}),
		st("a2", "alpha", "assistant", conv, at(time.Minute), "Logical replication keeps downtime short; remember that sequences are not replicated.", nil),
		st("a3", "alpha", "user", conv, at(2*time.Minute), "Fine, the replication cutover is on Saturday morning.", map[string]string{"eid": "a3"}),
		st("b1", "beta", "user", conv, at(10*dayDur), "My sourdough starter smells like acetone; the replication of yeast is slow.", nil),
		st("b2", "beta", "assistant", conv, at(10*dayDur+time.Minute), "Feed the starter twice a day so the yeast can keep up.", nil),
		st("b3", "beta", "tool", log.KindToolCall, at(10*dayDur+2*time.Minute), "search(\"sourdough acetone smell\") returned 3 pages about starter feeding", map[string]string{"tool": "search"}),
		&log.Store{ChunkID: "doc#0", Session: "beta", Kind: log.KindDocument, Time: at(9 * dayDur), ChunkParent: "doc", ChunkIndex: 0,
			Content: "Bread notes. A starter needs regular feeding. Hydration of 75 percent suits most loaves.", Meta: map[string]string{"name": "bread-notes.md"}},
		&log.Store{ChunkID: "doc#1", Session: "beta", Kind: log.KindDocument, Time: at(9 * dayDur), ChunkParent: "doc", ChunkIndex: 1,
			Content: "Cold proofing overnight in the fridge gives a better rise & more flavour <really>.", Meta: map[string]string{"name": "bread-notes.md"}},
		st("g1", "gamma", "user", conv, at(30*dayDur), "Planning the Lisbon trip: the apartment in Alfama is booked, replication of my notes to the laptop done.", nil),
		st("g2", "gamma", "assistant", conv, at(30*dayDur+time.Minute), "Take the train to Sintra early to avoid the crowds.", nil),
		st("k1", "", "", log.KindKnowledge, at(20*dayDur), "Postgres logical replication needs a primary key or replica identity on every table.", nil),
	}
}

func smallFixture(t testing.TB) *fixture {
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, smallBodies()...))
	return f
}

var now0 = day0.Add(31 * dayDur) // after everything

func ids(rs []query.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ChunkID
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestSearchResultCarriesChunk(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{})
	resp, err := e.Search(context.Background(), query.Request{Text: "billing database migrate", Now: now0, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) == 0 || resp.Results[0].ChunkID != "a1" {
		t.Fatalf("results %v, want a1 first", ids(resp.Results))
	}
	r := resp.Results[0]
	want := map[string]string{"eid": "a1", "source": "cli"}
	if !reflect.DeepEqual(r.Meta, want) || r.Session != "alpha" || r.Role != "user" || r.Kind != "conversation" ||
		r.Time != at(0) || r.Seq != 1 || r.Origin != query.OriginOwn || !strings.HasPrefix(r.Content, "We should migrate") {
		t.Errorf("result %+v does not carry the stored chunk", r)
	}
	ex := r.Explain
	if ex == nil || ex.BM25Rank != 1 || ex.BM25Score <= 0 || ex.RRF <= 0 || ex.Final != r.Score || ex.Recency < 1 || ex.Affinity != 1 {
		t.Errorf("explain %+v", ex)
	}
	// Without Explain there is no breakdown.
	resp, err = e.Search(context.Background(), query.Request{Text: "billing database migrate", Now: now0})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].Explain != nil {
		t.Error("explain without --explain")
	}
}

func TestFilters(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  query.Request
		ok   func(r query.Result) bool
		want []string // must be among the results
		none bool     // expect no results
	}{
		{name: "session", req: query.Request{Sessions: []string{"beta"}}, ok: func(r query.Result) bool { return r.Session == "beta" }, want: []string{"b1"}},
		{name: "two sessions", req: query.Request{Sessions: []string{"beta", "gamma"}}, ok: func(r query.Result) bool { return r.Session == "beta" || r.Session == "gamma" }, want: []string{"b1", "g1"}},
		{name: "unknown session", req: query.Request{Sessions: []string{"nope"}}, none: true},
		{name: "kind knowledge", req: query.Request{Kinds: []string{"knowledge"}}, ok: func(r query.Result) bool { return r.Kind == "knowledge" }, want: []string{"k1"}},
		{name: "kind document", req: query.Request{Text: "starter feeding hydration", Kinds: []string{"document"}}, ok: func(r query.Result) bool { return r.Kind == "document" }, want: []string{"doc#0"}},
		{name: "kind tool_call", req: query.Request{Text: "sourdough acetone", Kinds: []string{"tool_call"}}, ok: func(r query.Result) bool { return r.Kind == "tool_call" }, want: []string{"b3"}},
		{name: "role assistant", req: query.Request{Roles: []string{"assistant"}}, ok: func(r query.Result) bool { return r.Role == "assistant" }, want: []string{"a2"}},
		{name: "since", req: query.Request{Since: at(5 * dayDur)}, ok: func(r query.Result) bool { return r.Time >= at(5*dayDur) }, want: []string{"b1", "g1", "k1"}},
		{name: "until", req: query.Request{Until: at(5 * dayDur)}, ok: func(r query.Result) bool { return r.Time < at(5*dayDur) }, want: []string{"a1", "a2"}},
		{name: "until exclusive", req: query.Request{Until: at(0)}, none: true},
		{name: "since and until", req: query.Request{Since: at(5 * dayDur), Until: at(25 * dayDur)}, ok: func(r query.Result) bool { return r.Time >= at(5*dayDur) && r.Time < at(25*dayDur) }, want: []string{"b1", "k1"}},
		{name: "session and role", req: query.Request{Sessions: []string{"alpha"}, Roles: []string{"user"}}, ok: func(r query.Result) bool { return r.Session == "alpha" && r.Role == "user" }, want: []string{"a1", "a3"}},
		{name: "origin own", req: query.Request{Origin: query.OriginOwn}, ok: func(query.Result) bool { return true }, want: []string{"a1"}},
		{name: "origin shared (an own engine has none)", req: query.Request{Origin: query.OriginShared}, none: true},
	} {
		for _, mode := range []query.Mode{query.ModeHybrid, query.ModeBM25, query.ModeVector} {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				req := tc.req
				if req.Text == "" {
					req.Text = "replication postgres database logical"
				}
				req.Now, req.Mode, req.K = now0, mode, 50
				resp, err := e.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if tc.none {
					if len(resp.Results) != 0 {
						t.Fatalf("want no results, got %v", ids(resp.Results))
					}
					return
				}
				for _, r := range resp.Results {
					if !tc.ok(r) {
						t.Errorf("result %s (session %q kind %s role %q time %d) breaks the filter", r.ChunkID, r.Session, r.Kind, r.Role, r.Time)
					}
				}
				got := ids(resp.Results)
				for _, w := range tc.want {
					if mode == query.ModeVector && !contains(got, w) {
						continue // ANN may legitimately miss lexical matches
					}
					if !contains(got, w) {
						t.Errorf("missing %s in %v", w, got)
					}
				}
			})
		}
	}
}

func TestTombstonedNeverReturned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ts    log.Tombstone
		gone  []string
		stale bool // the vector index does not see the tombstone
	}{
		{name: "by id", ts: log.Tombstone{Chunks: []string{"a1", "k1"}}, gone: []string{"a1", "k1"}},
		{name: "by session", ts: log.Tombstone{Session: "alpha"}, gone: []string{"a1", "a2", "a3"}},
		{name: "by range", ts: log.Tombstone{From: at(5 * dayDur), To: at(25 * dayDur)}, gone: []string{"b1", "b2", "b3", "doc#0", "doc#1", "k1"}},
		{name: "stale vector index", ts: log.Tombstone{Chunks: []string{"a1", "k1", "a2"}}, gone: []string{"a1", "a2", "k1"}, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, t.TempDir())
			bodies := append(smallBodies(), &tc.ts)
			evs := chain(t, bodies...)
			f.apply(t, evs[:len(evs)-1])
			e := f.engine(query.Options{})
			ctx := context.Background()
			texts := []string{"replication postgres logical database", "sourdough starter acetone yeast", "bread notes hydration proofing"}
			before := map[string]bool{}
			for _, txt := range texts {
				resp, err := e.Search(ctx, query.Request{Text: txt, Now: now0, K: 50})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range resp.Results {
					before[r.ChunkID] = true
				}
			}
			for _, g := range tc.gone {
				if !before[g] {
					t.Fatalf("%s not found before the tombstone: the test proves nothing", g)
				}
			}
			if tc.stale {
				f.apply(t, evs[len(evs)-1:], "timelines", "fts", "summary")
			} else {
				f.apply(t, evs[len(evs)-1:])
			}
			live := map[string]string{}
			for _, b := range smallBodies() {
				if st := b.(*log.Store); !contains(tc.gone, st.ChunkID) {
					live[st.ChunkID] = st.Content
				}
			}
			for _, mode := range []query.Mode{query.ModeHybrid, query.ModeBM25, query.ModeVector} {
				for _, txt := range texts {
					resp, err := e.Search(ctx, query.Request{Text: txt, Now: now0, K: 50, Mode: mode})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range resp.Results {
						if contains(tc.gone, r.ChunkID) {
							t.Errorf("%s: tombstoned %s returned for %q", mode, r.ChunkID, txt)
						}
						if c, ok := live[r.ChunkID]; !ok || c != r.Content {
							t.Errorf("%s: result %q is not a live chunk as stored", mode, r.ChunkID)
						}
					}
				}
				out, err := e.Context(ctx, query.ContextRequest{Request: query.Request{Text: texts[0] + " " + texts[1], Now: now0, Mode: mode, Session: "alpha"}, Budget: 4000, RecentTurns: 5})
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range smallBodies() {
					if st := b.(*log.Store); contains(tc.gone, st.ChunkID) && strings.Contains(string(out), xmlEsc(st.Content)) {
						t.Errorf("%s: tombstoned %s in the context", mode, st.ChunkID)
					}
				}
			}
		})
	}
}

func xmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func TestRecencyAndAffinity(t *testing.T) {
	same := "the quarterly report draft needs a new chart"
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t,
		&log.Store{ChunkID: "old", Session: "s1", Kind: log.KindConversation, Role: "user", Time: at(0), Content: same},
		&log.Store{ChunkID: "new", Session: "s2", Kind: log.KindConversation, Role: "user", Time: at(60 * dayDur), Content: same},
	))
	e := f.engine(query.Options{})
	ctx := context.Background()
	resp, err := e.Search(ctx, query.Request{Text: "quarterly report chart", Now: day0.Add(61 * dayDur), Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	// Equal content: the tie on rank goes to the chunk id ("new" < "old")
	// in both channels, so check the recency factor itself too.
	if got := ids(resp.Results); len(got) != 2 || got[0] != "new" {
		t.Fatalf("recency: got %v, want new first", got)
	}
	if r0, r1 := resp.Results[0].Explain.Recency, resp.Results[1].Explain.Recency; r0 <= r1 {
		t.Errorf("recency factor new %.4f <= old %.4f", r0, r1)
	}
	// The active session beats recency.
	resp, err = e.Search(ctx, query.Request{Text: "quarterly report chart", Now: day0.Add(61 * dayDur), Session: "s1", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(resp.Results); got[0] != "old" || resp.Results[0].Explain.Affinity <= 1 {
		t.Errorf("affinity: got %v (%+v), want old first", got, resp.Results[0].Explain)
	}
	// Half-life: with a 1-day half-life the old chunk's recency is ~1.
	e2 := f.engine(query.Options{RecencyHalfLife: dayDur})
	resp, err = e2.Search(ctx, query.Request{Text: "quarterly report chart", Now: day0.Add(61 * dayDur), Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ChunkID == "old" && r.Explain.Recency > 1.0000001 {
			t.Errorf("old recency %.8f with a 1-day half-life", r.Explain.Recency)
		}
		if r.ChunkID == "new" && (r.Explain.Recency < 1.0099 || r.Explain.Recency > 1.0101) {
			t.Errorf("new recency %.4f, want 1+0.02/2", r.Explain.Recency)
		}
	}
}

func TestMMRDiversifies(t *testing.T) {
	f := newFixture(t, t.TempDir())
	dup := "garden tomato seedlings need more light and a deeper pot"
	f.apply(t, chain(t,
		&log.Store{ChunkID: "d1", Session: "s", Kind: log.KindConversation, Time: at(0), Content: dup},
		&log.Store{ChunkID: "d2", Session: "s", Kind: log.KindConversation, Time: at(time.Minute), Content: dup + "."},
		&log.Store{ChunkID: "d3", Session: "s", Kind: log.KindConversation, Time: at(2 * time.Minute), Content: dup + "!"},
		&log.Store{ChunkID: "x", Session: "s", Kind: log.KindConversation, Time: at(3 * time.Minute), Content: "garden beds of cedar, filled with compost"},
	))
	req := query.Request{Text: "garden tomato seedlings light", Now: now0, K: 2}
	plain, err := f.engine(query.Options{}).Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(plain.Results); contains(got, "x") {
		t.Fatalf("without MMR the duplicates should fill the top 2, got %v", got)
	}
	div, err := f.engine(query.Options{MMRLambda: 0.5}).Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(div.Results); len(got) != 2 || !contains(got, "x") || got[0] != plain.Results[0].ChunkID {
		t.Errorf("with MMR got %v, want the best duplicate then x", got)
	}
}

func TestTemporalPhraseFilters(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{TemporalBoost: -1}) // phrases as filters
	ctx := context.Background()
	// now0 is 2023-06-08 (Thursday); "yesterday" is 2023-06-07 = day 30.
	resp, err := e.Search(ctx, query.Request{Text: "what did I say about replication yesterday", Now: now0, K: 50, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SearchText != "what did I say about replication" || len(resp.Temporal) != 1 || resp.Temporal[0].Phrase != "yesterday" {
		t.Fatalf("search text %q temporal %+v", resp.SearchText, resp.Temporal)
	}
	if got := ids(resp.Results); len(got) == 0 || got[0] != "g1" {
		t.Errorf("got %v, want only yesterday's g1", got)
	}
	for _, r := range resp.Results {
		if r.Time < at(30*dayDur) || r.Time >= at(31*dayDur) {
			t.Errorf("%s outside yesterday", r.ChunkID)
		}
	}
	// The default boosts the window (a day: DayBoost, twice
	// TemporalBoost): yesterday's g1 first, the rest kept.
	resp, err = f.engine(query.Options{}).Search(ctx, query.Request{Text: "what did I say about replication yesterday", Now: now0, K: 50, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(resp.Results); len(got) < 3 || got[0] != "g1" || resp.Results[0].Explain.Temporal != 1+2*query.DefaultTemporalBoost || // a day: DayBoost
		resp.Results[len(got)-1].Explain.Temporal != 1 {
		t.Errorf("default boost: got %v", got)
	}
	// Boost mode: the window ranks first but others remain.
	eb := f.engine(query.Options{TemporalBoost: 5})
	resp, err = eb.Search(ctx, query.Request{Text: "replication in May 2023", Now: now0, K: 50, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) < 3 || resp.Results[0].Time >= at(24*dayDur) || resp.Results[0].Explain.Temporal != 6 {
		t.Errorf("boost mode: %v", ids(resp.Results))
	}
	if !contains(ids(resp.Results), "g1") {
		t.Errorf("boost mode dropped g1 (June): %v", ids(resp.Results))
	}
	// NoTemporal keeps the text as is.
	resp, err = e.Search(ctx, query.Request{Text: "replication yesterday", Now: now0, NoTemporal: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SearchText != "replication yesterday" || len(resp.Temporal) != 0 {
		t.Errorf("NoTemporal: %q %+v", resp.SearchText, resp.Temporal)
	}
}

func TestBadInputs(t *testing.T) {
	f := smallFixture(t)
	e := f.engine(query.Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  query.Request
		want error
	}{
		{"empty", query.Request{}, query.ErrEmptyQuery},
		{"blank", query.Request{Text: " \t\n"}, query.ErrEmptyQuery},
		{"negative k", query.Request{Text: "x", K: -1}, query.ErrBadK},
		{"bad mode", query.Request{Text: "x", Mode: "fuzzy"}, query.ErrBadMode},
		{"bad kind", query.Request{Text: "x", Kinds: []string{"email"}}, query.ErrBadFilter},
		{"empty kind", query.Request{Text: "x", Kinds: []string{""}}, query.ErrBadFilter},
		{"bad origin", query.Request{Text: "x", Origin: "theirs"}, query.ErrBadFilter},
		{"until before since", query.Request{Text: "x", Since: 10, Until: 5}, query.ErrBadTimeRange},
		{"until equals since", query.Request{Text: "x", Since: 10, Until: 10}, query.ErrBadTimeRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.Search(ctx, tc.req); !errors.Is(err, tc.want) {
				t.Errorf("Search: got %v, want %v", err, tc.want)
			}
			if _, err := e.Context(ctx, query.ContextRequest{Request: tc.req, Budget: 100}); !errors.Is(err, tc.want) {
				t.Errorf("Context: got %v, want %v", err, tc.want)
			}
		})
	}
	// Huge k is capped, k 0 is the default.
	resp, err := e.Search(ctx, query.Request{Text: "replication starter bread lisbon", K: 1 << 30, Now: now0})
	if err != nil || len(resp.Results) > query.MaxK {
		t.Errorf("huge k: %v, %d results", err, len(resp.Results))
	}
	resp, err = e.Search(ctx, query.Request{Text: "replication", Now: now0})
	if err != nil || len(resp.Results) == 0 || len(resp.Results) > query.DefaultK {
		t.Errorf("k 0: %v, %d results", err, len(resp.Results))
	}
	// Stopwords only: no error, no results from BM25.
	if _, err := e.Search(ctx, query.Request{Text: "the of and", Now: now0}); err != nil {
		t.Errorf("stopwords: %v", err)
	}
	// Contradictory phrases (two dates) as filters give an empty result,
	// not an error; as boosts (the default) they boost nothing.
	resp, err = f.engine(query.Options{TemporalBoost: -1}).Search(ctx, query.Request{Text: "replication in May 2023 in 2019", Now: now0})
	if err != nil || len(resp.Results) != 0 {
		t.Errorf("contradictory phrases: %v %v", err, ids(resp.Results))
	}
	resp, err = e.Search(ctx, query.Request{Text: "replication in May 2023 in 2019", Now: now0, Explain: true})
	if err != nil || len(resp.Results) == 0 || resp.Results[0].Explain.Temporal != 1 {
		t.Errorf("contradictory phrases as boosts: %v %v", err, ids(resp.Results))
	}
	// Unknown active session: fine, no affinity, no recent turns.
	if _, err := e.Context(ctx, query.ContextRequest{Request: query.Request{Text: "replication", Session: "nope", Now: now0}, Budget: 500, RecentTurns: 3}); err != nil {
		t.Errorf("unknown active session: %v", err)
	}
	for _, tc := range []struct {
		name string
		req  query.ContextRequest
		want error
	}{
		{"budget 0", query.ContextRequest{Request: query.Request{Text: "x"}}, query.ErrBadBudget},
		{"budget negative", query.ContextRequest{Request: query.Request{Text: "x"}, Budget: -5}, query.ErrBadBudget},
		{"budget below the shell", query.ContextRequest{Request: query.Request{Text: "x"}, Budget: 3}, query.ErrBadBudget},
		{"bad format", query.ContextRequest{Request: query.Request{Text: "x"}, Budget: 100, Format: "yaml"}, query.ErrBadFormat},
		{"negative recent", query.ContextRequest{Request: query.Request{Text: "x"}, Budget: 100, RecentTurns: -1}, query.ErrBadFilter},
		{"no text, no session", query.ContextRequest{Budget: 100, RecentTurns: 3}, query.ErrEmptyQuery},
	} {
		if _, err := e.Context(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// Missing sources.
	if _, err := query.New(query.Sources{}, query.Options{}).Search(ctx, query.Request{Text: "x"}); !errors.Is(err, query.ErrNoSource) {
		t.Errorf("no sources: %v", err)
	}
	if _, err := query.New(query.Sources{Chunks: f.tl, Text: f.ft}, query.Options{}).Search(ctx, query.Request{Text: "x", Mode: query.ModeVector}); !errors.Is(err, query.ErrBadMode) {
		t.Errorf("vector mode without vectors: %v", err)
	}
	// Hybrid with one channel works.
	if _, err := query.New(query.Sources{Chunks: f.tl, Text: f.ft}, query.Options{}).Search(ctx, query.Request{Text: "replication", Now: now0}); err != nil {
		t.Errorf("hybrid with bm25 only: %v", err)
	}
	// A cancelled context is an error, not a panic.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Search(cctx, query.Request{Text: "replication", Now: now0}); err == nil {
		t.Error("cancelled context: no error")
	}
}

func TestDeterminism(t *testing.T) {
	run := func() (string, []byte) {
		f := newFixture(t, t.TempDir())
		f.apply(t, chain(t, smallBodies()...))
		e := f.engine(query.Options{MMRLambda: 0.7})
		resp, err := e.Search(context.Background(), query.Request{Text: "replication starter last month", Now: now0, Explain: true, K: 20})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(resp)
		var all []byte
		for _, format := range []query.Format{query.FormatXML, query.FormatJSON, query.FormatText} {
			out, err := e.Context(context.Background(), query.ContextRequest{
				Request: query.Request{Text: "replication sourdough lisbon", Now: now0, Session: "beta"},
				Budget:  300, RecentTurns: 2, Format: format})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, out...)
		}
		return string(b), all
	}
	s1, c1 := run()
	for i := 0; i < 3; i++ {
		s2, c2 := run()
		if s1 != s2 {
			t.Fatalf("search output differs:\n%s\n%s", s1, s2)
		}
		if string(c1) != string(c2) {
			t.Fatalf("context output differs:\n%s\n%s", c1, c2)
		}
	}
}

// meetingsFixture holds thirty one-turn sessions s00…s29: near-identical
// meeting notes, a violin lesson in s07 and a violinist in s29, then more.
func meetingsFixture(t *testing.T, more ...log.Body) *fixture {
	var bodies []log.Body
	for i := 0; i < 30; i++ {
		s := fmt.Sprintf("s%02d", i)
		content := fmt.Sprintf("weekly meeting notes number %d about the kitchen renovation budget", i)
		switch i {
		case 7:
			content = "the violin teacher suggested scales in D major before the recital"
		case 29:
			content = "our violinist practised daily"
		}
		bodies = append(bodies, &log.Store{ChunkID: s + "-1", Session: s, Kind: log.KindConversation, Role: "user", Time: at(time.Duration(i) * time.Hour), Content: content})
	}
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, append(bodies, more...)...))
	return f
}

func TestPrefilter(t *testing.T) {
	// Many sessions. The pre-filter keeps the session whose summary
	// matches and the active one; BM25's own candidates pass whatever
	// their session (their sessions join the kept ones), while candidates
	// only the vector channel found (s29-1: "violinist" shares letters
	// with "violin", not its stem) are dropped outside the kept sessions.
	f := meetingsFixture(t, &log.Store{ChunkID: "kv", Kind: log.KindKnowledge, Time: at(0), Content: "violin recital scales practice"})
	req := query.Request{Text: "violin recital scales meeting", Now: now0, Session: "s20", K: 40, Explain: true}
	resp, err := f.engine(query.Options{PrefilterAbove: 10, PrefilterSessions: 2, LexicalANNSearch: true}).Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(resp.Prefilter, "s07") || !contains(resp.Prefilter, "s20") || len(resp.Prefilter) > 3 {
		t.Fatalf("prefilter sessions %v", resp.Prefilter)
	}
	// A sessionless chunk still comes through the ANN channel.
	if !contains(ids(resp.Results), "kv") {
		t.Errorf("sessionless chunk lost by the pre-filter: %v", ids(resp.Results))
	}
	kept := map[string]bool{"": true}
	for _, s := range resp.Prefilter {
		kept[s] = true
	}
	for _, r := range resp.Results {
		if r.Explain.BM25Rank > 0 {
			kept[r.Session] = true
		}
	}
	for _, r := range resp.Results {
		if !kept[r.Session] {
			t.Errorf("%s from session %s outside the pre-filter and BM25's sessions", r.ChunkID, r.Session)
		}
	}
	if !contains(ids(resp.Results), "s07-1") || contains(ids(resp.Results), "s29-1") || len(resp.Results) < 20 {
		t.Errorf("results %v: want s07-1 and the meeting notes BM25 matches, not s29-1", ids(resp.Results))
	}
	// Below the threshold nothing is pre-filtered: the vector channel's
	// s29-1 comes back.
	resp, err = f.engine(query.Options{LexicalANNSearch: true}).Search(context.Background(), req)
	if err != nil || resp.Prefilter != nil || !contains(ids(resp.Results), "s29-1") {
		t.Errorf("no prefilter expected: %v %v %v", err, resp.Prefilter, ids(resp.Results))
	}
}

// TestNeighbourTurns: the reply to a question that matches the words
// ranks first although it shares none of them; the neighbour channel
// respects filters and tombstones; switched off, the reply is not found.
func TestNeighbourTurns(t *testing.T) {
	conv := log.KindConversation
	st := func(id, session, role string, min int, content string) *log.Store {
		return &log.Store{ChunkID: id, Session: session, Role: role, Kind: conv, Time: at(time.Duration(min) * time.Minute), Content: content}
	}
	bodies := []log.Body{
		st("p1", "pets", "user", 0, "Morning! Busy week at work."),
		st("p2", "pets", "assistant", 1, "What did you name the new puppy?"),
		st("p3", "pets", "user", 2, "We went with Biscuit, after the colour of her fur."),
		st("p4", "pets", "assistant", 3, "Lovely. How is the garden coming along?"),
		st("x1", "other", "user", 60, "The car needs new tyres before winter."),
		st("x2", "other", "assistant", 61, "Winter tyres are worth it on icy roads."),
	}
	evs := chain(t, append(bodies, &log.Tombstone{Chunks: []string{"p3"}})...)
	f := newFixture(t, t.TempDir())
	f.apply(t, evs[:len(evs)-1])
	ctx := context.Background()
	req := query.Request{Text: "what name did they give the puppy", Now: now0, Explain: true}
	resp, err := f.engine(query.Options{}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(resp.Results)
	if len(got) < 2 || got[0] != "p3" || got[1] != "p2" {
		t.Fatalf("got %v, want the reply p3 first, then the question p2", got)
	}
	if ex := resp.Results[0].Explain; ex.BM25Rank != 0 || ex.Neighbour <= 0 {
		t.Errorf("p3 explain %+v: want no bm25 rank and a neighbour score", ex)
	}
	// Filters apply to neighbours: with an assistant-only filter the user's
	// reply p3 is not returned.
	resp, err = f.engine(query.Options{}).Search(ctx, query.Request{Text: req.Text, Now: now0, Roles: []string{"assistant"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.Role != "assistant" {
			t.Errorf("role filter let %s (%s) through", r.ChunkID, r.Role)
		}
	}
	// BM25 alone: p3 shares no word with the query, so only its
	// neighbour finds it; switched off, it is not found.
	bm := req
	bm.Mode = query.ModeBM25
	if resp, err = f.engine(query.Options{}).Search(ctx, bm); err != nil {
		t.Fatal(err)
	}
	if got := ids(resp.Results); len(got) == 0 || got[0] != "p3" {
		t.Errorf("bm25 with neighbours: got %v, want p3 first", got)
	}
	off := query.Options{NeighbourWeight: -1, ReplyWeight: -1, SessionWeight: -1}
	if resp, err = f.engine(off).Search(ctx, bm); err != nil {
		t.Fatal(err)
	}
	if contains(ids(resp.Results), "p3") {
		t.Errorf("without neighbours p3 should not match: %v", ids(resp.Results))
	}
	// A tombstoned reply is never returned through its neighbour.
	f.apply(t, evs[len(evs)-1:])
	resp, err = f.engine(query.Options{}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if contains(ids(resp.Results), "p3") {
		t.Errorf("tombstoned p3 returned: %v", ids(resp.Results))
	}
}

// TestLoneChannelCountsInFull: the channel weights balance two channels
// against each other; a channel that returned candidates alone counts its
// best score as 1 whatever its weight, so the neighbour and session terms
// keep the balance they have in bm25 mode.
func TestLoneChannelCountsInFull(t *testing.T) {
	f := smallFixture(t)
	var o query.Options
	o.ScoreWeights.BM25, o.ScoreWeights.ANN = 0.5, 0.15
	e := f.engine(o)
	for _, mode := range []query.Mode{query.ModeBM25, query.ModeVector} {
		resp, err := e.Search(context.Background(), query.Request{Text: "billing database migrate", Now: now0, Mode: mode, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		best := 0.0
		for _, r := range resp.Results {
			best = math.Max(best, r.Explain.RRF)
		}
		if best != 1 {
			t.Errorf("%s: best relevance %v, want 1 (the lone channel's best, in full)", mode, best)
		}
	}
	// Both channels: each counts its weight.
	resp, err := e.Search(context.Background(), query.Request{Text: "billing database migrate", Now: now0, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.Explain.RRF > 0.5+0.15+1e-9 {
			t.Errorf("hybrid: %s relevance %v is above the weights' sum", r.ChunkID, r.Explain.RRF)
		}
	}
}
