package projtest

import (
	"encoding/hex"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Container is implemented by projections that can say whether they hold a
// chunk; Run then checks tombstoned chunks are gone and live ones present.
type Container interface {
	Contains(chunkID string) (bool, error)
}

// Counter is implemented by projections that can count their live chunks;
// Run then checks the count against the reference model.
type Counter interface {
	Count() (int, error)
}

// SuiteEvents is the number of events Run applies (small enough for slow
// projections, large enough to hold every kind of event several times).
const SuiteEvents = 500

// Run is the conformance suite for a projections.Projection. open must
// open (creating if needed) the projection stored in dir; it is called many
// times on the same dir, after Close.
func Run(t *testing.T, open func(t *testing.T, dir string) projections.Projection) {
	seed := int64(20260101)
	t.Logf("projtest seed %d", seed)
	// The full mix with the conversation model: edits (re-chunks with
	// removes), tool calls and supersedes must conform like stores.
	evs := ConvEvents(seed, SuiteEvents)

	fresh := func(t *testing.T) [32]byte {
		p := open(t, t.TempDir())
		defer p.Close()
		return digest(t, p)
	}

	// oneShot is the reference digest: everything in one pass.
	oneShotDir := t.TempDir()
	p := open(t, oneShotDir)
	applyAll(t, p, evs)
	commit(t, p, evs[len(evs)-1])
	want := digest(t, p)
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	empty := fresh(t)
	if want == empty {
		t.Fatalf("digest after %d events equals the empty digest %x", len(evs), empty)
	}

	t.Run("DigestStableAcrossReopen", func(t *testing.T) {
		p := open(t, oneShotDir)
		defer p.Close()
		if got := digest(t, p); got != want {
			t.Fatalf("digest after reopen %x, want %x", got, want)
		}
		cp, err := p.Checkpoint()
		if err != nil {
			t.Fatalf("checkpoint: %v", err)
		}
		last := evs[len(evs)-1]
		if cp.Seq != last.Seq || cp.Hash != last.Hash {
			t.Fatalf("checkpoint after reopen %d/%s, want %d/%s", cp.Seq, cp.Hash, last.Seq, last.Hash)
		}
	})

	t.Run("RebuildTwice", func(t *testing.T) {
		p := open(t, t.TempDir())
		defer p.Close()
		for round := 0; round < 2; round++ {
			applyAll(t, p, evs)
			commit(t, p, evs[len(evs)-1])
			if got := digest(t, p); got != want {
				t.Fatalf("round %d: digest %x, want %x", round, got, want)
			}
			if err := p.Reset(); err != nil {
				t.Fatalf("reset: %v", err)
			}
		}
	})

	t.Run("ResetEqualsFresh", func(t *testing.T) {
		dir := t.TempDir()
		p := open(t, dir)
		applyAll(t, p, evs[:len(evs)/2])
		commit(t, p, evs[len(evs)/2-1])
		if err := p.Reset(); err != nil {
			t.Fatalf("reset: %v", err)
		}
		if got := digest(t, p); got != empty {
			t.Fatalf("digest after reset %x, want fresh %x", got, empty)
		}
		if cp, err := p.Checkpoint(); err != nil || cp != (projections.Checkpoint{}) {
			t.Fatalf("checkpoint after reset = %+v, %v; want zero", cp, err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		p = open(t, dir)
		defer p.Close()
		if got := digest(t, p); got != empty {
			t.Fatalf("digest after reset+reopen %x, want fresh %x", got, empty)
		}
		if cp, err := p.Checkpoint(); err != nil || cp != (projections.Checkpoint{}) {
			t.Fatalf("checkpoint after reset+reopen = %+v, %v; want zero", cp, err)
		}
	})

	t.Run("SmallBatchesWithReopen", func(t *testing.T) {
		dir := t.TempDir()
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < len(evs); {
			n := min(1+r.Intn(60), len(evs)-i)
			p := open(t, dir)
			cp, err := p.Checkpoint()
			if err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			if i > 0 && (cp.Seq != evs[i-1].Seq || cp.Hash != evs[i-1].Hash) {
				t.Fatalf("checkpoint after reopen %d, want %d", cp.Seq, evs[i-1].Seq)
			}
			applyAll(t, p, evs[i:i+n])
			commit(t, p, evs[i+n-1])
			if err := p.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			i += n
		}
		p := open(t, dir)
		defer p.Close()
		if got := digest(t, p); got != want {
			t.Fatalf("digest after batches %x, want one-pass %x", got, want)
		}
	})

	// Crash between Apply and Commit, two ways: the data of events after
	// the checkpoint became durable (commit with a lagging checkpoint), or
	// it was lost (close without commit). Either way the projection resumes
	// from its checkpoint and ends at the one-pass digest.
	for _, cut := range []struct{ cp, applied int }{{0, 40}, {100, 180}, {250, 251}, {300, len(evs)}} {
		t.Run(fmt.Sprintf("RedeliveryDurable/cp=%d,applied=%d", cut.cp, cut.applied), func(t *testing.T) {
			dir := t.TempDir()
			p := open(t, dir)
			applyAll(t, p, evs[:cut.applied])
			if cut.cp == 0 {
				commit0(t, p)
			} else {
				commit(t, p, evs[cut.cp-1])
			}
			p.Close()
			p = open(t, dir)
			defer p.Close()
			cp, err := p.Checkpoint()
			if err != nil || cp.Seq != uint64(cut.cp) {
				t.Fatalf("checkpoint = %d, %v; want %d", cp.Seq, err, cut.cp)
			}
			applyAll(t, p, evs[cut.cp:])
			commit(t, p, evs[len(evs)-1])
			if got := digest(t, p); got != want {
				t.Fatalf("cp %d applied %d: digest %x, want %x", cut.cp, cut.applied, got, want)
			}
		})
		t.Run(fmt.Sprintf("RedeliveryLost/cp=%d,applied=%d", cut.cp, cut.applied), func(t *testing.T) {
			dir := t.TempDir()
			p := open(t, dir)
			applyAll(t, p, evs[:cut.cp])
			if cut.cp > 0 {
				commit(t, p, evs[cut.cp-1])
			}
			applyAll(t, p, evs[cut.cp:cut.applied])
			p.Close() // no commit
			p = open(t, dir)
			defer p.Close()
			cp, err := p.Checkpoint()
			if err != nil || cp.Seq != uint64(cut.cp) {
				t.Fatalf("checkpoint = %d, %v; want %d", cp.Seq, err, cut.cp)
			}
			applyAll(t, p, evs[cut.cp:])
			commit(t, p, evs[len(evs)-1])
			if got := digest(t, p); got != want {
				t.Fatalf("cp %d applied %d: digest %x, want %x", cut.cp, cut.applied, got, want)
			}
		})
	}

	t.Run("IgnoresShareAndRekey", func(t *testing.T) {
		var grantID log.ID
		noise, err := Chain(
			&log.ShareGrant{Grantee: "addr-1", ShareKey: []byte("k"), Sessions: []string{"s"}},
			&log.ShareRevoke{Grant: grantID, Grantee: "addr-1"},
			&log.Rekey{Epoch: 2, Keys: []log.WrappedKey{{Seq: 1}}},
		)
		if err != nil {
			t.Fatal(err)
		}
		p := open(t, t.TempDir())
		defer p.Close()
		applyAll(t, p, noise)
		commit(t, p, noise[len(noise)-1])
		if got := digest(t, p); got != empty {
			t.Fatalf("digest after share/rekey events %x, want empty %x", got, empty)
		}
	})

	t.Run("Tombstones", func(t *testing.T) {
		p := open(t, oneShotDir)
		defer p.Close()
		checkLive(t, p, evs)
	})

	// A session stored and then tombstoned whole, by session, by time
	// range and by ids: afterwards nothing of it may remain, and a chunk
	// stored after the tombstone (same session) is live.
	t.Run("TombstoneForms", func(t *testing.T) {
		mk := func(id, session string, tm int64) *log.Store {
			return &log.Store{ChunkID: id, Kind: log.KindConversation, Session: session, Role: "user", Content: "Hello there " + id + ".", Time: tm}
		}
		bodies := []log.Body{
			mk("a1", "A", 1000), mk("a2", "A", 2000), mk("b1", "B", 1500), mk("b2", "B", 2500),
			mk("c1", "C", 5000), mk("c2", "C", 6000), mk("k1", "", 1500),
			&log.Tombstone{Session: "A", Reason: "session"},
			&log.Tombstone{From: 1400, To: 1600, Reason: "range"}, // b1, k1
			&log.Tombstone{Session: "C", From: 5500, To: 7000},    // c2
			&log.Tombstone{Chunks: []string{"b2", "missing"}},     // b2
			mk("a3", "A", 1000), // after: live
			&log.Tombstone{Chunks: []string{"a3"}, Session: "nowhere"}, // ids are a union
			mk("a3", "A", 3000), // re-stored: live
		}
		evs, err := Chain(bodies...)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"a3", "c1"}
		if got := LiveIDs(evs); !equal(got, want) {
			t.Fatalf("reference model keeps %v, want %v", got, want)
		}
		p := open(t, t.TempDir())
		defer p.Close()
		applyAll(t, p, evs)
		commit(t, p, evs[len(evs)-1])
		checkLive(t, p, evs)
	})
}

func checkLive(t *testing.T, p projections.Projection, evs []*log.Event) {
	t.Helper()
	live := Live(evs)
	nLive := 0
	c, hasContains := p.(Container)
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if live[id] {
			nLive++
		}
		if !hasContains {
			continue
		}
		got, err := c.Contains(id)
		if err != nil {
			t.Fatalf("contains %q: %v", id, err)
		}
		if got != live[id] {
			t.Errorf("contains %q = %v, want %v", id, got, live[id])
		}
	}
	if cn, ok := p.(Counter); ok {
		n, err := cn.Count()
		if err != nil {
			t.Fatalf("count: %v", err)
		}
		if n != nLive {
			t.Errorf("count = %d, want %d live of %d stored", n, nLive, len(live))
		}
	}
	if !hasContains {
		t.Logf("%s does not implement projtest.Container: tombstones checked by count only", p.Name())
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func applyAll(t *testing.T, p projections.Projection, evs []*log.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := p.Apply(ev); err != nil {
			t.Fatalf("apply seq %d (%s): %v", ev.Seq, ev.Type, err)
		}
	}
}

func commit(t *testing.T, p projections.Projection, last *log.Event) {
	t.Helper()
	if err := p.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
		t.Fatalf("commit at %d: %v", last.Seq, err)
	}
}

func commit0(t *testing.T, p projections.Projection) {
	t.Helper()
	if err := p.Commit(projections.Checkpoint{}); err != nil {
		t.Fatalf("commit at 0: %v", err)
	}
}

func digest(t *testing.T, p projections.Projection) [32]byte {
	t.Helper()
	d, err := p.Digest()
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return d
}

// DigestHex is a convenience for logs and reports.
func DigestHex(d [32]byte) string { return hex.EncodeToString(d[:]) }

// SmallPendingWindow makes the deferred keys of a bulk build go in
// windows of 16 (projections.PendingWindow) for the test t: its builds
// write many.
func SmallPendingWindow(t testing.TB) {
	w := projections.PendingWindow
	projections.PendingWindow = 16
	t.Cleanup(func() { projections.PendingWindow = w })
}
