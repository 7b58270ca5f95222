package summary

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// dump is every bucket's records except meta (which holds the checkpoint),
// as "bucket/key=value" lines.
func dump(t testing.TB, x *Index) []string {
	t.Helper()
	var out []string
	err := x.db.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if bytes.Equal(name, bucketMeta) {
				continue
			}
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				out = append(out, fmt.Sprintf("%s/%x=%x", name, k, v))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// randomOps is a random history over a few sessions and documents: turns
// appended (mostly at the end, some earlier), chunks replaced, documents
// chunked, tombstones by id, session, range and both, and edits that
// re-chunk an item. live is the set of chunks it leaves.
func randomOps(r *rand.Rand, n int) (bodies []log.Body, live map[string]*log.Store) {
	live = map[string]*log.Store{}
	now := projtest.BaseTime
	sessions := []string{"S0", "S1", "S2", "S3"}
	var ids []string
	next := 0
	newStore := func() *log.Store {
		next++
		now += int64(1 + r.Intn(1000))
		st := &log.Store{ChunkID: fmt.Sprintf("c%04d", next), Kind: log.KindConversation,
			Session: sessions[r.Intn(len(sessions))], Role: "user", Time: now,
			Content: projtest.Text(r, 3+r.Intn(60))}
		if next%3 == 0 { // both stored key forms (projections.IDKey)
			st.ChunkID = fmt.Sprintf("%032x", next)
		}
		switch p := r.Intn(20); {
		case p == 0: // an earlier turn: lands inside the session
			st.Time = projtest.BaseTime + r.Int63n(now-projtest.BaseTime+1)
		case p == 1: // a document part
			st.Kind = log.KindDocument
			st.ChunkParent = fmt.Sprintf("doc%d", r.Intn(3))
			st.ChunkIndex = r.Intn(40)
		case p == 2: // no session
			st.Session = ""
			st.Kind = log.KindKnowledge
		case p == 3: // no content words
			st.Content = "- ... ?"
		}
		return st
	}
	put := func(st *log.Store) {
		if _, ok := live[st.ChunkID]; !ok {
			ids = append(ids, st.ChunkID)
		}
		live[st.ChunkID] = st
		bodies = append(bodies, st)
	}
	pickLive := func() string {
		if len(live) == 0 {
			return "none"
		}
		for {
			if id := ids[r.Intn(len(ids))]; live[id] != nil {
				return id
			}
		}
	}
	tomb := func(tb *log.Tombstone) {
		for id, st := range live {
			if projections.TombstoneMatches(tb, id, st.Session, st.Time) {
				delete(live, id)
			}
		}
		bodies = append(bodies, tb)
	}
	for len(bodies) < n {
		switch p := r.Intn(100); {
		case p < 80:
			put(newStore())
		case p < 85: // replace a live chunk's content, keeping its place
			id := pickLive()
			if live[id] == nil {
				continue
			}
			old := *live[id]
			old.Content = projtest.Text(r, 5+r.Intn(30))
			put(&old)
		case p < 90:
			tomb(&log.Tombstone{Chunks: []string{pickLive()}})
		case p < 92:
			from := projtest.BaseTime + r.Int63n(now-projtest.BaseTime+1)
			tomb(&log.Tombstone{From: from, To: from + int64(r.Intn(5000))})
		case p < 93:
			from := projtest.BaseTime + r.Int63n(now-projtest.BaseTime+1)
			tomb(&log.Tombstone{Session: sessions[r.Intn(len(sessions))], From: from, To: from + int64(r.Intn(20000))})
		case p < 94:
			tomb(&log.Tombstone{Session: sessions[r.Intn(len(sessions))]})
		default: // edit: a new version of one chunk, removing another
			target := pickLive()
			if target == "none" {
				continue
			}
			st := *live[target]
			st.Content = projtest.Text(r, 5+r.Intn(30))
			ed := &log.Edit{Target: target, Store: st}
			if other := pickLive(); other != target {
				ed.Removes = []string{other}
				delete(live, other)
			}
			live[target] = &st
			bodies = append(bodies, ed)
		}
	}
	return bodies, live
}

// TestIncrementalIsBitForBitRebuild commits after every event of random
// histories and compares every stored record (chunks, indexes, blocks, term
// summaries) with a build from only the events of the surviving chunks,
// applied in shuffled order and committed once.
func TestIncrementalIsBitForBitRebuild(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			bodies, live := randomOps(r, 300)
			incDir := t.TempDir()
			inc := openT(t, incDir, Options{})
			applyAll(t, inc, chain(t, bodies...), 1)

			// The rebuild replays, from the same log, the events that
			// put the surviving chunks in place (so chunk records name
			// the same seqs), in shuffled order.
			lg := logOf(incDir)
			lastEv := map[string]*log.Event{}
			for seq := uint64(1); seq <= lg.last; seq++ {
				ev, err := lg.EventAt(seq)
				if err != nil {
					t.Fatal(err)
				}
				if st := ev.Chunk(); st != nil {
					lastEv[st.ChunkID] = ev
				}
			}
			ids := make([]string, 0, len(live))
			for id := range live {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			full, err := OpenOptions(t.TempDir(), lg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer full.Close()
			for _, id := range ids {
				ev := lastEv[id]
				if ev == nil || ev.Chunk().Content != live[id].Content {
					t.Fatalf("live chunk %q: its last event in the log is %v", id, ev)
				}
				if err := full.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := full.Commit(projections.Checkpoint{Seq: lg.last}); err != nil {
				t.Fatal(err)
			}

			got, want := dump(t, inc), dump(t, full)
			if len(want) == 0 {
				t.Fatal("nothing stored")
			}
			for i := 0; i < max(len(got), len(want)); i++ {
				if i >= len(got) || i >= len(want) || got[i] != want[i] {
					t.Fatalf("seed %d: record %d differs (%d vs %d records):\nincremental %.200s\nfull        %.200s",
						seed, i, len(got), len(want), at(got, i), at(want, i))
				}
			}
			if digest(t, inc) != digest(t, full) {
				t.Fatal("digest differs")
			}
		})
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

// TestSingleBlockIsTheWholeGroupSummary checks that a group of one block
// is summarised exactly as summarize does over all its sentences (the
// block merge only narrows the sentences that compete).
func TestSingleBlockIsTheWholeGroupSummary(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	var bodies []log.Body
	var sents []sentence
	for i := 0; len(bodies) < 6; i++ {
		id := fmt.Sprintf("s%03d", i)
		if startsBlock(id) && i > 0 {
			continue // keep one block
		}
		st := &log.Store{ChunkID: id, Kind: log.KindConversation, Session: "S", Time: projtest.BaseTime + int64(i),
			Content: projtest.Text(r, 80)}
		bodies = append(bodies, st)
		sents = append(sents, newChunk(st, 0).sents...)
	}
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, chain(t, bodies...), 2)
	got, _, err := x.Session("S")
	if err != nil {
		t.Fatal(err)
	}
	want := summarize(sents, DefaultMaxTokens, DefaultKeyTerms)
	if got.Text != want.text || fmt.Sprint(got.KeyTerms) != fmt.Sprint(want.keyTerms) {
		t.Fatalf("got %q %v\nwant %q %v", got.Text, got.KeyTerms, want.text, want.keyTerms)
	}
}

// TestAppendReadsOnlyTheLastBlock appends turns to a long session and
// checks how many chunks each commit re-reads: the last block, not the
// session.
func TestAppendReadsOnlyTheLastBlock(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	turn := func(i int) log.Body {
		return &log.Store{ChunkID: fmt.Sprintf("t%05d", i), Kind: log.KindConversation, Session: "long",
			Time: projtest.BaseTime + int64(i)*1000, Content: projtest.Text(r, 30)}
	}
	var bodies []log.Body
	for i := 0; i < 2000; i++ {
		bodies = append(bodies, turn(i))
	}
	evs := chain(t, bodies...)
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, evs, 0)
	worst := 0
	for i := 2000; i < 2050; i++ {
		x.reread = 0
		applyAll(t, x, chain(t, turn(i)), 0)
		worst = max(worst, x.reread)
	}
	// Blocks average blockSpread chunks; 12× that is far beyond any
	// block in these ids but far below the session.
	if worst > 12*blockSpread {
		t.Fatalf("an append re-read %d chunks of a 2000-chunk session", worst)
	}
	s, _, err := x.Session("long")
	if err != nil || s.Chunks != 2050 {
		t.Fatalf("session: %+v %v", s, err)
	}
}

func FuzzDecodeBlock(f *testing.F) {
	f.Add(encodeBlock(&block{chunks: 3, sents: 4, first: -5, last: 9, session: "s",
		cands: []cand{{local: 0, text: "Hello there."}, {local: 3, text: "Bye."}},
		terms: []blockTerm{{"hello", 2, 1}, {"bye", 1, 1}}}))
	f.Add(encodeBlock(&block{chunks: 1}))
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := decodeBlock(raw)
		if err != nil {
			return
		}
		b2, err := decodeBlock(encodeBlock(b))
		if err != nil || !reflect.DeepEqual(b, b2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, b, b2)
		}
	})
}

// TestFormat1FileIsRebuilt opens a summary.db left by format 1 and by
// format 2 (chunk records with their content; their version tags) and
// checks it is discarded: checkpoint zero, nothing kept.
func TestFormat1FileIsRebuilt(t *testing.T) {
	for _, tag := range []string{"v1/tokens=120/terms=8", "v2/tokens=120/terms=8", "v3/tokens=120/terms=8"} {
		dir := t.TempDir()
		x := openT(t, dir, Options{})
		applyAll(t, x, chain(t, &log.Store{ChunkID: "a", Kind: log.KindConversation, Session: "S",
			Time: projtest.BaseTime, Content: "Old format text."}), 0)
		err := x.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyVersion, []byte(tag))
		})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
		y := openT(t, dir, Options{})
		if cp, _ := y.Checkpoint(); cp.Seq != 0 {
			t.Fatalf("checkpoint %d after opening a %s file, want 0", cp.Seq, tag)
		}
		if n, err := y.Count(); err != nil || n != 0 {
			t.Fatalf("%d chunks kept from a %s file (%v)", n, tag, err)
		}
	}
}
