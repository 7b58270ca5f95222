package fts

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestOlderStoresRebuild opens projections of formats 6 (side-table
// records keyed by chunk id), 7 (bleve documents keyed by chunk id) and 8
// (an "ids" key per chunk; fts-v8.tar.gz written by 887c78f), each
// written by the code of main before the next format from
// projtest.Events(7, 300) (testdata/fts-vN.tar.gz: side.db and the bleve
// index; its digest in fts-vN.digest). Open must wipe it and the projector
// rebuild it from the log, and the rebuilt projection must have the old
// format's digest: formats 7 to 9 moved records, document ids and ids
// entries, not the content.
func TestOlderStoresRebuild(t *testing.T) {
	for _, v := range []string{"6", "7", "8"} {
		t.Run("v"+v, func(t *testing.T) { testOlderStoreRebuilds(t, v) })
	}
}

func testOlderStoreRebuilds(t *testing.T, version string) {
	dir := filepath.Join(t.TempDir(), "fts")
	untarGz(t, filepath.Join("testdata", "fts-v"+version+".tar.gz"), filepath.Dir(dir))
	want, err := os.ReadFile(filepath.Join("testdata", "fts-v"+version+".digest"))
	if err != nil {
		t.Fatal(err)
	}
	if v := storedVersion(t, dir); v != version {
		t.Fatalf("fixture's stored version %q, want %s", v, version)
	}
	evs := projtest.Events(7, 300)
	x, err := Open(dir)
	if err != nil {
		t.Fatalf("open a format %s store: %v", version, err)
	}
	pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{x}, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if cp, _ := x.Checkpoint(); cp.Seq != evs[len(evs)-1].Seq {
		t.Fatalf("checkpoint %d, want %d", cp.Seq, evs[len(evs)-1].Seq)
	}
	got, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got[:]) != strings.TrimSpace(string(want)) {
		t.Fatalf("rebuilt digest %x, format %s's %s", got, version, want)
	}
	if n, err := x.Count(); err != nil || n != 202 {
		t.Fatalf("count %d %v, want 202 (format %s's)", n, err, version)
	}
	live := projtest.LiveIDs(evs)
	for _, id := range live {
		if ok, err := x.Contains(id); err != nil || !ok {
			t.Fatalf("chunk %q: live %v %v", id, ok, err)
		}
	}
	if _, err := x.Mentioned(live, nil); err != nil {
		t.Fatal(err)
	}
	var v []byte
	x.db.View(func(tx *bolt.Tx) error {
		v = append(v, tx.Bucket(bucketMeta).Get(keyVersion)...)
		return nil
	})
	if string(v) != fmt.Sprint(FormatVersion) {
		t.Fatalf("stored version after the rebuild %q, want %d", v, FormatVersion)
	}
}

// storedVersion reads the format version in dir's side.db.
func storedVersion(t *testing.T, dir string) string {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "side.db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	db.View(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bucketMeta); m != nil {
			v = string(m.Get(keyVersion))
		}
		return nil
	})
	return v
}

// untarGz extracts the regular files and directories of a .tar.gz into dst.
func untarGz(t *testing.T, path, dst string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dst)+string(os.PathSeparator)) {
			t.Fatalf("tar entry %q outside the destination", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLookupEndsBeforeWrites: an overwrite's lookup keeps a read
// transaction of side.db open between Applies (liveSeqLocked). A
// compaction and Close must end it first, or they wait forever (bbolt's
// Close waits for read transactions); so must a Commit that grows the file
// past its mapping (a remap waits likewise), which this test's commits do
// not reach (projections.BoltMapSize).
func TestLookupEndsBeforeWrites(t *testing.T) {
	x := openT(t, t.TempDir(), Options{})
	var e evs
	applyAll(t, x, []*log.Event{e.store("a", "s", "user", log.KindConversation, 1, "alpha")}, 0)
	long := strings.Repeat("session ", 256)
	for round := 0; round < 6; round++ {
		over := e.store("a", "s", "user", log.KindConversation, 1, fmt.Sprintf("alpha %d", round))
		if err := x.Apply(over); err != nil {
			t.Fatal(err)
		}
		if x.lookup == nil {
			t.Fatal("an overwrite's lookup left no read transaction open")
		}
		var batch []*log.Event
		for i := 0; i < 200; i++ {
			batch = append(batch, e.store(fmt.Sprintf("c%d-%d", round, i), fmt.Sprint(long, round, i), "user", log.KindConversation, int64(i), "gamma"))
		}
		applyAll(t, x, batch, 0)
		if c, err := x.ChangedAfter(over.Seq - 1); err != nil || !c {
			t.Fatalf("round %d: overwrite at %d not a change: %v %v", round, over.Seq, c, err)
		}
	}
	if n, err := x.Count(); err != nil || n != 1+6*200 {
		t.Fatalf("count %d %v, want %d", n, err, 1+6*200)
	}
	if err := x.Apply(e.store("a", "s", "user", log.KindConversation, 1, "alpha last")); err != nil {
		t.Fatal(err)
	}
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	// "a" is pending now: the overwrite of another committed chunk looks
	// it up.
	if err := x.Apply(e.store("c0-0", "s", "user", log.KindConversation, 1, "gamma after")); err != nil {
		t.Fatal(err)
	}
	if x.lookup == nil {
		t.Fatal("the lookup after the compaction left no read transaction open")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
}

func FuzzSplitRecord(f *testing.F) {
	f.Add(encodeRecord(projections.IDKey("0123456789abcdef0123456789abcdef"), &docMeta{session: "s1", time: 1_700_000_000_000, tokens: 42, seq: 9}))
	f.Add(encodeRecord(projections.IDKey("a"), &docMeta{time: -5}))
	f.Add([]byte{})
	f.Add([]byte{0xff})
	f.Add([]byte{5, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		key, side, err := splitRecord(b)
		if err != nil {
			return
		}
		if len(key)+len(side) > len(b) {
			t.Fatalf("key %d and side %d bytes out of a %d-byte record", len(key), len(side), len(b))
		}
		m, err := decodeSide(side)
		if err != nil {
			return
		}
		k2, s2, err := splitRecord(encodeRecord(key, m))
		if err != nil || string(k2) != string(key) {
			t.Fatalf("re-split %x: %x %v", key, k2, err)
		}
		if m2, err := decodeSide(s2); err != nil || !reflect.DeepEqual(m2, m) {
			t.Fatalf("re-decode %+v: %+v, %v", m, m2, err)
		}
	})
}

// TestRecordUnderWrongSeq: the "ids" entry and the record it names must
// agree (chunk key and seq); a record moved under another seq, or an ids
// entry naming another chunk's record, is a corrupt side table, not that
// chunk's data.
func TestRecordUnderWrongSeq(t *testing.T) {
	x := openT(t, t.TempDir(), Options{})
	var e evs
	applyAll(t, x, []*log.Event{
		e.store("a1", "s", "user", log.KindConversation, 1, "alpha yesterday"),
		e.store("b1", "s", "user", log.KindConversation, 2, "beta"),
	}, 0)
	if _, err := x.Mentioned([]string{"a1", "b1"}, nil); err != nil {
		t.Fatal(err)
	}
	// The ids entry of a1 names b1's record (seq 2).
	err := x.db.Update(func(tx *bolt.Tx) error {
		return idsPut(tx.Bucket(bucketIDs), projections.IDKey("a1"), 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Mentioned([]string{"a1"}, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ids entry naming another chunk's record: %v", err)
	}
	if _, err := x.Digest(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("digest with an ids entry naming another chunk's record: %v", err)
	}
	// a1's record moved under seq 7, its ids entry following it: the
	// record's own seq disagrees with its key.
	moveRecord(t, x, "a1", 1, 7)
	if _, err := x.Mentioned([]string{"a1"}, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("record under another seq: %v", err)
	}
	// Put back: every read agrees again.
	moveRecord(t, x, "a1", 7, 1)
	if _, err := x.Digest(); err != nil {
		t.Fatal(err)
	}
}

// moveRecord moves chunk id's "docs" record from seq from to seq to, its
// "ids" entry following it (the record's own seq stays from).
func moveRecord(t *testing.T, x *Index, id string, from, to uint64) {
	t.Helper()
	err := x.db.Update(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bucketDocs)
		v := append([]byte(nil), docs.Get(seqKey(from))...)
		if err := docs.Delete(seqKey(from)); err != nil {
			return err
		}
		if err := docs.Put(seqKey(to), v); err != nil {
			return err
		}
		return idsPut(tx.Bucket(bucketIDs), projections.IDKey(id), to)
	})
	if err != nil {
		t.Fatal(err)
	}
}
