package projstd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// bulkEvents is the full mix (re-stored ids, tombstones by id, session
// and time): the first third is built before the bulk build, so that
// the bulk build removes and stores again chunks "ids" already holds.
func bulkEvents() []*log.Event { return projtest.Events(26, 1500) }

// buildBulkVectors applies evs to a new vector projection in dir, committing
// every 400 events and at the end; from event bulkFrom on (if ≥ 0) inside
// BeginBulk, ending it unless stop is set (then it returns after the
// last commit, without EndBulk or Close). check, if set, runs after each
// commit of the bulk build.
func buildBulkVectors(t *testing.T, dir string, evs []*log.Event, bulkFrom int, stop bool, check func(v *VectorProjection)) *VectorProjection {
	t.Helper()
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if i == bulkFrom {
			v.BeginBulk()
		}
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if (i+1)%400 == 0 || i == len(evs)-1 || i+1 == bulkFrom {
			if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
			if check != nil && bulkFrom >= 0 && i >= bulkFrom {
				check(v)
			}
		}
	}
	if bulkFrom >= 0 && !stop {
		if err := v.EndBulk(); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// dumpIDs returns "ids" (key=slot lines, in key order) and whether meta
// holds the mark, as of v's database.
func dumpIDs(t *testing.T, db *bolt.DB) (string, bool) {
	t.Helper()
	var b strings.Builder
	var stale bool
	err := db.View(func(tx *bolt.Tx) error {
		stale = tx.Bucket(bMeta).Get(kIDsStale) != nil
		return tx.Bucket(bIDs).ForEach(func(k, val []byte) error {
			s, err := decodeSlotRef(val)
			fmt.Fprintf(&b, "%x=%d\n", k, s)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), stale
}

func readFiles(t *testing.T, dir string) (scan, recs []byte) {
	t.Helper()
	scan, err := os.ReadFile(filepath.Join(dir, scanFileName))
	if err != nil {
		t.Fatal(err)
	}
	recs, err = os.ReadFile(filepath.Join(dir, recsFileName))
	if err != nil {
		t.Fatal(err)
	}
	return scan, recs
}

// TestVectorsBulkDefersIDs: between BeginBulk and EndBulk, the commits
// leave the keys of the chunks they store new out of "ids" (and say so
// in meta), and after EndBulk "ids", the files, the digest and the
// scores by id are those of the same events built without a bulk build.
func TestVectorsBulkDefersIDs(t *testing.T) {
	projtest.SmallPendingWindow(t)
	evs := bulkEvents()
	plainDir, bulkDir := t.TempDir(), t.TempDir()
	plain := buildBulkVectors(t, plainDir, evs, -1, false, nil)
	deferred := 0
	bulk := buildBulkVectors(t, bulkDir, evs, len(evs)/3, false, func(v *VectorProjection) {
		ids, stale := dumpIDs(t, v.db)
		if n := strings.Count(ids, "\n"); n < v.live {
			deferred = max(deferred, v.live-n)
			if !stale {
				t.Fatalf("%d chunks left out of ids without the mark", v.live-n)
			}
		}
	})
	if deferred == 0 {
		t.Fatal("every commit of the bulk build wrote its new chunks to ids: nothing deferred")
	}
	samePlain(t, "after EndBulk", plain, plainDir, bulk, bulkDir)
}

// samePlain checks that v (in dir) has plain's "ids", no mark, the same
// vectors, and, once both are closed, the same scan.bin and recs.bin.
func samePlain(t *testing.T, when string, plain *VectorProjection, plainDir string, v *VectorProjection, dir string) {
	t.Helper()
	wantIDs, _ := dumpIDs(t, plain.db)
	gotIDs, stale := dumpIDs(t, v.db)
	if gotIDs != wantIDs || stale {
		t.Fatalf("%s: ids equal %v, mark left %v", when, gotIDs == wantIDs, stale)
	}
	compareVectors(t, plain, v)
	for _, p := range []*VectorProjection{plain, v} {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ps, pr := readFiles(t, plainDir)
	bs, br := readFiles(t, dir)
	if !bytes.Equal(ps, bs) || !bytes.Equal(pr, br) {
		t.Fatalf("%s: scan.bin or recs.bin differ from a plain build's", when)
	}
}

// compareVectors checks that two projections give the same digest and
// the same scores by id (ScoreVectors reads "ids").
func compareVectors(t *testing.T, want, got *VectorProjection) {
	t.Helper()
	dw, err := want.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dg, err := got.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if dw != dg {
		t.Fatal("digests differ")
	}
	var ids []string
	err = want.forEachMeta(func(id string, _ chunkMeta) { ids = append(ids, id) })
	if err != nil {
		t.Fatal(err)
	}
	q, err := want.opts.Embedder.Embed(context.Background(), []string{"the meeting about the garden"})
	if err != nil {
		t.Fatal(err)
	}
	hw, err := want.ScoreVectors(context.Background(), q[0], ids)
	if err != nil {
		t.Fatal(err)
	}
	hg, err := got.ScoreVectors(context.Background(), q[0], ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(hw) != len(ids) || fmt.Sprint(hw) != fmt.Sprint(hg) {
		t.Fatalf("scores by id: %d of %d chunks, equal %v", len(hg), len(ids), fmt.Sprint(hw) == fmt.Sprint(hg))
	}
}

// TestVectorsBulkKilled: a process killed (SIGKILL) after commits of a
// bulk build, before EndBulk, leaves "ids" without the chunks it stored
// and the mark; the next open rebuilds "ids" from "slots", so the
// projection equals one built without a bulk build up to the same
// checkpoint (ids, digest, scores by id, files), and the mark is gone.
func TestVectorsBulkKilled(t *testing.T) {
	projtest.SmallPendingWindow(t)
	evs := bulkEvents()
	last := len(evs) - len(evs)%400 // the killed process's last commit
	if dir := os.Getenv("UCL_TEST_VEC_BULK_KILL"); dir != "" {
		buildBulkVectors(t, dir, evs[:last], len(evs)/3, true, nil)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestVectorsBulkKilled$")
	cmd.Env = append(os.Environ(), "UCL_TEST_VEC_BULK_KILL="+dir)
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the building process was not killed: %v\n%s", err, out)
	}
	db, err := bolt.Open(filepath.Join(dir, "vectors.db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ids, stale := dumpIDs(t, db)
	db.Close()
	if !stale {
		t.Fatal("the killed bulk build left no mark")
	}
	plainDir := t.TempDir()
	plain := buildBulkVectors(t, plainDir, evs[:last], -1, false, nil)
	wantIDs, _ := dumpIDs(t, plain.db)
	if ids == wantIDs {
		t.Fatal("the killed bulk build had written every chunk to ids: nothing was deferred")
	}
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := v.Checkpoint(); cp.Seq != evs[last-1].Seq {
		t.Fatalf("reopened at seq %d, the last commit was %d", cp.Seq, evs[last-1].Seq)
	}
	samePlain(t, "after reopening", plain, plainDir, v, dir)
}

// TestVectorsBulkEndFailed: after an EndBulk that failed (the keys kept
// in memory are gone, the mark stays), the next commit rebuilds "ids"
// before it looks chunks up, so chunks the bulk build stored and the
// later events store again or remove keep their slots: the projection
// equals a plain build's.
func TestVectorsBulkEndFailed(t *testing.T) {
	projtest.SmallPendingWindow(t)
	evs := bulkEvents()
	cut := 2 * len(evs) / 3
	plainDir, dir := t.TempDir(), t.TempDir()
	plain := buildBulkVectors(t, plainDir, evs, -1, false, nil)
	v := buildBulkVectors(t, dir, evs[:cut], len(evs)/3, true, nil)
	if !v.idsStale {
		t.Fatal("the bulk build left nothing deferred")
	}
	v.bulk = nil // what a failed EndBulk leaves
	for i, ev := range evs[cut:] {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if (i+1)%300 == 0 || cut+i == len(evs)-1 {
			if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
		}
	}
	samePlain(t, "after the next commit", plain, plainDir, v, dir)
}
