package fts

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
)

// idsState reads the "ids" bucket's entries and meta "version" of the
// side table of x (open) or of dir's side.db (x nil, closed).
func idsState(t *testing.T, x *Index, dir string) (entries int, version string) {
	t.Helper()
	read := func(tx *bolt.Tx) error {
		c := newIDsCursor(tx.Bucket(bucketIDs))
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			entries++
		}
		version = string(tx.Bucket(bucketMeta).Get(keyVersion))
		return c.Err()
	}
	var err error
	if x != nil {
		err = x.db.View(read)
	} else {
		var db *bolt.DB
		if db, err = bolt.Open(filepath.Join(dir, "side.db"), 0o600, &bolt.Options{ReadOnly: true}); err == nil {
			err = db.View(read)
			db.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return entries, version
}

// sameReads compares what got and want (a plain build of the same events)
// answer for every chunk id of events: Contains, Count, the times they
// mention, and searches with and without time windows.
func sameReads(t *testing.T, got, want *Index, events []*log.Event, at string) {
	t.Helper()
	var ids []string
	for _, ev := range events {
		if s := ev.Store(); s != nil && !slices.Contains(ids, s.ChunkID) {
			ids = append(ids, s.ChunkID)
		}
	}
	for _, id := range ids {
		g, err := got.Contains(id)
		if err != nil {
			t.Fatal(err)
		}
		w, err := want.Contains(id)
		if err != nil {
			t.Fatal(err)
		}
		if g != w {
			t.Fatalf("%s: Contains(%q) = %v, a plain build %v", at, id, g, w)
		}
	}
	gn, err := got.Count()
	if err != nil {
		t.Fatal(err)
	}
	wn, err := want.Count()
	if err != nil {
		t.Fatal(err)
	}
	if gn != wn {
		t.Fatalf("%s: Count %d, a plain build %d", at, gn, wn)
	}
	gm, err := got.Mentioned(ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	wm, err := want.Mentioned(ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gm) != fmt.Sprint(wm) {
		t.Fatalf("%s: Mentioned differs", at)
	}
	const t0 = 1_700_000_000_000
	for _, q := range []Query{{Text: vocab[0]}, {Text: vocab[1] + " " + vocab[2], Since: t0 + 200*60_000, Until: t0 + 300*60_000},
		{Text: vocab[3], Until: t0 + 100*60_000}} {
		q.K = 1000
		g, err := got.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		w, err := want.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("%s: search %+v: %d hits, a plain build %d", at, q, len(g), len(w))
		}
	}
}

// A first bulk build puts no "ids" entry of a chunk it stores new until
// it ends (idsbulk.go), and meanwhile reads as a plain build does: chunks
// stored again, deleted by id, by session, by time range (a purge reopens
// the side table), counted, found in time windows. Once it ends, the
// index is the plain build's, digest and "ids" bucket included. Also
// with every key's hash colliding, and with windows and settling passes
// small enough that a build settles several times, in several passes.
func TestBulkBuildDefersIDs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		collide       bool
		window, piece int
	}{{"defaults", false, 0, 0}, {"colliding hashes", true, 0, 0}, {"small windows", false, 150, 16}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.collide {
				defer func(h func([]byte) uint32) { idsHash = h }(idsHash)
				idsHash = func([]byte) uint32 { return 7 }
			}
			if tc.window > 0 {
				defer func(w, p int) { maxDeferredIDs, settlePiece = w, p }(maxDeferredIDs, settlePiece)
				maxDeferredIDs, settlePiece = tc.window, tc.piece
			}
			events := randomEvents(11, 1200)
			plain := openT(t, t.TempDir(), Options{})
			x := openT(t, t.TempDir(), Options{BatchSize: 31})
			x.BeginBulk()
			if x.stored == nil || x.deferIDs == nil {
				t.Fatal("BeginBulk on an empty index defers nothing")
			}
			settled := false
			for i, ev := range events {
				for _, p := range []*Index{plain, x} {
					if err := p.Apply(ev); err != nil {
						t.Fatal(err)
					}
				}
				if (i+1)%97 != 0 {
					continue
				}
				for _, p := range []*Index{plain, x} {
					if err := p.Commit(cpOf(ev)); err != nil {
						t.Fatal(err)
					}
				}
				n, v := idsState(t, x, "")
				if tc.window == 0 && (n != 0 || v != deferredVersion) {
					t.Fatalf("after the commit at seq %d: %d ids entries, version %q; want none deferred", ev.Seq, n, v)
				}
				settled = settled || n > 0
				sameReads(t, x, plain, events[:i+1], fmt.Sprintf("bulk build at seq %d", ev.Seq))
			}
			if tc.window > 0 && !settled {
				t.Fatal("no window settled during the build")
			}
			last := events[len(events)-1]
			for _, p := range []*Index{plain, x} {
				if err := p.Commit(cpOf(last)); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.EndBulk(); err != nil {
				t.Fatal(err)
			}
			gotN, gotV := idsState(t, x, "")
			wantN, _ := idsState(t, plain, "")
			if gotN != wantN || gotV != fmt.Sprint(FormatVersion) {
				t.Fatalf("after EndBulk: %d ids entries, version %q; a plain build %d, %d", gotN, gotV, wantN, FormatVersion)
			}
			sameReads(t, x, plain, events, "after EndBulk")
			got, err := x.Digest()
			if err != nil {
				t.Fatal(err)
			}
			want, err := plain.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("digest %x, a plain build's %x", got[:4], want[:4])
			}
		})
	}
}

// A bulk build that stops before EndBulk (killed, or an error) leaves
// its window in side.db, marked by a version no binary before it takes
// as its own (one rebuilds the projection); the next Open settles it. A
// second BeginBulk in between goes on with the window.
func TestBulkBuildStoppedSettlesOnOpen(t *testing.T) {
	events := randomEvents(12, 900)
	plain := openT(t, t.TempDir(), Options{})
	applyAll(t, plain, events, 97)
	want, err := plain.Digest()
	if err != nil {
		t.Fatal(err)
	}
	wantN, _ := idsState(t, plain, "")

	dir := t.TempDir()
	x, err := OpenOptions(dir, Options{BatchSize: 31})
	if err != nil {
		t.Fatal(err)
	}
	x.BeginBulk()
	half := len(events) / 2
	applyAll(t, x, events[:half], 97)
	x.BeginBulk() // a second catch-up, without EndBulk
	if x.deferIDs == nil || x.deferIDs.from == 0 {
		t.Fatal("a second BeginBulk dropped the open window")
	}
	applyAll(t, x, events[half:], 97)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	n, v := idsState(t, nil, dir)
	if n != 0 || v != deferredVersion || v == fmt.Sprint(FormatVersion) {
		t.Fatalf("stopped build: %d ids entries, version %q; want none, %q", n, v, deferredVersion)
	}
	y := openT(t, dir, Options{})
	if n, v := idsState(t, y, ""); n != wantN || v != fmt.Sprint(FormatVersion) {
		t.Fatalf("reopened: %d ids entries, version %q; want %d, %d", n, v, wantN, FormatVersion)
	}
	got, err := y.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("reopened digest %x, a plain build's %x", got[:4], want[:4])
	}
	if cp, err := y.Checkpoint(); err != nil || cp.Seq != events[len(events)-1].Seq {
		t.Fatalf("checkpoint %+v (%v)", cp, err)
	}
	sameReads(t, y, plain, events, "reopened")
}
