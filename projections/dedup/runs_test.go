package dedup

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// setMergeWindow sets mergeWindow for one test.
func setMergeWindow(t *testing.T, n int) {
	old := mergeWindow
	mergeWindow = n
	t.Cleanup(func() { mergeWindow = old })
}

// itemCount is how many items dedup.db itself holds (not pending, not
// runs).
func itemCount(t *testing.T, x *Index) int {
	t.Helper()
	n := 0
	if err := x.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketItems).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// sameReads fails unless a and b answer alike for the stores and edits
// of evs: Find, Document, Items and Contains.
func sameReads(t *testing.T, a, b *Index, evs []*log.Event) {
	t.Helper()
	for _, ev := range evs {
		st := ev.Store()
		if e, ok := ev.Body.(*log.Edit); ok {
			st = &e.Store
		}
		if st == nil {
			continue
		}
		h := Hash(st.Content)
		f1, err1 := a.Find(st.Session, st.Role, st.Kind, h)
		f2, err2 := b.Find(st.Session, st.Role, st.Kind, h)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(f1, f2) {
			t.Fatalf("after seq %d, find %s: %+v %v, want %+v %v", ev.Seq, st.ChunkID, f1, err1, f2, err2)
		}
		if st.ChunkParent != "" {
			d1, err1 := a.Document(st.ChunkParent)
			d2, err2 := b.Document(st.ChunkParent)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(d1, d2) {
				t.Fatalf("after seq %d, document %s: %+v %v, want %+v %v", ev.Seq, st.ChunkParent, d1, err1, d2, err2)
			}
		}
		i1, _ := a.Items([]string{st.ChunkID})
		i2, _ := b.Items([]string{st.ChunkID})
		c1, _ := a.Contains(st.ChunkID)
		c2, _ := b.Contains(st.ChunkID)
		if !reflect.DeepEqual(i1, i2) || c1 != c2 {
			t.Fatalf("after seq %d, item %s: %+v %v, want %+v %v", ev.Seq, st.ChunkID, i1, c1, i2, c2)
		}
	}
}

// A first bulk build spills its writes in runs (a run every few
// commits here) and reads through them what plain commits read after
// every commit; its file holds no item until EndBulk merges the runs (in
// windows of 7 keys), which leaves the digest of plain commits, no
// scratch file and no mark. With tombstones in the stream, the first one
// merges the runs and the build goes on in the file.
func TestBulkRunsEqualCommits(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  projtest.Config
	}{
		{"stores and edits", projtest.Config{Seed: 11, N: 1500, StoresOnly: true, Conversation: true}},
		// The first tombstone after 600 events: runs first.
		{"with tombstones", projtest.Config{Seed: 12, N: 1500, Conversation: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []*log.Event
			for i, ev := range projtest.Generate(tc.cfg) {
				if _, ok := ev.Body.(*log.Tombstone); !ok || i >= 600 {
					evs = append(evs, ev)
				}
			}
			ref, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			bulk, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer bulk.Close()
			setMergeWindow(t, 7)
			setFlush(t, 40, flushChunk)
			bulk.BeginBulk()
			if bulk.bulk == nil {
				t.Fatal("a bulk build of an empty store does not defer")
			}
			tomb, halfMerged := false, false
			maxRuns := uint32(0)
			for i := 0; i < len(evs); i += 9 {
				batch := evs[i:min(i+9, len(evs))]
				FlushEntries = 1 << 30
				applyCommit(t, ref, batch)
				FlushEntries = 40
				applyCommit(t, bulk, batch)
				for _, ev := range batch {
					_, ok := ev.Body.(*log.Tombstone)
					tomb = tomb || ok
				}
				if !tomb {
					if bulk.bulk == nil {
						t.Fatalf("after seq %d: no longer deferring, with no tombstone", batch[len(batch)-1].Seq)
					}
					maxRuns = max(maxRuns, bulk.bulk.n)
					if n := itemCount(t, bulk); n != 0 && !halfMerged {
						t.Fatalf("after seq %d: %d items in the file while deferring", batch[len(batch)-1].Seq, n)
					}
					if i >= len(evs)/2 && !halfMerged {
						// As a merge that failed part way (EndBulk's error)
						// leaves the file: the runs must still override it.
						if err := mergeRuns(bulk.db, bulk.bulk.db, bulk.bulk.n/2, []byte(`{"seq":1}`)); err != nil {
							t.Fatal(err)
						}
						if itemCount(t, bulk) == 0 {
							t.Fatal("half a merge put no item")
						}
						halfMerged = true
					}
				} else if bulk.bulk != nil {
					t.Fatalf("after seq %d: still deferring after a tombstone", batch[len(batch)-1].Seq)
				}
				from := max(0, i-40)
				if (i/9)%8 == 0 {
					from = 0
				}
				sameReads(t, bulk, ref, evs[from:i+len(batch)])
			}
			if maxRuns < 3 {
				t.Fatalf("%d runs, want several", maxRuns)
			}
			t.Logf("%d runs at most", maxRuns)
			if err := bulk.EndBulk(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(bulk.runsPath()); !os.IsNotExist(err) {
				t.Fatalf("scratch file after EndBulk: %v", err)
			}
			if marked(t, bulk.db) {
				t.Fatal("dedup.db still marked after EndBulk")
			}
			d1, err1 := bulk.Digest()
			d2, err2 := ref.Digest()
			if err1 != nil || err2 != nil || d1 != d2 {
				t.Fatalf("digests %x %v, want %x %v", d1, err1, d2, err2)
			}
			c1, _ := bulk.Checkpoint()
			c2, _ := ref.Checkpoint()
			if c1 != c2 {
				t.Fatalf("checkpoint %+v, want %+v", c1, c2)
			}
		})
	}
}

// commitsDigest is the digest of evs applied and committed at once.
func commitsDigest(t *testing.T, evs []*log.Event) [32]byte {
	t.Helper()
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	applyCommit(t, x, evs)
	d, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func marked(t *testing.T, db *bolt.DB) bool {
	t.Helper()
	m := false
	if err := db.View(func(tx *bolt.Tx) error {
		m = tx.Bucket(bucketMeta).Get(keyBulk) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// A process that stops while a bulk build defers (Close here, or a kill
// after a run committed) leaves dedup.db marked and its runs; Open
// merges them, also over a merge that had done part of its work (here
// the first half of the runs, whose items later runs remove or replace),
// and ends with the state of the last run. A marked file whose runs
// cannot be read starts over; runs without a mark are removed.
func TestBulkRunsReopen(t *testing.T) {
	setFlush(t, 40, flushChunk)
	evs := projtest.Generate(projtest.Config{Seed: 13, N: 1200, StoresOnly: true, Conversation: true})
	want := commitsDigest(t, evs)

	// leave builds evs in dir with a bulk build stopped before EndBulk.
	leave := func(dir string) uint32 {
		x, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		x.BeginBulk()
		for i := 0; i < len(evs); i += 25 {
			applyCommit(t, x, evs[i:min(i+25, len(evs))])
		}
		n := x.bulk.n
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if n < 4 {
			t.Fatalf("%d runs, want several", n)
		}
		return n
	}
	reopen := func(dir string) *Index {
		x, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if _, err := os.Stat(filepath.Join(dir, runsFile)); !os.IsNotExist(err) {
			t.Fatalf("scratch file after Open: %v", err)
		}
		if marked(t, x.db) {
			t.Fatal("dedup.db still marked after Open")
		}
		return x
	}
	last := projections.Checkpoint{Seq: evs[len(evs)-1].Seq, Hash: evs[len(evs)-1].Hash}
	check := func(x *Index, what string) {
		t.Helper()
		if cp, _ := x.Checkpoint(); cp != last {
			t.Fatalf("%s: checkpoint %+v, want %+v", what, cp, last)
		}
		if d, err := x.Digest(); err != nil || d != want {
			t.Fatalf("%s: digest %x %v, want %x", what, d, err, want)
		}
	}

	dir := t.TempDir()
	leave(dir)
	check(reopen(dir), "runs left")

	dir = t.TempDir()
	n := leave(dir)
	func() {
		main, err := bolt.Open(filepath.Join(dir, "dedup.db"), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer main.Close()
		scratch, err := bolt.Open(filepath.Join(dir, runsFile), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer scratch.Close()
		setMergeWindow(t, 5)
		if err := mergeRuns(main, scratch, n/2, []byte(`{"seq":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := main.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyBulk, []byte("1")) }); err != nil {
			t.Fatal(err)
		}
	}()
	check(reopen(dir), "half merged")

	// A marked file whose runs are gone starts over.
	dir = t.TempDir()
	leave(dir)
	if err := os.Truncate(filepath.Join(dir, runsFile), 0); err != nil {
		t.Fatal(err)
	}
	x := reopen(dir)
	if cp, _ := x.Checkpoint(); cp.Seq != 0 {
		t.Fatalf("checkpoint %d with unreadable runs, want 0", cp.Seq)
	}
	if n, _ := x.Count(); n != 0 {
		t.Fatalf("%d items with unreadable runs, want 0", n)
	}

	// Runs without the mark are a merge's leftovers: removed, unread.
	dir = t.TempDir()
	leave(dir)
	x = reopen(dir)
	check(x, "merged")
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runsFile), []byte("left over"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(reopen(dir), "leftover runs")
}

// A spill that failed part way left keys of the run it was writing,
// uncounted; the next spill, which writes that run again, deletes them
// first.
func TestSpillDropsPartialRun(t *testing.T) {
	setFlush(t, 40, flushChunk)
	evs := projtest.StoreEvents(14, 300)
	want := commitsDigest(t, evs)
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.BeginBulk()
	applyCommit(t, x, evs[:100])
	if x.bulk == nil || x.bulk.n == 0 {
		t.Fatal("no run written")
	}
	// What a failed transaction of run n could have left: an item and
	// its lookup key that no event stores.
	bogus := projections.IDKey("0123456789abcdef0123456789abcdef")
	if err := x.bulk.db.Update(func(tx *bolt.Tx) error {
		rb := tx.Bucket(bucketRuns)
		if err := rb.Put(runKey(nil, x.bulk.n, bItems, bogus), append([]byte{1}, encodeItem(&Item{ChunkID: "0123456789abcdef0123456789abcdef", Seq: 1})...)); err != nil {
			return err
		}
		return rb.Put(runKey(nil, x.bulk.n, bKeys, append(make([]byte, lookupLen), bogus...)), []byte{1})
	}); err != nil {
		t.Fatal(err)
	}
	applyCommit(t, x, evs[100:])
	if err := x.EndBulk(); err != nil {
		t.Fatal(err)
	}
	if d, err := x.Digest(); err != nil || d != want {
		t.Fatalf("digest %x %v, want %x", d, err, want)
	}
}

// FuzzRunWrite: a run's value decodes to the write it encodes, and
// anything else that decodes re-encodes to itself.
func FuzzRunWrite(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{1, 'a', 'b'})
	f.Add([]byte{0, 1})
	f.Add([]byte{2})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, ok := runWrite(raw)
		if !ok {
			return
		}
		w := write{v: v, del: v == nil}
		if got := appendRunWrite(nil, w); !bytes.Equal(got, raw) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", raw, w, got)
		}
		if !w.del {
			if back, ok := runWrite(appendRunWrite(nil, write{v: v})); !ok || !bytes.Equal(back, v) {
				t.Fatalf("put %x comes back %x %v", v, back, ok)
			}
		}
	})
}
