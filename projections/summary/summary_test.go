package summary

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func openT(t testing.TB, dir string, opts Options) *Index {
	t.Helper()
	x, err := OpenOptions(dir, logOf(dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// applyAll applies evs, committing every `every` events (0: at the end only).
func applyAll(t testing.TB, p projections.Projection, evs []*log.Event, every int) {
	t.Helper()
	if x, ok := p.(*Index); ok {
		p = logged{x}
	}
	for i, ev := range evs {
		if err := p.Apply(ev); err != nil {
			t.Fatalf("apply %d: %v", ev.Seq, err)
		}
		if every > 0 && (i+1)%every == 0 {
			if err := p.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(evs); n > 0 {
		if err := p.Commit(projections.Checkpoint{Seq: evs[n-1].Seq, Hash: evs[n-1].Hash}); err != nil {
			t.Fatal(err)
		}
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

func digest(t testing.TB, x *Index) [32]byte {
	t.Helper()
	d, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func all(t testing.TB, x *Index) []Summary {
	t.Helper()
	s, err := x.All()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	projtest.Run(t, func(t *testing.T, dir string) projections.Projection {
		x, err := Open(dir, logOf(dir))
		if err != nil {
			t.Fatal(err)
		}
		return logged{x}
	})
}

func TestIncrementalEqualsFullRebuild(t *testing.T) {
	evs := projtest.Events(11, 1500)
	ref := openT(t, t.TempDir(), Options{})
	applyAll(t, ref, evs, 0)
	want := all(t, ref)
	if len(want) < 5 {
		t.Fatalf("only %d summaries", len(want))
	}
	for _, every := range []int{1, 7, 100} {
		t.Run(fmt.Sprintf("commit every %d", every), func(t *testing.T) {
			x := openT(t, t.TempDir(), Options{})
			applyAll(t, x, evs, every)
			if got := all(t, x); !reflect.DeepEqual(got, want) {
				t.Fatalf("summaries differ from the one-pass build (%d vs %d)", len(got), len(want))
			}
			if digest(t, x) != digest(t, ref) {
				t.Fatal("digest differs")
			}
		})
	}
	// Rebuilding after Reset gives the same summaries again.
	if err := ref.Reset(); err != nil {
		t.Fatal(err)
	}
	applyAll(t, ref, evs, 250)
	if got := all(t, ref); !reflect.DeepEqual(got, want) {
		t.Fatal("summaries differ after reset and rebuild")
	}
}

// TestSummaryIsFunctionOfLiveSet checks that the same live chunks stored in
// another order and with other intermediate states give the same summary.
func TestSummaryIsFunctionOfLiveSet(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var stores []log.Body
	for i := 0; i < 40; i++ {
		stores = append(stores, &log.Store{ChunkID: fmt.Sprintf("c%02d", i), Kind: log.KindConversation, Session: "S",
			Role: "user", Content: projtest.Text(r, 40), Time: projtest.BaseTime + int64(i)*1000})
	}
	a := openT(t, t.TempDir(), Options{})
	applyAll(t, a, chain(t, stores...), 0)

	// Reverse order, with junk chunks that are later removed and one chunk
	// first stored in another session.
	var b []log.Body
	b = append(b, &log.Store{ChunkID: "c05", Kind: log.KindConversation, Session: "other", Content: "Temporary text here.", Time: 5})
	b = append(b, &log.Store{ChunkID: "junk", Kind: log.KindConversation, Session: "S", Content: "Junk junk junk.", Time: projtest.BaseTime})
	for i := len(stores) - 1; i >= 0; i-- {
		b = append(b, stores[i])
	}
	b = append(b, &log.Tombstone{Chunks: []string{"junk"}})
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, chain(t, b...), 3)
	got, ok, err := x.Session("S")
	want, _, _ := a.Session("S")
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("session summary differs:\n%+v\n%+v (%v %v)", got, want, ok, err)
	}
	if _, ok, _ := x.Session("other"); ok {
		t.Fatal("session other still has a summary after its only chunk moved")
	}
}

func TestSessionAndDocumentSummaries(t *testing.T) {
	const t0 = projtest.BaseTime
	evs := chain(t,
		&log.Store{ChunkID: "u1", Kind: log.KindConversation, Session: "S", Role: "user", Time: t0 + 2000,
			Content: "The arweave upload failed again. Weather is nice today. Can you check the arweave gateway logs?"},
		&log.Store{ChunkID: "u0", Kind: log.KindConversation, Session: "S", Role: "assistant", Time: t0 + 1000,
			Content: "Hello! How can I help?"},
		&log.Store{ChunkID: "a1", Kind: log.KindConversation, Session: "S", Role: "assistant", Time: t0 + 3000,
			Content: "The arweave gateway returned 429 for every upload. I will retry the upload with backoff."},
		&log.Store{ChunkID: "d-1", Kind: log.KindDocument, Session: "S", ChunkParent: "manual", ChunkIndex: 1, Time: t0 + 500,
			Content: "Chapter two covers the wallet. The wallet holds keys."},
		&log.Store{ChunkID: "d-0", Kind: log.KindDocument, Session: "S", ChunkParent: "manual", ChunkIndex: 0, Time: t0 + 900,
			Content: "Chapter one covers installation. Install the binary."},
		&log.Store{ChunkID: "solo", Kind: log.KindDocument, Session: "T", Time: t0,
			Content: "A standalone note about bread recipes."},
		&log.Store{ChunkID: "k", Kind: log.KindKnowledge, Time: t0, Content: "Knowledge without a session."},
	)
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, evs, 0)

	s, ok, err := x.Session("S")
	if err != nil || !ok {
		t.Fatalf("session S: %v %v", ok, err)
	}
	if s.Kind != KindSession || s.Chunks != 5 || s.First != t0+500 || s.Last != t0+3000 {
		t.Fatalf("session S: %+v", s)
	}
	if len(s.KeyTerms) == 0 || s.KeyTerms[0] != "arweave" && s.KeyTerms[0] != "upload" {
		t.Fatalf("key terms %v, want arweave or upload first", s.KeyTerms)
	}
	if s.Tokens != textutil.EstimateTokens(s.Text) || s.Tokens > DefaultMaxTokens || s.Text == "" {
		t.Fatalf("text %q tokens %d", s.Text, s.Tokens)
	}
	d, ok, err := x.Document("manual")
	if err != nil || !ok || d.Kind != KindDocument || d.Chunks != 2 || d.Session != "S" {
		t.Fatalf("document manual: %+v %v %v", d, ok, err)
	}
	// Document order is by chunk index: chapter one first.
	if !strings.HasPrefix(d.Text, "Chapter one") {
		t.Fatalf("document text %q does not start with chapter one", d.Text)
	}
	if d, ok, _ := x.Document("solo"); !ok || d.Chunks != 1 || d.Session != "T" {
		t.Fatalf("standalone document: %+v %v", d, ok)
	}
	if _, ok, _ := x.Document("u1"); ok {
		t.Fatal("a conversation chunk has a document summary")
	}
	sums := all(t, x)
	var keys []string
	for _, s := range sums {
		keys = append(keys, s.Kind+":"+s.ID)
	}
	if want := []string{"session:S", "session:T", "document:manual", "document:solo"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("All() = %v, want %v", keys, want)
	}
}

func TestTombstonesRecompute(t *testing.T) {
	const t0 = projtest.BaseTime
	base := []log.Body{
		&log.Store{ChunkID: "a", Kind: log.KindConversation, Session: "S", Time: t0, Content: "Kernel panic at boot."},
		&log.Store{ChunkID: "b", Kind: log.KindConversation, Session: "S", Time: t0 + 10, Content: "Garden tomatoes are ripe."},
		&log.Store{ChunkID: "c", Kind: log.KindDocument, Session: "S", ChunkParent: "doc", Time: t0 + 20, Content: "Doc part about kernels."},
		&log.Store{ChunkID: "d", Kind: log.KindDocument, Session: "S", ChunkParent: "doc", ChunkIndex: 1, Time: t0 + 30, Content: "Doc part about gardens."},
	}
	tests := []struct {
		name     string
		tomb     *log.Tombstone
		sChunks  int // 0: session summary gone
		docChunk int // 0: document summary gone
	}{
		{"by id", &log.Tombstone{Chunks: []string{"b", "d"}}, 2, 1},
		{"by session", &log.Tombstone{Session: "S"}, 0, 0},
		{"by range", &log.Tombstone{From: t0 + 10, To: t0 + 21}, 2, 1},
		{"session and range", &log.Tombstone{Session: "S", From: t0 + 25, To: t0 + 100}, 3, 1},
		{"nothing", &log.Tombstone{Session: "nope"}, 4, 2},
	}
	for _, tc := range tests {
		for _, split := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/committed-first=%v", tc.name, split), func(t *testing.T) {
				x := openT(t, t.TempDir(), Options{})
				evs := chain(t, append(append([]log.Body{}, base...), tc.tomb)...)
				if split {
					applyAll(t, x, evs[:len(base)], 0)
					applyAll(t, x, evs[len(base):], 0)
				} else {
					applyAll(t, x, evs, 0)
				}
				s, ok, _ := x.Session("S")
				if ok != (tc.sChunks > 0) || s.Chunks != tc.sChunks {
					t.Fatalf("session: %+v ok=%v, want %d chunks", s, ok, tc.sChunks)
				}
				d, ok, _ := x.Document("doc")
				if ok != (tc.docChunk > 0) || d.Chunks != tc.docChunk {
					t.Fatalf("document: %+v ok=%v, want %d chunks", d, ok, tc.docChunk)
				}
				// Same as a build from only the surviving chunks.
				var live []log.Body
				for _, b := range base {
					st := b.(*log.Store)
					if !projections.TombstoneMatches(tc.tomb, st.ChunkID, st.Session, st.Time) {
						live = append(live, b)
					}
				}
				y := openT(t, t.TempDir(), Options{})
				if len(live) > 0 {
					applyAll(t, y, chain(t, live...), 0)
				}
				if !reflect.DeepEqual(all(t, x), all(t, y)) {
					t.Fatalf("summaries after tombstone differ from a build of the survivors")
				}
			})
		}
	}
}

func TestSearch(t *testing.T) {
	const t0 = projtest.BaseTime
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, chain(t,
		&log.Store{ChunkID: "1", Kind: log.KindConversation, Session: "travel", Time: t0, Content: "We booked the flight to Lisbon. The hotel is near the river. The flight leaves early."},
		&log.Store{ChunkID: "2", Kind: log.KindConversation, Session: "cooking", Time: t0, Content: "The bread recipe needs more water. Bake the bread for forty minutes."},
		&log.Store{ChunkID: "3", Kind: log.KindConversation, Session: "ops", Time: t0, Content: "The server disk is full. Restore the backup to a new disk."},
		&log.Store{ChunkID: "4", Kind: log.KindConversation, Session: "ops2", Time: t0, Content: "The server disk is full. Restore the backup to a new disk."},
	), 0)
	ctx := context.Background()
	hits, err := x.Search(ctx, "when does my flight leave?", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Session != "travel" || hits[0].Score <= 0 {
		t.Fatalf("flight: %+v", hits)
	}
	hits, _ = x.Search(ctx, "bread", 3)
	if len(hits) != 1 || hits[0].Session != "cooking" {
		t.Fatalf("bread: %+v", hits)
	}
	// Equal summaries tie; ties go by session id.
	hits, _ = x.Search(ctx, "disk backup", 5)
	if len(hits) != 2 || hits[0].Session != "ops" || hits[1].Session != "ops2" || hits[0].Score != hits[1].Score {
		t.Fatalf("tie: %+v", hits)
	}
	if hits, _ := x.Search(ctx, "the of and", 5); len(hits) != 0 {
		t.Fatalf("stopwords matched %+v", hits)
	}
	if _, err := x.Search(ctx, "disk", 0); !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("k=0: %v", err)
	}
	// The in-memory index is rebuilt on open and follows tombstones.
	dir := t.TempDir()
	y := openT(t, dir, Options{})
	evs := chain(t,
		&log.Store{ChunkID: "1", Kind: log.KindConversation, Session: "travel", Time: t0, Content: "The flight to Lisbon."},
		&log.Store{ChunkID: "2", Kind: log.KindConversation, Session: "trip", Time: t0, Content: "Another flight to Porto."},
		&log.Tombstone{Session: "trip"},
	)
	applyAll(t, y, evs, 0)
	y.Close()
	y = openT(t, dir, Options{})
	hits, _ = y.Search(ctx, "flight", 5)
	if len(hits) != 1 || hits[0].Session != "travel" {
		t.Fatalf("after reopen: %+v", hits)
	}
}

func TestTrim(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	long := projtest.Text(r, 400)
	for _, budget := range []int{0, 1, 3, 10, 40, 120, 1000} {
		got := Trim(long, budget)
		if n := textutil.EstimateTokens(got); n > budget {
			t.Fatalf("budget %d: %d tokens", budget, n)
		}
		if budget >= 10 && got == "" {
			t.Fatalf("budget %d: empty", budget)
		}
		// Kept sentences appear in the original order.
		pos := 0
		for _, s := range textutil.Sentences(got) {
			s = strings.TrimSuffix(s, "…")
			i := strings.Index(long[pos:], s)
			if i < 0 {
				t.Fatalf("budget %d: sentence %q not found in order", budget, s)
			}
			pos += i + len(s)
		}
		if Trim(long, budget) != got {
			t.Fatal("Trim is not deterministic")
		}
	}
	short := "Just one line."
	if Trim(short, 100) != short {
		t.Fatal("text that fits must be unchanged")
	}
	if got := Trim("Supercalifragilistic expialidocious words everywhere and more words here.", 8); got == "" || !strings.HasSuffix(got, "…") {
		t.Fatalf("cut sentence %q", got)
	}
	// The key sentence wins over filler.
	text := "Hello there. The database migration failed on the orders table. The database migration must be rerun. Thanks."
	if got := Trim(text, 14); !strings.Contains(got, "database migration") {
		t.Fatalf("key sentence dropped: %q", got)
	}
}

func TestEstimateMatchesTextutil(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	sents := split([]string{projtest.Text(r, 300), "Ünïcode wörds — here.\n- a list item", "x"})
	for trial := 0; trial < 200; trial++ {
		chosen := make([]bool, len(sents))
		b, w, k := 0, 0, 0
		for i := range sents {
			if r.Intn(3) == 0 {
				chosen[i] = true
				b += len(sents[i].text)
				if k > 0 {
					b++
				}
				w += countWords(sents[i].text)
				k++
			}
		}
		if got, want := estimate(b, w), textutil.EstimateTokens(join(sents, chosen)); got != want {
			t.Fatalf("estimate %d, textutil %d", got, want)
		}
	}
}

func TestBudgetOptionsAndReopen(t *testing.T) {
	evs := projtest.Events(12, 300)
	dir := t.TempDir()
	x, err := OpenOptions(dir, logOf(dir), Options{MaxTokens: 30, KeyTerms: 3})
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, x, evs, 0)
	for _, s := range all(t, x) {
		if s.Tokens > 30 || len(s.KeyTerms) > 3 || textutil.EstimateTokens(s.Text) != s.Tokens {
			t.Fatalf("summary over bounds: %+v", s)
		}
	}
	d := digest(t, x)
	x.Close()
	// Same options: state kept. Other options: rebuilt from zero.
	x = openT(t, dir, Options{MaxTokens: 30, KeyTerms: 3})
	if digest(t, x) != d {
		t.Fatal("digest changed on reopen")
	}
	x.Close()
	y := openT(t, dir, Options{})
	if cp, _ := y.Checkpoint(); cp.Seq != 0 {
		t.Fatalf("checkpoint %d after an options change, want 0", cp.Seq)
	}
}

func FuzzDecodeChunk(f *testing.F) {
	f.Add(encodeChunk(newChunk(&log.Store{ChunkID: "id", Kind: log.KindDocument, ChunkIndex: 3, Time: -7, Session: "s", ChunkParent: "p", Content: "Hello there."}, 42)))
	f.Add(encodeChunk(newChunk(&log.Store{ChunkID: "id", Kind: log.KindConversation, Content: "  "}, 1<<40)))
	f.Add([]byte{})
	f.Add([]byte{1, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChunk("id", b)
		if err != nil {
			return
		}
		enc := encodeChunk(c)
		if !bytes.Equal(enc, b) {
			t.Fatalf("a record decodes but encodes differently: %x -> %x", b, enc)
		}
		c2, err := decodeChunk("id", enc)
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip %+v -> %+v (%v)", c, c2, err)
		}
	})
}

// TestChunkRecordRoundTrip checks a chunk record keeps every field but
// the content (format 3 reads it back from the log by seq).
func TestChunkRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for i := 0; i < 50; i++ {
		st := &log.Store{ChunkID: "x", Kind: log.KindDocument, ChunkIndex: i, Time: int64(i) - 20, Session: "s", ChunkParent: "p",
			Content: projtest.Text(r, 5+r.Intn(80)) + "\n\n1. a list\n- Ünïcode item"}
		c := newChunk(st, uint64(i)*1000+7)
		enc := encodeChunk(c)
		if strings.Contains(string(enc), st.Content[:20]) {
			t.Fatal("the chunk record holds its content")
		}
		got, err := decodeChunk("x", enc)
		if err != nil {
			t.Fatal(err)
		}
		want := *c
		want.sents = nil
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("round trip differs:\n%+v\n%+v", got, &want)
		}
		if tm, err := chunkTime("x", enc); err != nil || tm != c.time {
			t.Fatalf("chunkTime %d %v, want %d", tm, err, c.time)
		}
	}
}

// TestCommitReadsContentFromTheLog checks that rebuilding a block reads
// its committed chunks' text from the event reader: without one the
// Commit fails with ErrNoEvents, and a seq that does not hold the chunk
// is corruption, not a silently wrong summary.
func TestCommitReadsContentFromTheLog(t *testing.T) {
	turn := func(id string, i int) *log.Store {
		return &log.Store{ChunkID: id, Kind: log.KindConversation, Session: "S", Time: projtest.BaseTime + int64(i),
			Content: fmt.Sprintf("Sentence number %d about apples.", i)}
	}
	// Ids in one block, so the second commit re-reads the first chunk.
	var ids []string
	for i := 0; len(ids) < 2; i++ {
		if id := fmt.Sprintf("b%03d", i); !startsBlock(id) {
			ids = append(ids, id)
		}
	}
	dir := t.TempDir()
	x, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	evs := chain(t, turn(ids[0], 0), turn(ids[1], 1))
	if err := x.Apply(evs[0]); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(projections.Checkpoint{Seq: 1}); err != nil {
		t.Fatalf("a commit of pending chunks only needs no log: %v", err)
	}
	if err := x.Apply(evs[1]); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(projections.Checkpoint{Seq: 2}); !errors.Is(err, ErrNoEvents) {
		t.Fatalf("commit without an event reader: %v, want ErrNoEvents", err)
	}

	// A log whose seq 1 holds another chunk.
	wrong := &testLog{m: map[uint64]*log.Event{}}
	wrong.add(chain(t, turn("other", 0))[0])
	y := openT(t, t.TempDir(), Options{})
	y.events = wrong
	if err := y.Apply(evs[0]); err != nil {
		t.Fatal(err)
	}
	if err := y.Commit(projections.Checkpoint{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := y.Apply(evs[1]); err != nil {
		t.Fatal(err)
	}
	if err := y.Commit(projections.Checkpoint{Seq: 2}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("commit with a wrong log: %v, want ErrCorrupt", err)
	}
}

// TestHugeChunkSummaryBounded: a chunk of one 2 MB run of distinct words
// without a sentence end (a proxy-stored reply, say) is summarised from
// its first MaxAnalysedBytes, in bounded work (distinct words were found by
// a quadratic scan over the whole text: minutes for 16 MB), and its
// summary is the summary of that prefix.
func TestHugeChunkSummaryBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 2<<20; i++ {
		fmt.Fprintf(&b, "w%d ", i)
	}
	text := b.String()
	sents := split([]string{text})
	n := 0
	for _, s := range sents {
		n += len(s.text)
	}
	if n > MaxAnalysedBytes {
		t.Fatalf("analysed %d bytes of a %d-byte chunk, want at most %d", n, len(text), MaxAnalysedBytes)
	}
	got := summarize(sents, DefaultMaxTokens, DefaultKeyTerms)
	want := summarize(split([]string{text[:MaxAnalysedBytes]}), DefaultMaxTokens, DefaultKeyTerms)
	if got.text != want.text || got.text == "" {
		t.Fatalf("summary %q, want %q", got.text, want.text)
	}
	// A multi-byte rune at the cut is not split.
	s := strings.Repeat("a", MaxAnalysedBytes-1) + "é" + " tail"
	if p := bounded(s); len(p) != MaxAnalysedBytes-1 {
		t.Fatalf("cut at %d", len(p))
	}
}
