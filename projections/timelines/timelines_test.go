package timelines

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// testEvents stands in for the log the timelines read content from: the
// events applied to the timelines of one directory, by seq.
type testEvents struct {
	mu sync.Mutex
	m  map[uint64]*log.Event
}

func (e *testEvents) add(ev *log.Event) {
	e.mu.Lock()
	e.m[ev.Seq] = ev
	e.mu.Unlock()
}

func (e *testEvents) EventAt(seq uint64) (*log.Event, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev, ok := e.m[seq]
	if !ok {
		return nil, fmt.Errorf("event %d: %w", seq, log.ErrNotFound)
	}
	return ev, nil
}

var (
	eventsMu  sync.Mutex
	eventsDir = map[string]*testEvents{}
)

// eventsOf returns the events applied in dir (reopening a directory
// keeps them, as the log stays when projections are reopened).
func eventsOf(dir string) *testEvents {
	eventsMu.Lock()
	defer eventsMu.Unlock()
	e := eventsDir[dir]
	if e == nil {
		e = &testEvents{m: map[uint64]*log.Event{}}
		eventsDir[dir] = e
	}
	return e
}

func open(t testing.TB, dir string) *Timelines {
	t.Helper()
	tl, err := Open(dir, eventsOf(dir))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return tl
}

// apply records ev as the log would hold it, then applies it.
func apply(tl *Timelines, ev *log.Event) error {
	tl.events.(*testEvents).add(ev)
	return tl.Apply(ev)
}

// recording is the timelines as the conformance suite drives them: every
// applied event is recorded for content reads.
type recording struct{ *Timelines }

func (r recording) Apply(ev *log.Event) error { return apply(r.Timelines, ev) }

func TestConformance(t *testing.T) {
	projtest.Run(t, func(t *testing.T, dir string) projections.Projection { return recording{open(t, dir)} })
}

func applyCommit(t testing.TB, tl *Timelines, evs []*log.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := apply(tl, ev); err != nil {
			t.Fatalf("apply %d: %v", ev.Seq, err)
		}
	}
	last := evs[len(evs)-1]
	if err := tl.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func chain(t testing.TB, bodies ...log.Body) []*log.Event {
	t.Helper()
	evs, err := projtest.Chain(bodies...)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func conv(id, session, role string, tm int64, content string) *log.Store {
	return &log.Store{ChunkID: id, Kind: log.KindConversation, Session: session, Role: role, Time: tm, Content: content}
}

func TestSessionsAndOrder(t *testing.T) {
	long := strings.Repeat("word ", 40) + "end. Second sentence."
	evs := chain(t,
		conv("a2", "A", "assistant", 2000, "Sure, here it is."),
		conv("a1", "A", "user", 1000, "Plan the trip to Lisbon. Then book it."),
		&log.Store{ChunkID: "t1", Kind: log.KindToolCall, Session: "A", Role: "tool", Time: 1500, Content: "search lisbon", Meta: map[string]string{"tool": "search"}},
		&log.Store{ChunkID: "d#1", Kind: log.KindDocument, Session: "A", Time: 500, Content: "Part two.", ChunkParent: "d", ChunkIndex: 1},
		&log.Store{ChunkID: "d#0", Kind: log.KindDocument, Session: "A", Time: 500, Content: "Part one.", ChunkParent: "d"},
		conv("b1", "B", "assistant", 9000, long),
		conv("c1", "C", "user", 9000, "Tie on time."),
		&log.Store{ChunkID: "k1", Kind: log.KindKnowledge, Time: 100, Content: "Sessionless fact."},
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs)

	ss, err := tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	if got, want := strings.Join(ids, ","), "B,C,A"; got != want {
		t.Fatalf("session order %s, want %s", got, want)
	}
	info, chunks, err := tl.Session("A")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range chunks {
		order = append(order, c.ID)
	}
	// time 500 twice: d#1 (seq 4) before d#0 (seq 5).
	if got, want := strings.Join(order, ","), "d#1,d#0,a1,t1,a2"; got != want {
		t.Fatalf("chunk order %s, want %s", got, want)
	}
	if info.First != 500 || info.Last != 2000 || info.Chunks != 5 || info.Documents != 1 {
		t.Fatalf("info = %+v", info)
	}
	if info.Kinds["conversation"] != 2 || info.Kinds["tool_call"] != 1 || info.Kinds["document"] != 2 || info.Roles["user"] != 1 || info.Roles["tool"] != 1 {
		t.Fatalf("counts = %v %v", info.Kinds, info.Roles)
	}
	if info.Title != "Plan the trip to Lisbon." {
		t.Fatalf("title %q", info.Title)
	}
	b, _, err := tl.Session("B")
	if err != nil {
		t.Fatal(err)
	}
	if r := []rune(b.Title); len(r) > TitleMax+1 || !strings.HasSuffix(b.Title, "…") || !strings.HasPrefix(long, strings.TrimSuffix(b.Title, "…")) {
		t.Fatalf("fallback title %q", b.Title)
	}
	if _, _, err := tl.Session("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing session: %v, want ErrNotFound", err)
	}

	c, ok, err := tl.Chunk("t1")
	if err != nil || !ok {
		t.Fatalf("chunk t1: %v %v", ok, err)
	}
	want := Chunk{ID: "t1", Seq: 3, EventID: evs[2].ID.String(), AppendTime: evs[2].Time, Time: 1500, Kind: log.KindToolCall, Session: "A", Role: "tool", Content: "search lisbon", Meta: map[string]string{"tool": "search"}}
	want.Sum = want.ContentSum()
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("chunk = %+v\nwant %+v", c, want)
	}
	doc, err := tl.Document("d")
	if err != nil || len(doc) != 2 || doc[0].ID != "d#0" || doc[1].ID != "d#1" {
		t.Fatalf("document = %+v, %v", doc, err)
	}
	docs, err := tl.Documents("A")
	if err != nil || len(docs) != 1 || docs[0].Parent != "d" || strings.Join(docs[0].Parts, ",") != "d#0,d#1" || docs[0].Time != 500 {
		t.Fatalf("documents = %+v, %v", docs, err)
	}
	turns, err := tl.RecentTurns("A", 5)
	if err != nil || len(turns) != 2 || turns[0].ID != "a1" || turns[1].ID != "a2" {
		t.Fatalf("recent turns = %+v, %v", turns, err)
	}
	turns, err = tl.RecentTurns("A", 1)
	if err != nil || len(turns) != 1 || turns[0].ID != "a2" {
		t.Fatalf("recent 1 turn = %+v, %v", turns, err)
	}
	if n, err := tl.Count(); err != nil || n != 8 {
		t.Fatalf("count = %d, %v", n, err)
	}
}

func TestTombstoneRecordsAndSessionUpdate(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "First question here."),
		conv("a2", "A", "user", 2000, "Second question here."),
		conv("b1", "B", "user", 1000, "Other session."),
		&log.Tombstone{Chunks: []string{"a1", "zz"}, Reason: "pii"},
		&log.Tombstone{Session: "B"},
		&log.Tombstone{From: 0, To: 10, Reason: "nothing there"},
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	// Apply without commit: reads must see pending changes.
	for _, ev := range evs {
		if err := apply(tl, ev); err != nil {
			t.Fatal(err)
		}
	}
	info, chunks, err := tl.Session("A")
	if err != nil || len(chunks) != 1 || info.Title != "Second question here." || info.First != 2000 {
		t.Fatalf("session A after tombstone = %+v %d, %v", info, len(chunks), err)
	}
	if _, _, err := tl.Session("B"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("session B after session tombstone: %v", err)
	}
	recs, err := tl.Tombstones()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d:%d:%s", r.Seq, r.Removed, r.Reason))
	}
	if s := strings.Join(got, " "); s != "4:1:pii 5:1: 6:0:nothing there" {
		t.Fatalf("tombstone records %s", s)
	}
	if ids, err := tl.Removed(5); err != nil || strings.Join(ids, ",") != "b1" {
		t.Fatalf("removed by seq 5 = %v, %v", ids, err)
	}
	if cp, _ := tl.Checkpoint(); cp.Seq != 0 {
		t.Fatalf("reads moved the checkpoint to %d", cp.Seq)
	}
}

func TestVersionAndReopen(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir)
	if v, err := tl.StoredVersion(); err != nil || v != Version {
		t.Fatalf("stored version %d, %v", v, err)
	}
	if tl.Size() <= 0 {
		t.Fatalf("size %d", tl.Size())
	}
	tl.Close()
	if _, err := tl.Digest(); !errors.Is(err, ErrClosed) {
		t.Fatalf("digest after close: %v", err)
	}
	if err := tl.Apply(&log.Event{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("apply after close: %v", err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the lock timeout")
	}
	dir := t.TempDir()
	tl := open(t, dir)
	defer tl.Close()
	if _, err := Open(dir, nil); err == nil {
		t.Fatal("second open succeeded")
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Hello world. More.", "Hello world."},
		{"  spaced\n\tout   words  ", "spaced out words"},
		{strings.Repeat("abc ", 30), strings.TrimSpace(strings.Repeat("abc ", 20)) + "…"},
		{strings.Repeat("x", 200), strings.Repeat("x", 80) + "…"},
	} {
		if got := Title(tc.in); got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIndexValueRoundTrip(t *testing.T) {
	for _, iv := range []indexValue{
		{kind: log.KindConversation, role: "user", id: "x"},
		{kind: log.KindDocument, chunkParent: "doc\x00with nul", id: "doc#1"},
		{kind: 9, role: strings.Repeat("r", 300), chunkParent: "p", id: "id"},
		{kind: log.KindConversation, role: "assistant", id: "0123456789abcdef0123456789abcdef"},
		{kind: log.KindConversation, role: "tool", id: "t"},
	} {
		got, err := decodeIndexValue(iv.encode())
		if err != nil || got != iv {
			t.Errorf("round trip %+v = %+v, %v", iv, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {1, 5, 'a'}, {1, 0, 0}, {1, 0xff},
		append([]byte{1, 0, 4}, "user\x00\x01a"...), // a coded role spelled out
		{1, 5, 0, 1, 'a'}, // role code past indexRoles
	} {
		if _, err := decodeIndexValue(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}
}

func FuzzDecodeIndexValue(f *testing.F) {
	f.Add(indexValue{kind: 1, role: "user", id: "a"}.encode())
	f.Add(indexValue{kind: 2, chunkParent: "d", id: "d#0"}.encode())
	f.Add(indexValue{kind: 1, role: "assistant", id: "0123456789abcdef0123456789abcdef"}.encode())
	f.Add([]byte{1, 0xff, 0xff, 0xff})
	f.Add(append([]byte{1, 0, 4}, "user\x00\x01a"...)) // a known role spelled out: refused
	f.Fuzz(func(t *testing.T, b []byte) {
		iv, err := decodeIndexValue(b)
		if err != nil {
			return
		}
		if again, err := decodeIndexValue(iv.encode()); err != nil || again != iv {
			t.Fatalf("re-decode %+v = %+v, %v", iv, again, err)
		}
	})
}

// TestRebuildMatchesModel checks the projection against the reference
// model on a larger generated stream: live ids and per-session counts.
func TestRebuildMatchesModel(t *testing.T) {
	evs := projtest.Events(7, 3000)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs)
	live := projtest.LiveIDs(evs)
	perSession := map[string]int{}
	for _, id := range live {
		c, ok, err := tl.Chunk(id)
		if err != nil || !ok {
			t.Fatalf("live chunk %q: %v %v", id, ok, err)
		}
		if c.Session != "" {
			perSession[c.Session]++
		}
	}
	ss, err := tl.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != len(perSession) {
		t.Fatalf("%d sessions, model has %d", len(ss), len(perSession))
	}
	if !sort.SliceIsSorted(ss, func(i, j int) bool { return ss[i].Last > ss[j].Last || ss[i].Last == ss[j].Last && ss[i].ID < ss[j].ID }) {
		t.Fatal("sessions not sorted by last time desc")
	}
	for _, s := range ss {
		if s.Chunks != perSession[s.ID] {
			t.Errorf("session %s: %d chunks, model %d", s.ID, s.Chunks, perSession[s.ID])
		}
		_, chunks, err := tl.Session(s.ID)
		if err != nil || len(chunks) != s.Chunks {
			t.Fatalf("session %s: %d chunks listed, %v", s.ID, len(chunks), err)
		}
		for i := 1; i < len(chunks); i++ {
			a, b := chunks[i-1], chunks[i]
			if a.Time > b.Time || a.Time == b.Time && a.Seq > b.Seq {
				t.Fatalf("session %s out of order at %d", s.ID, i)
			}
		}
	}
}

func BenchmarkTimelinesRebuild(b *testing.B) {
	sizes := []int{10_000}
	if os.Getenv("UCL_BENCH_100K") == "1" {
		sizes = append(sizes, 100_000)
	}
	for _, n := range sizes {
		evs := projtest.StoreEvents(1, n)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			src := projtest.NewMemSource(evs)
			for i := 0; i < b.N; i++ {
				tl := open(b, b.TempDir())
				pr, err := projections.NewProjector(src, []projections.Projection{tl}, projections.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := pr.CatchUp(b.Context(), nil); err != nil {
					b.Fatal(err)
				}
				pr.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// TestConcurrentReadsDuringCatchUp runs readers against a catch-up (run
// with -race).
func TestConcurrentReadsDuringCatchUp(t *testing.T) {
	evs := projtest.Events(12, 1500)
	src := projtest.NewMemSource(evs)
	tl, err := Open(t.TempDir(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	pr, err := projections.NewProjector(src, []projections.Projection{tl}, projections.Options{CommitEvery: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	done := make(chan error, 1)
	go func() { done <- pr.CatchUp(t.Context(), nil) }()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			if _, err := tl.Sessions(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := tl.Chunk("c-12-1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := projtest.LiveIDs(evs)
	if n, err := tl.Count(); err != nil || n != len(want) {
		t.Fatalf("count %d, %v; want %d", n, err, len(want))
	}
}

// TestOldVersionIsRebuilt stores a state marked with another format version:
// the projector resets and rebuilds it.
func TestOldVersionIsRebuilt(t *testing.T) {
	evs := projtest.Events(13, 300)
	src := projtest.NewMemSource(evs)
	dir := t.TempDir()
	tl := open(t, dir)
	applyCommit(t, tl, evs)
	want, _ := tl.Digest()
	err := tl.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bChunks).Put([]byte("stale"), []byte(`{"id":"stale"}`)); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(kVersion, []byte{Version + 1, 0, 0, 0})
	})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := projections.NewProjector(src, []projections.Projection{tl}, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := tl.StoredVersion(); err != nil || v != Version {
		t.Fatalf("stored version %d, %v", v, err)
	}
	if got, _ := tl.Digest(); got != want {
		t.Fatalf("digest after version rebuild %x, want %x", got, want)
	}
}

// TestVerifySaysOKWithTurnMissingFromOrder: the digest covered sessions,
// chunks and tombstones but not the indexes reads go through, so a turn
// lost from a session's order index (recent turns and context then miss
// it) left `project verify` saying ok.
func TestVerifySaysOKWithTurnMissingFromOrder(t *testing.T) {
	evs := chain(t, conv("a1", "A", "user", 1000, "Hello there."), conv("a2", "A", "assistant", 2000, "Hi."), conv("a3", "A", "user", 3000, "Bye."))
	tl := open(t, t.TempDir())
	applyCommit(t, tl, evs)
	want, err := tl.Digest()
	if err != nil {
		t.Fatal(err)
	}
	err = tl.db.Update(func(tx *bolt.Tx) error {
		k, _ := sessionCursor(tx, "A").Last()
		if k == nil {
			return errors.New("no order entry")
		}
		return tx.Bucket(bOrder).Delete(orderKey("A", k))
	})
	if err != nil {
		t.Fatal(err)
	}
	turns, err := tl.RecentTurns("A", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 {
		t.Fatalf("fixture: %d turns", len(turns))
	}
	got, err := tl.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got == want {
		t.Fatal("digest unchanged with a turn missing from the session order index")
	}
}
