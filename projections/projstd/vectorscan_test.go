package projstd

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func buildVectors(t *testing.T, dir string, evs []*log.Event, every int) *VectorProjection {
	t.Helper()
	v, err := OpenVectors(dir, VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if (i+1)%every == 0 || i == len(evs)-1 {
			if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return v
}

// TestScanFileFollowsOperations: scan.bin and recs.bin are functions of
// the events, not of the commit boundaries (tombstones and edits among
// them), a search through them answers what the loaded exact index
// answers, and verify (Digest) finds a damaged slot or record.
func TestScanFileFollowsOperations(t *testing.T) {
	evs := projtest.ConvEvents(3, 300)
	var files, recFiles [][]byte
	var digests [][32]byte
	var dirs []string
	for _, every := range []int{1000, 37, 9} {
		dir := t.TempDir()
		v := buildVectors(t, dir, evs, every)
		d, err := v.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if v.idx != nil {
			t.Fatal("Digest loaded the index")
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, scanFileName))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := os.ReadFile(filepath.Join(dir, recsFileName))
		if err != nil {
			t.Fatal(err)
		}
		files, digests, dirs = append(files, b), append(digests, d), append(dirs, dir)
		recFiles = append(recFiles, rb)
	}
	for i := 1; i < len(files); i++ {
		if !bytes.Equal(files[i], files[0]) || !bytes.Equal(recFiles[i], recFiles[0]) || digests[i] != digests[0] {
			t.Fatalf("commit pattern %d: scan.bin, recs.bin or digest differs from one commit's", i)
		}
	}
	if want := scanHeader + (len(files[0])-scanHeader)/(8+384)*(4+384); len(recFiles[0]) != want {
		t.Fatalf("recs.bin: %d bytes, want %d", len(recFiles[0]), want)
	}
	v, err := OpenVectors(dirs[0], VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.next <= uint64(v.live) {
		t.Fatalf("%d slots for %d live vectors: the events removed nothing", v.next, v.live)
	}
	ctx := context.Background()
	r := rand.New(rand.NewSource(5))
	var scanned [][]any
	for i := 0; i < 20; i++ {
		q := projtest.QueryText(r)
		hits, err := v.SearchText(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		scanned = append(scanned, []any{q, hits})
	}
	if v.idx != nil {
		t.Fatal("a search loaded the index")
	}
	if _, err := v.index(); err != nil {
		t.Fatal(err)
	}
	nonEmpty := 0
	for _, s := range scanned {
		hits, err := v.SearchText(ctx, s[0].(string), 10)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(hits, s[1]) {
			t.Fatalf("%q: scan.bin gives %v, the exact index %v", s[0], s[1], hits)
		}
		if len(hits) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 10 {
		t.Fatalf("only %d of 20 queries hit", nonEmpty)
	}
	v.Close()

	// One flipped code byte in a live slot: verify fails as damage.
	path := filepath.Join(dirs[0], scanFileName)
	b := files[0]
	flipped := false
	for s := 0; s < len(b[scanHeader:])/(8+384); s++ {
		off := scanHeader + s*(8+384)
		if !bytes.Equal(b[off:off+8], make([]byte, 8)) {
			b[off+8+5] ^= 0x01
			flipped = true
			break
		}
	}
	if !flipped {
		t.Fatal("no live slot")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err = OpenVectors(dirs[0], VectorOptions{}); err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Digest(); err == nil {
		t.Fatal("a damaged slot verified")
	} else if _, ok := projections.Damaged(err); !ok {
		t.Fatalf("damaged slot: %v, not damage", err)
	}

	// One changed code byte in a live record (slot intact): the same.
	if _, err := os.Stat(filepath.Join(dirs[1], projections.DamageMarker)); err == nil {
		t.Fatal("flagged before the damage")
	}
	rb := recFiles[1]
	changed := false
	for s := 0; s < len(rb[scanHeader:])/(4+384); s++ {
		off := scanHeader + s*(4+384)
		if !bytes.Equal(rb[off:off+4], make([]byte, 4)) {
			rb[off+4+5] ^= 0x40
			changed = true
			break
		}
	}
	if !changed {
		t.Fatal("no live record")
	}
	if err := os.WriteFile(filepath.Join(dirs[1], recsFileName), rb, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := OpenVectors(dirs[1], VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Digest(); err == nil {
		t.Fatal("a damaged record verified")
	} else if _, ok := projections.Damaged(err); !ok {
		t.Fatalf("damaged record: %v, not damage", err)
	}
	// A file cut short of the committed slots does not open.
	v.Close()
	if err := os.Truncate(path, int64(len(b)-1)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenVectors(dirs[0], VectorOptions{}); err == nil {
		t.Fatal("a short scan.bin opened")
	}
}

// TestVectorMetaLoadedOnDemand: a catch-up of stores keeps no chunk
// metadata in memory; a tombstone in the same batch loads it, pending
// stores included, and removes the stores it matches before they are
// committed; a later batch's tombstone finds the committed ones.
func TestVectorMetaLoadedOnDemand(t *testing.T) {
	store := func(id, session, text string) *log.Store {
		return &log.Store{ChunkID: id, Kind: log.KindConversation, Session: session, Content: text, Time: projtest.BaseTime}
	}
	evs, err := projtest.Chain(
		store("a1", "s1", "the cello practice ran long"),
		store("b1", "s2", "tomato garden in the spring"),
		store("c1", "s3", "database migration rollback"),
		&log.Tombstone{Session: "s1"},
		store("d1", "s2", "more tomatoes in the garden"),
		&log.Tombstone{Session: "s2"},
	)
	if err != nil {
		t.Fatal(err)
	}
	v, err := OpenVectors(t.TempDir(), VectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	commit := func(ev *log.Event) {
		if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range evs[:3] {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if v.meta != nil {
		t.Fatal("stores loaded the chunk metadata")
	}
	if err := v.Apply(evs[3]); err != nil { // tombstone of s1, a1 pending
		t.Fatal(err)
	}
	commit(evs[3])
	if v.live != 2 {
		t.Fatalf("%d live after the tombstone of s1, want 2 (b1, c1)", v.live)
	}
	for _, ev := range evs[4:] {
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	commit(evs[5])
	if v.live != 1 {
		t.Fatalf("%d live after the tombstone of s2, want 1 (c1)", v.live)
	}
	hits, err := v.SearchText(context.Background(), "garden tomato cello database", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != "c1" {
		t.Fatalf("hits %v, want c1 alone", hits)
	}
}

// TestResidentSlotsFollowCommits: a process's second full search loads
// the resident slots; commits with stores, edits and tombstones keep them
// equal to scan.bin and the stored records, searches through them answer
// what the file scan answers, and they are dropped when they outgrow
// ResidentBytes.
func TestResidentSlotsFollowCommits(t *testing.T) {
	evs := projtest.ConvEvents(3, 300)
	half := len(evs) / 2
	dir := t.TempDir()
	v := buildVectors(t, dir, evs[:half], 50)
	defer v.Close()
	ctx := context.Background()
	r := rand.New(rand.NewSource(9))
	var qs []string
	for i := 0; i < 12; i++ {
		qs = append(qs, projtest.QueryText(r))
	}
	same := func(when string) {
		t.Helper()
		if v.res == nil {
			t.Fatalf("%s: no resident slots", when)
		}
		b, err := os.ReadFile(filepath.Join(dir, scanFileName))
		if err != nil {
			t.Fatal(err)
		}
		if want := b[scanHeader : scanHeader+int(v.next)*(8+384)]; !bytes.Equal(v.res.slots, want) {
			t.Fatalf("%s: resident slots differ from scan.bin", when)
		}
		fresh, err := v.loadResident()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(v.res.recs, fresh.recs) {
			t.Fatalf("%s: resident records differ from the stored ones", when)
		}
		for s := uint64(0); s < v.next; s++ {
			if fresh.slots[s*(8+384)] != 0 && !bytes.Equal(v.res.key(s), fresh.key(s)) {
				t.Fatalf("%s: slot %d: key %x, stored %x", when, s, v.res.key(s), fresh.key(s))
			}
		}
		hit := 0
		for _, q := range qs {
			got, err := v.SearchText(ctx, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			qv, err := v.EmbedQuery(ctx, q, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := v.scanSearch(qv, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %q: resident %v, scan.bin %v", when, q, got, want)
			}
			if len(got) > 0 {
				hit++
			}
		}
		if hit < len(qs)/2 {
			t.Fatalf("%s: only %d of %d queries hit", when, hit, len(qs))
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := v.SearchText(ctx, qs[i], 10); err != nil {
			t.Fatal(err)
		}
	}
	same("loaded")
	dels := 0
	for i, ev := range evs[half:] {
		if _, ok := ev.Body.(*log.Tombstone); ok {
			dels++
		}
		if err := v.Apply(ev); err != nil {
			t.Fatal(err)
		}
		if (i+1)%23 == 0 || half+i == len(evs)-1 {
			if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
				t.Fatal(err)
			}
			same(fmt.Sprintf("after seq %d", ev.Seq))
		}
	}
	if dels == 0 {
		t.Fatal("no tombstone after the load")
	}
	// Outgrowing the bound drops them; the file answers.
	v.opts.ResidentBytes = int64(v.next) * residentPerSlot(384)
	ev := projtest.Generate(projtest.Config{Seed: 3, N: 1, StoresOnly: true})[0]
	ev.Seq = evs[len(evs)-1].Seq + 1
	if err := v.Apply(ev); err != nil {
		t.Fatal(err)
	}
	if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
		t.Fatal(err)
	}
	if v.res != nil {
		t.Fatal("resident slots kept beyond ResidentBytes")
	}
	if _, err := v.SearchText(ctx, qs[0], 10); err != nil || v.res != nil {
		t.Fatalf("a search beyond ResidentBytes: %v, resident %v", err, v.res != nil)
	}
}

// TestResidentLoadBesideSearches: searches side by side (as the engine
// runs them, under its shared lock) while one of them loads the resident
// slots all answer what the file scan answers.
func TestResidentLoadBesideSearches(t *testing.T) {
	v := buildVectors(t, t.TempDir(), projtest.ConvEvents(3, 300), 100)
	defer v.Close()
	ctx := context.Background()
	r := rand.New(rand.NewSource(12))
	var qs [][]float32
	var want [][]vector.Hit
	for i := 0; i < 8; i++ {
		q, err := v.EmbedQuery(ctx, projtest.QueryText(r), nil)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := v.scanSearch(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		qs, want = append(qs, q), append(want, hits)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(qs))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range qs {
				j := (i + g) % len(qs)
				hits, err := v.SearchVector(ctx, qs[j], 10)
				if err == nil && !reflect.DeepEqual(hits, want[j]) {
					err = fmt.Errorf("query %d: %v, the file scan %v", j, hits, want[j])
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v.res == nil {
		t.Fatal("no resident slots after 32 searches")
	}
}
