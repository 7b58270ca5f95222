package mirror

import (
	"errors"
	"github.com/unlimitedcontext/ucl/arweave"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// forkAt returns a copy of l's first n records followed by k records whose
// content differs from l's (another history sharing the prefix).
func (l *memLog) forkAt(n, k int) *memLog {
	f := &memLog{recs: slices.Clone(l.recs[:n])}
	f.append(k, 77)
	return f
}

// TestSyncPushRefusesLocalLogDivergedFromMirror: the log was cut below the
// mirrored seq (torn-tail repair) and then grew again with new events. Push
// said "up to date" while the log was shorter, and then uploaded new
// segments on top of the diverged chain. It must refuse, naming the seq,
// both hashes and the transaction, and upload nothing.
func TestSyncPushRefusesLocalLogDivergedFromMirror(t *testing.T) {
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(40, 200)
	st := openTestState(t)
	if _, err := newSyncer(t, arweave.NewL1Uploader(c), l, logID, st, 2<<10).Push(ctx, l.head()); err != nil {
		t.Fatal(err)
	}
	before := countSegments(t, c, logID)
	segs, err := st.Segments(logID)
	if err != nil {
		t.Fatal(err)
	}
	lastTx := segs[len(segs)-1].TxID

	cut := &memLog{recs: slices.Clone(l.recs[:30])}
	_, err = newSyncer(t, arweave.NewL1Uploader(c), cut, logID, st, 2<<10).Push(ctx, cut.head())
	var de *DivergedError
	if !errors.As(err, &de) || !errors.Is(err, ErrDiverged) {
		t.Fatalf("push of a log cut to 30 below mirrored 40: %v, want a DivergedError", err)
	}
	if de.Seq != 40 || de.LocalHead != 30 || de.TxID != lastTx || de.MirroredHash != l.recs[39].Hash() {
		t.Fatalf("cut: %+v", de)
	}

	grown := l.forkAt(30, 15) // seqs 31..45 reused by new events
	_, err = newSyncer(t, arweave.NewL1Uploader(c), grown, logID, st, 2<<10).Push(ctx, grown.head())
	if !errors.As(err, &de) {
		t.Fatalf("push of a regrown log: %v, want a DivergedError", err)
	}
	if de.Seq != 40 || de.LocalHash != grown.recs[39].Hash() || de.MirroredHash != l.recs[39].Hash() || de.TxID != lastTx {
		t.Fatalf("regrown: %+v", de)
	}
	if msg := err.Error(); !strings.Contains(msg, "seq 40") || !strings.Contains(msg, lastTx) {
		t.Fatalf("message %q does not name the seq and the transaction", msg)
	}
	if n := countSegments(t, c, logID); n != before {
		t.Fatalf("%d segments on the gateway after the refused push, had %d", n, before)
	}
}

// TestSyncPushRefusesRangeAlreadyOnArweaveFromAnotherBranch: a device
// restored from an older backup appends new events and pushes. Arweave
// already holds those seqs from the original device; uploading would fork
// the permanent mirror, so push must refuse and upload nothing.
func TestSyncPushRefusesRangeAlreadyOnArweaveFromAnotherBranch(t *testing.T) {
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	orig := newMemLog(100, 200)
	// The original device pushes 1..60, is backed up (log and mirror
	// state), then pushes 61..100.
	dir := t.TempDir()
	statePath := filepath.Join(dir, "mirror.db")
	st, err := OpenState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	part := &memLog{recs: orig.recs[:60]}
	if _, err := newSyncer(t, arweave.NewL1Uploader(c), part, logID, st, 4<<10).Push(ctx, part.head()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if st, err = OpenState(statePath); err != nil {
		t.Fatal(err)
	}
	if _, err := newSyncer(t, arweave.NewL1Uploader(c), orig, logID, st, 4<<10).Push(ctx, orig.head()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	before := countSegments(t, c, logID)
	for _, tc := range []struct {
		name       string
		restore    *memLog
		keepBackup bool // the restored device has the backed-up mirror state
	}{
		{"restored log shorter than the mirror, state lost", orig.forkAt(60, 30), false},
		{"restored log longer than the mirror, state lost", orig.forkAt(60, 70), false},
		{"restored log and mirror state from the backup", orig.forkAt(60, 30), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rst := openTestState(t)
			if tc.keepBackup {
				p := filepath.Join(t.TempDir(), "mirror.db")
				if err := os.WriteFile(p, backup, 0o600); err != nil {
					t.Fatal(err)
				}
				if rst, err = OpenState(p); err != nil {
					t.Fatal(err)
				}
				defer rst.Close()
				if sum, err := rst.Summary(logID); err != nil || sum.CoveredSeq != 60 {
					t.Fatalf("backed-up state covers %d (%v), want 60", sum.CoveredSeq, err)
				}
			}
			_, err := newSyncer(t, arweave.NewL1Uploader(c), tc.restore, logID, rst, 4<<10).Push(ctx, tc.restore.head())
			var de *DivergedError
			if !errors.As(err, &de) || !errors.Is(err, ErrDiverged) {
				t.Fatalf("push: %v, want a DivergedError", err)
			}
			if de.TxID == "" || de.Seq <= 60 || de.First <= 60 || de.Last < de.First {
				t.Fatalf("diverged error does not name the conflicting segment: %+v", de)
			}
			if n := countSegments(t, c, logID); n != before {
				t.Fatalf("%d segments on the gateway after the refused push, had %d", n, before)
			}
		})
	}
}

// TestRebuildRefusesForkUnlessBranchChosen: two devices uploaded different
// events for seqs 11.. on top of a shared 1..10. Rebuild silently picked
// the longer one; it must name both transactions and refuse, and follow the
// chosen branch when told.
func TestRebuildRefusesForkUnlessBranchChosen(t *testing.T) {
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	a := newMemLog(30, 50)
	b := a.forkAt(10, 10)
	up := func(l *memLog, from, to uint64) string {
		t.Helper()
		recs := l.recs[from-1 : to]
		var prev Hash
		if from > 1 {
			prev = l.recs[from-2].Hash()
		}
		data, err := EncodeSegment(logID, prev, recs)
		if err != nil {
			t.Fatal(err)
		}
		m := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: from, LastSeq: to, HeadHash: recs[len(recs)-1].Hash()}
		id, err := c.Upload(ctx, data, m.Tags())
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	up(a, 1, 10)
	idA := up(a, 11, 30)
	idB := up(b, 11, 20)

	_, _, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
	var fe *ForkError
	if !errors.As(err, &fe) || !errors.Is(err, ErrForked) {
		t.Fatalf("rebuild of a forked log: %v, want a ForkError", err)
	}
	ids := []string{fe.Branches[0].TxID, fe.Branches[1].TxID}
	slices.Sort(ids)
	want := []string{idA, idB}
	slices.Sort(want)
	if !slices.Equal(ids, want) || fe.From != 11 || fe.To != 20 {
		t.Fatalf("fork error %+v, want %v over 11..20", fe, want)
	}
	if msg := err.Error(); !strings.Contains(msg, idA) || !strings.Contains(msg, idB) {
		t.Fatalf("message %q does not name both transactions", msg)
	}

	got, res, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{Branch: idA})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, a.recs)
	if len(res.SetAside) != 1 || res.SetAside[0].TxID != idB {
		t.Fatalf("branch A: set aside %+v, want %s", res.SetAside, idB)
	}
	got, res, err = rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{Branch: idB})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, b.recs)
	if len(res.SetAside) != 1 || res.SetAside[0].TxID != idA {
		t.Fatalf("branch B: set aside %+v, want %s", res.SetAside, idA)
	}
	if _, _, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{Branch: strings.Repeat("x", 43)}); !errors.Is(err, ErrBranchNotFound) {
		t.Fatalf("unknown branch: %v, want ErrBranchNotFound", err)
	}
}
