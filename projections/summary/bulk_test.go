package summary

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// searchMeta returns the search stats and the bulk-build mark stored in meta.
func searchMeta(t *testing.T, x *Index) (stats, stale []byte) {
	t.Helper()
	err := x.db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		stats = bytes.Clone(m.Get(keySearchStats))
		stale = bytes.Clone(m.Get(keySearchStale))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stats, stale
}

// A bulk build (BeginBulk … EndBulk) stores exactly what incremental
// commits store, search index included (with colliding hashes, so named
// postings too), and its commits leave the index behind until EndBulk.
// A bulk build cut short (a crash before EndBulk) is brought current
// when the file is opened again. A bulk build that starts on committed
// chunks stores what incremental commits store too.
func TestBulkBuildSearchIndex(t *testing.T) {
	projtest.SmallPendingWindow(t)
	withHash(t, func(id string) uint32 { return fnvHash(id) % 3 }, func() {
		for seed := int64(1); seed <= 1; seed++ {
			r := rand.New(rand.NewSource(seed))
			bodies, _ := manySessionOps(r, 150, 12)
			evs := chain(t, bodies...)
			inc := openT(t, t.TempDir(), Options{})
			applyAll(t, inc, evs, 3)
			want := fmt.Sprint(dump(t, inc))
			wantStats, _ := searchMeta(t, inc)
			wantHits := searchAll(t, inc)

			bulk := openT(t, t.TempDir(), Options{})
			bulk.BeginBulk()
			applyAll(t, bulk, evs[:len(evs)/2], 40)
			if _, stale := searchMeta(t, bulk); stale == nil {
				t.Fatalf("seed %d: a bulk commit updated the search index", seed)
			}
			applyAll(t, bulk, evs[len(evs)/2:], 40)
			if err := bulk.EndBulk(); err != nil {
				t.Fatal(err)
			}
			stats, stale := searchMeta(t, bulk)
			if got := fmt.Sprint(dump(t, bulk)); got != want || !bytes.Equal(stats, wantStats) || stale != nil {
				t.Fatalf("seed %d: bulk build differs from incremental commits (stale mark %x)", seed, stale)
			}
			if got := searchAll(t, bulk); got != wantHits {
				t.Fatalf("seed %d: bulk search %s, want %s", seed, got, wantHits)
			}

			// A bulk build over chunks committed before it: they are
			// stored again and removed without a filter of the keys
			// put since BeginBulk hiding their records.
			late := openT(t, t.TempDir(), Options{})
			applyAll(t, late, evs[:len(evs)/2], 40)
			late.BeginBulk()
			applyAll(t, late, evs[len(evs)/2:], 40)
			if err := late.EndBulk(); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(dump(t, late)); got != want {
				t.Fatalf("seed %d: a bulk build over committed chunks differs from incremental commits", seed)
			}

			// Cut short: the mark is on disk; Open rebuilds the index.
			dir := t.TempDir()
			cut := openT(t, dir, Options{})
			cut.BeginBulk()
			applyAll(t, cut, evs, 40)
			if err := cut.Close(); err != nil {
				t.Fatal(err)
			}
			re := openT(t, dir, Options{})
			stats, stale = searchMeta(t, re)
			if got := fmt.Sprint(dump(t, re)); got != want || !bytes.Equal(stats, wantStats) || stale != nil {
				t.Fatalf("seed %d: reopened after a cut bulk build: differs from incremental commits (stale mark %x)", seed, stale)
			}

			// Cut short while EndBulk moved the records: the windows that
			// committed left theirs in both buckets; Open moves them all.
			dir = t.TempDir()
			cut = openT(t, dir, Options{})
			cut.BeginBulk()
			applyAll(t, cut, evs, 40)
			moved := 0
			if err := cut.db.Update(func(tx *bolt.Tx) error {
				chunks, bb := tx.Bucket(bucketChunks), tx.Bucket(bucketChunksBulk)
				return cut.pend.Each(func(k []byte, seq uint64) error {
					if moved == 3*projections.PendingWindow {
						return nil
					}
					moved++
					_, rec, err := splitBulkRecord(bb.Get(seqKey(seq)))
					if err != nil {
						return err
					}
					return chunks.Put(k, bytes.Clone(rec))
				})
			}); err != nil || moved != 3*projections.PendingWindow {
				t.Fatalf("seed %d: moving the first windows: %d records, %v", seed, moved, err)
			}
			if err := cut.Close(); err != nil {
				t.Fatal(err)
			}
			re = openT(t, dir, Options{})
			if got := fmt.Sprint(dump(t, re)); got != want {
				t.Fatalf("seed %d: reopened after a bulk build cut in its EndBulk: differs from incremental commits", seed)
			}
			if n, err := re.Count(); err != nil || n != len(projtest.LiveIDs(evs)) {
				t.Fatalf("seed %d: reopened after a bulk build cut in its EndBulk: count %d %v, want %d", seed, n, err, len(projtest.LiveIDs(evs)))
			}
		}
	})
}

// searchAll is the hits of a few queries made of the stored terms.
func searchAll(t *testing.T, x *Index) string {
	t.Helper()
	var out []string
	for _, s := range all(t, x) {
		if len(s.KeyTerms) == 0 {
			continue
		}
		hits, err := x.Search(t.Context(), s.KeyTerms[0], 5)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(hits))
		if len(out) == 8 {
			break
		}
	}
	return fmt.Sprint(out)
}

// TestBulkBuildDefersChunks: during a bulk build the records of new
// chunks wait in "chunks_bulk" (appended by seq), Count and Contains see
// them there, and EndBulk moves them into "chunks": the file then holds
// exactly what incremental commits store, and no "chunks_bulk".
func TestBulkBuildDefersChunks(t *testing.T) {
	projtest.SmallPendingWindow(t)
	evs := projtest.Events(17, 800)
	live := projtest.LiveIDs(evs)
	inc := openT(t, t.TempDir(), Options{})
	applyAll(t, inc, evs, 9)
	want := fmt.Sprint(dump(t, inc))

	bulk := openT(t, t.TempDir(), Options{})
	bulk.BeginBulk()
	applyAll(t, bulk, evs[:400], 50)
	half := openT(t, t.TempDir(), Options{})
	applyAll(t, half, evs[:400], 50)
	var deferred int
	if err := bulk.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketChunksBulk); b != nil {
			deferred = b.Stats().KeyN
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if deferred == 0 || deferred != bulk.pend.Len() {
		t.Fatalf("bulk build: %d records deferred, %d keys pending; want as many, some", deferred, bulk.pend.Len())
	}
	for _, x := range []*Index{half, bulk} {
		n, err := x.Count()
		if err != nil {
			t.Fatal(err)
		}
		if x == half {
			deferred = n
			continue
		}
		if n != deferred {
			t.Fatalf("count during a bulk build %d, incremental %d", n, deferred)
		}
	}
	for _, id := range projtest.LiveIDs(evs[:400]) {
		if ok, err := bulk.Contains(id); err != nil || !ok {
			t.Fatalf("contains %s during a bulk build: %v %v", id, ok, err)
		}
	}
	applyAll(t, bulk, evs[400:], 50)
	if err := bulk.EndBulk(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(dump(t, bulk)); got != want {
		t.Fatal("bulk build differs from incremental commits")
	}
	if err := bulk.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketChunksBulk) != nil {
			return fmt.Errorf("EndBulk left %s", bucketChunksBulk)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := bulk.Count(); err != nil || n != len(live) {
		t.Fatalf("count %d %v, want %d", n, err, len(live))
	}
}

// TestBulkBuildEndFails: when one of EndBulk's transactions fails (here
// a deferred record is missing), the windows before it are in "chunks"
// and no longer pending, so Count and Contains still see each live chunk
// once.
func TestBulkBuildEndFails(t *testing.T) {
	projtest.SmallPendingWindow(t)
	evs := projtest.Events(17, 800)
	live := projtest.LiveIDs(evs)
	x := openT(t, t.TempDir(), Options{})
	x.BeginBulk()
	applyAll(t, x, evs, 50)
	var lost []byte
	i := 0
	if err := x.pend.Each(func(k []byte, seq uint64) error {
		if i++; i == 3*projections.PendingWindow+5 {
			lost = bytes.Clone(k)
			return x.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketChunksBulk).Delete(seqKey(seq)) })
		}
		return nil
	}); err != nil || lost == nil {
		t.Fatalf("deleting a deferred record: %v, %d pending", err, x.pend.Len())
	}
	if err := x.EndBulk(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("EndBulk without a deferred record: %v, want ErrCorrupt", err)
	}
	var moved int
	if err := x.db.View(func(tx *bolt.Tx) error {
		moved = tx.Bucket(bucketChunks).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if moved != 3*projections.PendingWindow {
		t.Fatalf("%d records moved before the failed window, want %d", moved, 3*projections.PendingWindow)
	}
	if n, err := x.Count(); err != nil || n != len(live) {
		t.Fatalf("count %d %v, want %d", n, err, len(live))
	}
	for _, id := range live {
		if ok, err := x.Contains(id); err != nil || !ok {
			t.Fatalf("contains %s: %v %v", id, ok, err)
		}
	}
}
