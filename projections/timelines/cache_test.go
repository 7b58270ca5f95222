package timelines

import (
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// The read cache answers exactly what reading the file answers: the same
// events are applied to two timelines, one without the cache, in random
// batches (committed, or left pending for the reads to flush), with
// stores, re-stores, edits and tombstones between the reads, and the
// same random reads of both must agree after every batch. The ids read
// come mostly from the latest events, so an entry read before a change of
// its chunk or its session is read again after it.
func TestReadCacheSameAsUncached(t *testing.T) {
	evs := projtest.Generate(projtest.Config{Seed: 11, N: 1500, Sessions: 5, Conversation: true})
	cached := open(t, t.TempDir())
	defer cached.Close()
	plain := open(t, t.TempDir())
	defer plain.Close()
	plain.cache.off = true
	r := rand.New(rand.NewSource(4))
	var ids []string
	seen := map[string]bool{}
	hits := 0
	for pos := 0; pos < len(evs); {
		n := min(1+r.Intn(30), len(evs)-pos)
		for _, ev := range evs[pos : pos+n] {
			for _, tl := range []*Timelines{cached, plain} {
				if err := apply(tl, ev); err != nil {
					t.Fatalf("apply %d: %v", ev.Seq, err)
				}
			}
			var add []string
			if ch := ev.Chunk(); ch != nil {
				add = append(add, ch.ChunkID)
			}
			if ts, ok := ev.Body.(*log.Tombstone); ok {
				add = append(add, ts.Chunks...)
			}
			for _, id := range add {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		pos += n
		if r.Intn(2) == 0 {
			last := evs[pos-1]
			for _, tl := range []*Timelines{cached, plain} {
				if err := tl.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(ids) == 0 {
			continue
		}
		for i := 0; i < 40; i++ {
			var id string
			if i%2 == 0 {
				id = ids[max(0, len(ids)-1-r.Intn(60))]
			} else {
				id = ids[r.Intn(len(ids))]
			}
			s, err := cached.snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cached.cache.chunk(s.gen, id); ok {
				hits++
			}
			want, wok, werr := plain.ChunkBare(id)
			got, gok, gerr := cached.ChunkBare(id)
			if werr != nil || gerr != nil {
				t.Fatalf("ChunkBare(%s): %v / %v", id, gerr, werr)
			}
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("after seq %d: ChunkBare(%s) cached %v %+v, read %v %+v", evs[pos-1].Seq, id, gok, got, wok, want)
			}
			if gok && i%4 == 1 {
				g, w := []*Chunk{&got}, []*Chunk{&want}
				if err := cached.FillContent(g); err != nil {
					t.Fatal(err)
				}
				if err := plain.FillContent(w); err != nil {
					t.Fatal(err)
				}
				if got.Content != want.Content {
					t.Fatalf("after seq %d: content of %s cached %q, read %q", evs[pos-1].Seq, id, got.Content, want.Content)
				}
			}
			before, after := r.Intn(3), r.Intn(3)
			wl, werr := plain.AroundBare(id, before, after)
			gl, gerr := cached.AroundBare(id, before, after)
			if werr != nil || gerr != nil {
				t.Fatalf("AroundBare(%s): %v / %v", id, gerr, werr)
			}
			if !reflect.DeepEqual(gl, wl) {
				t.Fatalf("after seq %d: AroundBare(%s, %d, %d) cached %v, read %v", evs[pos-1].Seq, id, before, after, chunkIDs(gl), chunkIDs(wl))
			}
			if i%5 == 0 {
				wl, werr := plain.Around(id, before, after)
				gl, gerr := cached.Around(id, before, after)
				if werr != nil || gerr != nil {
					t.Fatalf("Around(%s): %v / %v", id, gerr, werr)
				}
				if !reflect.DeepEqual(gl, wl) {
					t.Fatalf("after seq %d: Around(%s) cached %v, read %v", evs[pos-1].Seq, id, chunkIDs(gl), chunkIDs(wl))
				}
			}
		}
	}
	// The comparison means something only if the cache answered.
	if hits < 100 {
		t.Fatalf("the cache answered %d lookups", hits)
	}
	if plain.cache.chunks != nil || plain.cache.around != nil || plain.cache.content != nil {
		t.Fatal("the cache switched off was filled")
	}
}

func chunkIDs(cs []Chunk) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s@%d", c.ID, c.Seq))
	}
	return strings.Join(out, ",")
}

// Each kind of change between two reads of the same chunk and the same
// neighbours is seen by the second: an append (committed), a tombstone
// (pending, flushed by the read), an edit, and a Reset.
func TestReadCacheSeesEveryChange(t *testing.T) {
	evs := chain(t,
		conv("a1", "A", "user", 1000, "one"),
		conv("a2", "A", "assistant", 2000, "two"),
		conv("a3", "A", "user", 3000, "three"),
		conv("a4", "A", "assistant", 4000, "four"),
		&log.Tombstone{Chunks: []string{"a3"}},
		&log.Edit{Target: "a1", Prev: 1, By: "x", Store: *conv("a1", "A", "user", 1000, "one, edited")},
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	around := func(id string) string {
		t.Helper()
		cs, err := tl.AroundBare(id, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return strings.Join(out, ",")
	}
	bare := func(id string) (Chunk, bool) {
		t.Helper()
		c, ok, err := tl.ChunkBare(id)
		if err != nil {
			t.Fatal(err)
		}
		return c, ok
	}
	content := func(c Chunk) string {
		t.Helper()
		if err := tl.FillContent([]*Chunk{&c}); err != nil {
			t.Fatal(err)
		}
		return c.Content
	}
	applyCommit(t, tl, evs[:3])
	for range 2 { // the second reads from the cache
		if got := around("a3"); got != "a2" {
			t.Fatalf("around a3 = %q", got)
		}
		if got := around("a2"); got != "a1,a3" {
			t.Fatalf("around a2 = %q", got)
		}
		if c, ok := bare("a3"); !ok || content(c) != "three" {
			t.Fatalf("a3 %v %+v", ok, c)
		}
	}
	if _, ok := tl.cache.around[aroundKey{"a3", 1, 1}]; !ok {
		t.Fatal("the neighbours of a3 were not cached")
	}

	applyCommit(t, tl, evs[3:4]) // append a4
	// The records the append did not change stay cached; the neighbour
	// lists are dropped.
	if _, ok := tl.cache.chunks["a1"]; !ok {
		t.Error("the append dropped a1's cached record")
	}
	if tl.cache.around != nil {
		t.Error("the append kept the neighbour lists")
	}
	if got := around("a3"); got != "a2,a4" {
		t.Fatalf("around a3 after the append = %q", got)
	}
	around("a2")

	if err := apply(tl, evs[4]); err != nil { // tombstone a3, not committed
		t.Fatal(err)
	}
	if _, ok := bare("a3"); ok {
		t.Fatal("a3 found after its tombstone")
	}
	if _, ok := tl.cache.content["a3"]; ok {
		t.Error("the text of the tombstoned a3 is still cached")
	}
	if got := around("a2"); got != "a1,a4" {
		t.Fatalf("around a2 after the tombstone = %q", got)
	}
	if got := around("a3"); got != "" {
		t.Fatalf("around the tombstoned a3 = %q", got)
	}

	c1, _ := bare("a1")
	if content(c1) != "one" {
		t.Fatal("a1's content")
	}
	applyCommit(t, tl, evs[5:]) // edit a1
	c1, ok := bare("a1")
	if !ok || c1.Seq != evs[5].Seq || !c1.Edited || content(c1) != "one, edited" {
		t.Fatalf("a1 after its edit: %v %+v", ok, c1)
	}
	if cs, err := tl.AroundBare("a2", 1, 0); err != nil || len(cs) != 1 || cs[0].Seq != evs[5].Seq {
		t.Fatalf("the turn before a2 after the edit of a1: %+v %v", cs, err)
	}

	if err := tl.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, ok := bare("a1"); ok {
		t.Fatal("a1 found after Reset")
	}
	if got := around("a2"); got != "" {
		t.Fatalf("around a2 after Reset = %q", got)
	}
}

// Readers running while a writer appends and commits: a read that starts
// after a commit returned sees it, whatever the cache held before (run
// with -race). The writer appends turn i of one session and publishes i
// once committed; a reader then requires turn i and requires it as the
// next turn of turn i-1, whose neighbours it (or another reader) may
// have cached before the commit.
func TestReadCacheConcurrentCommits(t *testing.T) {
	const turns = 150
	bodies := make([]log.Body, turns)
	for i := range bodies {
		bodies[i] = conv(fmt.Sprintf("t%03d", i), "S", "user", int64(1000*(i+1)), fmt.Sprintf("turn %d", i))
	}
	evs := chain(t, bodies...)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs[:1])
	var published atomic.Int64 // the last committed turn
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				i := int(published.Load())
				id := fmt.Sprintf("t%03d", i)
				if _, ok, err := tl.ChunkBare(id); err != nil || !ok {
					errs <- fmt.Errorf("turn %d committed, ChunkBare: %v %v", i, ok, err)
					return
				}
				if i == 0 {
					continue
				}
				cs, err := tl.AroundBare(fmt.Sprintf("t%03d", i-1), 1, 1)
				if err != nil || len(cs) == 0 || cs[len(cs)-1].ID != id {
					errs <- fmt.Errorf("turn %d committed, the turns around %d: %v %v", i, i-1, chunkIDs(cs), err)
					return
				}
			}
		}()
	}
	for i := 1; i < turns && len(errs) == 0; i++ {
		applyCommit(t, tl, evs[i:i+1])
		published.Store(int64(i))
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// BenchmarkChunkBare: lookups of distinct ids (every one a miss: the
// cache's cost on a first read) and of a repeated working set, with the
// cache and without.
func BenchmarkChunkBare(b *testing.B) {
	const n, extra = 40_000, 20_000 // extra: turns appended by repeated-appends
	bodies := make([]log.Body, n+extra)
	for i := range bodies {
		bodies[i] = conv(fmt.Sprintf("c%06d", i), fmt.Sprintf("s%03d", i%100), "user", int64(1000*(i+1)), "text")
	}
	evs, err := projtest.Chain(bodies...)
	if err != nil {
		b.Fatal(err)
	}
	tl := open(b, b.TempDir())
	defer tl.Close()
	applyCommit(b, tl, evs[:n])
	next := n
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("distinct/cache=%v", !off), func(b *testing.B) {
			tl.cache.off = off
			for i := 0; i < b.N; i++ {
				if i%n == 0 {
					s, err := tl.snapshot()
					if err != nil {
						b.Fatal(err)
					}
					tl.cache.reset(s.gen)
				}
				if _, ok, err := tl.ChunkBare(fmt.Sprintf("c%06d", i%n)); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(fmt.Sprintf("around-distinct/cache=%v", !off), func(b *testing.B) {
			tl.cache.off = off
			for i := 0; i < b.N; i++ {
				if i%n == 0 {
					s, err := tl.snapshot()
					if err != nil {
						b.Fatal(err)
					}
					tl.cache.reset(s.gen)
				}
				if _, err := tl.AroundBare(fmt.Sprintf("c%06d", i%n), 2, 2); err != nil {
					b.Fatal(err)
				}
			}
		})
		// One commit (a new turn) every 100 lookups, as a server that
		// stores exchanges between queries: the records stay cached.
		b.Run(fmt.Sprintf("repeated-appends/cache=%v", !off), func(b *testing.B) {
			tl.cache.off = off
			for i := 0; i < b.N; i++ {
				if i%100 == 99 && next < len(evs) {
					if err := apply(tl, evs[next]); err != nil {
						b.Fatal(err)
					}
					if err := tl.Commit(projections.Checkpoint{Seq: evs[next].Seq, Hash: evs[next].Hash}); err != nil {
						b.Fatal(err)
					}
					next++
				}
				if _, ok, err := tl.ChunkBare(fmt.Sprintf("c%06d", i%2000)); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(fmt.Sprintf("repeated/cache=%v", !off), func(b *testing.B) {
			tl.cache.off = off
			for i := 0; i < b.N; i++ {
				if _, ok, err := tl.ChunkBare(fmt.Sprintf("c%06d", i%2000)); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// The cache stays within its bounds however much is put in it, and an
// entry put last is there.
func TestReadCacheBounded(t *testing.T) {
	var rc readCache
	rc.reset(1)
	c := &Chunk{ID: "x"}
	for i := 0; i < cacheChunks+500; i++ {
		// content is kept only beside its chunk's record at that seq
		rc.putChunk(1, fmt.Sprint(i), &Chunk{ID: fmt.Sprint(i), Seq: uint64(i)})
		rc.putAround(1, aroundKey{id: fmt.Sprint(i), before: 2, after: 2}, []*Chunk{c, c, c})
		rc.putContent(1, uint64(i), fmt.Sprint(i), strings.Repeat("y", 600))
	}
	if len(rc.chunks) > cacheChunks {
		t.Errorf("%d chunks cached, bound %d", len(rc.chunks), cacheChunks)
	}
	n := 0
	for _, l := range rc.around {
		n += len(l)
	}
	if n != rc.nAround || n > cacheAroundChunks || len(rc.around) > cacheAroundChunks {
		t.Errorf("%d neighbour lists of %d chunks (counted %d), bound %d", len(rc.around), n, rc.nAround, cacheAroundChunks)
	}
	n = 0
	for _, cc := range rc.content {
		n += len(cc.s)
	}
	if n != rc.nContent || n > cacheContentBytes {
		t.Errorf("%d content bytes cached (counted %d), bound %d", n, rc.nContent, cacheContentBytes)
	}
	last := cacheChunks + 499
	if _, ok := rc.chunk(1, fmt.Sprint(last)); !ok {
		t.Error("the last chunk put is not cached")
	}
	if _, ok := rc.aroundList(1, aroundKey{id: fmt.Sprint(last), before: 2, after: 2}); !ok {
		t.Error("the last neighbour list put is not cached")
	}
	if _, ok := rc.contentOf(1, uint64(last), fmt.Sprint(last)); !ok {
		t.Error("the last content put is not cached")
	}
	if _, ok := rc.contentOf(1, uint64(last), "other"); ok {
		t.Error("content cached for one chunk id answered for another")
	}
	if _, ok := rc.contentOf(1, uint64(last)+1, fmt.Sprint(last)); ok {
		t.Error("content cached for one seq answered for another")
	}
	rc.putChunk(0, "stale", c) // a reader of an older state
	if _, ok := rc.chunk(1, "stale"); ok {
		t.Error("an entry put for another gen is served")
	}
}

// BenchmarkReadCacheFull fills the cache to its record and neighbour-list
// bounds from a store of realistic records (32-hex ids, sessions of 25
// turns) and reports what it then holds on the heap (cache-MB, content
// excluded: that is bounded by bytes). A size the package doc quotes.
func BenchmarkReadCacheFull(b *testing.B) {
	n := cacheChunks + cacheChunks/8
	bodies := make([]log.Body, n)
	for i := range bodies {
		bodies[i] = conv(fmt.Sprintf("%032x", i*7919+1), fmt.Sprintf("session-%05d", i/25), []string{"user", "assistant"}[i%2], int64(60_000*(i+1)), "text")
	}
	evs, err := projtest.Chain(bodies...)
	if err != nil {
		b.Fatal(err)
	}
	tl := open(b, b.TempDir())
	defer tl.Close()
	applyCommit(b, tl, evs)
	for it := 0; it < b.N; it++ {
		s, err := tl.snapshot()
		if err != nil {
			b.Fatal(err)
		}
		tl.cache.reset(s.gen)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("%032x", i*7919+1)
			if _, ok, err := tl.ChunkBare(id); err != nil || !ok {
				b.Fatal(ok, err)
			}
			if _, err := tl.AroundBare(id, 2, 2); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "cache-MB")
		b.ReportMetric(float64(len(tl.cache.chunks)), "records")
		b.ReportMetric(float64(tl.cache.nAround), "list-chunks")
	}
}
