package mirror

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"path/filepath"
	"testing"
)

// memLog is an in-memory stand-in for the log: records whose raw bytes
// embed the previous record's hash, so the hash chain is real.
type memLog struct{ recs []Record }

func newMemLog(n, size int) *memLog {
	l := &memLog{}
	l.append(n, size)
	return l
}

func (l *memLog) append(n, size int) {
	var prev Hash
	if len(l.recs) > 0 {
		prev = l.recs[len(l.recs)-1].Hash()
	}
	for i := 0; i < n; i++ {
		seq := uint64(len(l.recs) + 1)
		raw := make([]byte, 0, 32+size)
		raw = append(raw, prev[:]...)
		body := make([]byte, size)
		for j := range body {
			body[j] = byte(seq*131 + uint64(j))
		}
		copy(body, fmt.Sprintf("seq=%d;", seq))
		raw = append(raw, body...)
		r := Record{Seq: seq, Raw: raw}
		l.recs = append(l.recs, r)
		prev = r.Hash()
	}
}

func (l *memLog) source(from uint64, fn func(Record) error) error {
	if from == 0 {
		from = 1
	}
	for i := from - 1; i < uint64(len(l.recs)); i++ {
		if err := fn(l.recs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLog) head() uint64 { return uint64(len(l.recs)) }

// verifyChain is the kind of check the log package supplies: the first 32
// bytes of a record are its predecessor's hash.
func verifyChain(prev Hash, r Record) error {
	if len(r.Raw) < 32 || !bytes.Equal(r.Raw[:32], prev[:]) {
		return errors.New("prev hash in record does not match")
	}
	return nil
}

func rebuildAll(t *testing.T, c *arweave.Client, owner string, logID [16]byte, opt RebuildOptions) ([]Record, RebuildResult, error) {
	t.Helper()
	opt.Gateway, opt.Owner, opt.LogID = c, owner, logID
	if opt.VerifyRecord == nil {
		opt.VerifyRecord = verifyChain
	}
	var got []Record
	res, err := Rebuild(testCtx(t), opt, func(r Record) error {
		got = append(got, Record{Seq: r.Seq, Raw: bytes.Clone(r.Raw)})
		return nil
	})
	return got, res, err
}

func sameRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("record %d differs (seq %d vs %d)", i, got[i].Seq, want[i].Seq)
		}
	}
}

func newSyncer(t *testing.T, u arweave.Uploader, l *memLog, logID [16]byte, st *State, segBytes int) *Syncer {
	t.Helper()
	s, err := NewSyncer(SyncConfig{LogID: logID, Records: l.source, Gateway: clientOf(u), Uploader: u, State: st, SegmentBytes: segBytes, BatchBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func countSegments(t *testing.T, c *arweave.Client, logID [16]byte) int {
	t.Helper()
	found, err := FindSegments(testCtx(t), c, c.Wallet().Address(), logID, KindSegment, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(found)
}

// TestSyncRebuild pushes a log (both modes), checks pending vs confirmed
// bookkeeping, pushes again without duplicates, appends and pushes the
// delta, then rebuilds byte-identical records in seq order.
func TestSyncRebuild(t *testing.T) {
	for _, mode := range []string{"L1", "bundle"} {
		t.Run(mode, func(t *testing.T) {
			g := gateway(t)
			c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
			var u arweave.Uploader = arweave.NewL1Uploader(c)
			if mode == "bundle" {
				u = arweave.NewBundleUploader(c, BundleTags())
			}
			ctx := testCtx(t)
			logID := newLogID(t)
			l := newMemLog(300, 200)
			st := openTestState(t)
			s := newSyncer(t, u, l, logID, st, 8<<10)
			var progress []SyncProgress
			s.cfg.Progress = func(p SyncProgress) { progress = append(progress, p) }

			res, err := s.Push(ctx, l.head())
			if err != nil {
				t.Fatal(err)
			}
			if res.CoveredSeq != 300 || res.Uploaded == 0 || res.Adopted != 0 {
				t.Fatalf("first push: %+v", res)
			}
			if len(progress) == 0 || progress[len(progress)-1].CoveredSeq != 300 {
				t.Fatalf("progress %+v", progress)
			}
			n := countSegments(t, c, logID)
			if n != res.Uploaded {
				t.Fatalf("%d segments on the gateway, pushed %d", n, res.Uploaded)
			}
			sum, err := s.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if sum.SafeSeq != 0 || sum.CoveredSeq != 300 || len(sum.Unconfirmed) != n {
				t.Fatalf("before mining: %+v", sum)
			}
			// Rebuild sees the pending segments.
			got, rres, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got, l.recs)
			if rres.Pending != n {
				t.Fatalf("rebuild used %d pending segments, want %d", rres.Pending, n)
			}

			if err := g.Mine(1); err != nil {
				t.Fatal(err)
			}
			if sum, err = s.Refresh(ctx); err != nil || sum.SafeSeq != 300 || len(sum.Unconfirmed) != 0 {
				t.Fatalf("after mining: %+v %v", sum, err)
			}

			// Idempotent: a second push uploads nothing.
			res, err = s.Push(ctx, l.head())
			if err != nil || res.Uploaded != 0 {
				t.Fatalf("second push: %+v %v", res, err)
			}
			if m := countSegments(t, c, logID); m != n {
				t.Fatalf("second push made %d segments, had %d", m, n)
			}

			// Delta.
			l.append(50, 200)
			res, err = s.Push(ctx, l.head())
			if err != nil || res.Uploaded == 0 || res.CoveredSeq != 350 {
				t.Fatalf("delta push: %+v %v", res, err)
			}
			var prog []RebuildProgress
			got, rres, err = rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{Progress: func(p RebuildProgress) { prog = append(prog, p) }})
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got, l.recs)
			if rres.HeadHash != l.recs[349].Hash() || rres.LastSeq != 350 || len(prog) != rres.Segments {
				t.Fatalf("rebuild result %+v, %d progress calls", rres, len(prog))
			}
			// Rebuild from a later seq (as after a snapshot).
			got, _, err = rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{From: 101, FromPrevHash: l.recs[99].Hash()})
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got, l.recs[100:])
		})
	}
}

// TestSyncCrashBeforeBookkeeping: the gateway accepted the upload, then the
// process died. Whether the state kept the signed ids (status posting) or
// was lost entirely, the next push uploads nothing twice.
func TestSyncCrashBeforeBookkeeping(t *testing.T) {
	for _, tc := range []struct {
		name      string
		loseState bool
	}{{"state kept postings", false}, {"state lost", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
			ctx := testCtx(t)
			logID := newLogID(t)
			l := newMemLog(400, 300) // several 64 KiB batches of 8 KiB segments
			dir := t.TempDir()
			st, err := OpenState(filepath.Join(dir, "a.db"))
			if err != nil {
				t.Fatal(err)
			}
			s := newSyncer(t, arweave.NewL1Uploader(c), l, logID, st, 8<<10)
			crash := errors.New("simulated crash")
			s.afterPost = func() error { return crash }
			if _, err := s.Push(ctx, l.head()); !errors.Is(err, crash) {
				t.Fatalf("push: %v, want the simulated crash", err)
			}
			st.Close()
			uploaded := countSegments(t, c, logID)
			if uploaded == 0 {
				t.Fatal("nothing uploaded before the crash")
			}
			name := "a.db"
			if tc.loseState {
				name = "b.db"
			}
			st2, err := OpenState(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			if !tc.loseState {
				if m, _ := st2.Summary(logID); m.Posting != uploaded {
					t.Fatalf("state after crash: %+v, want %d postings", m, uploaded)
				}
			}
			s2 := newSyncer(t, arweave.NewL1Uploader(c), l, logID, st2, 8<<10)
			res, err := s2.Push(ctx, l.head())
			if err != nil {
				t.Fatal(err)
			}
			if tc.loseState && res.Adopted != uploaded {
				t.Fatalf("push after losing state: %+v, want the %d crashed segments adopted", res, uploaded)
			}
			if !tc.loseState && res.Resolved != uploaded {
				t.Fatalf("push after crash: %+v, want %d postings resolved", res, uploaded)
			}
			if res.Uploaded == 0 {
				t.Fatalf("second push uploaded nothing: %+v", res)
			}
			total := countSegments(t, c, logID)
			if total != uploaded+res.Uploaded {
				t.Fatalf("%d segments on the gateway, want %d + %d: a range was uploaded twice", total, uploaded, res.Uploaded)
			}
			got, rres, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got, l.recs)
			t.Logf("crash after %d segments; second push: %+v", uploaded, res)
			if rres.Duplicates != 0 {
				t.Fatalf("rebuild dropped %d duplicates", rres.Duplicates)
			}
		})
	}
}

// TestSyncManySegmentsPagination pushes more than 100 segments, so both the
// push's GraphQL scan and the rebuild page through `after` cursors.
func TestSyncManySegmentsPagination(t *testing.T) {
	g := gateway(t)
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(260, 100)
	st := openTestState(t)
	// Two records per segment: 130 segments, in bundles of 64 KiB.
	s := newSyncer(t, arweave.NewBundleUploader(c, BundleTags()), l, logID, st, 450)
	res, err := s.Push(ctx, l.head())
	if err != nil {
		t.Fatal(err)
	}
	if res.Uploaded <= 100 {
		t.Fatalf("only %d segments; the test needs > 100", res.Uploaded)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	if n := countSegments(t, c, logID); n != res.Uploaded {
		t.Fatalf("GraphQL returned %d of %d segments", n, res.Uploaded)
	}
	// A fresh state adopts all of them (scan across pages) and uploads none.
	s2 := newSyncer(t, arweave.NewBundleUploader(c, BundleTags()), l, logID, openTestState(t), 450)
	res2, err := s2.Push(ctx, l.head())
	if err != nil || res2.Uploaded != 0 || res2.Adopted != res.Uploaded {
		t.Fatalf("push with fresh state: %+v %v", res2, err)
	}
	got, rres, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, l.recs)
	if rres.Segments != res.Uploaded {
		t.Fatalf("rebuild used %d segments of %d", rres.Segments, res.Uploaded)
	}
}

// TestRebuildGapAndDuplicates uploads 1..10, a duplicate of it and 21..30
// (no 11..20): the gap is named; with AllowPartial 1..10 are yielded first.
func TestRebuildGapAndDuplicates(t *testing.T) {
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(40, 50)
	up := func(from, to uint64) {
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
		if _, err := c.Upload(ctx, data, m.Tags()); err != nil {
			t.Fatal(err)
		}
	}
	up(21, 30)
	up(1, 10)
	up(1, 10)
	up(35, 40)
	_, _, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
	var gap *GapError
	if !errors.As(err, &gap) || gap.From != 11 || gap.To != 20 || len(gap.More) != 1 || gap.More[0].From != 31 || gap.More[0].To != 34 {
		t.Fatalf("err = %v, want gap 11..20 (and 31..34)", err)
	}
	got, res, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{AllowPartial: true})
	if !errors.As(err, &gap) || gap.From != 11 {
		t.Fatalf("partial: err = %v, want the gap", err)
	}
	sameRecords(t, got, l.recs[:10])
	if res.Duplicates != 1 || res.LastSeq != 10 {
		t.Fatalf("partial result %+v", res)
	}
}

// TestRebuildRejectsBrokenContinuity: a segment whose prev hash does not
// link to the previous segment is rejected by id.
func TestRebuildRejectsBrokenContinuity(t *testing.T) {
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(20, 50)
	other := newMemLog(20, 51) // a different history
	d1, _ := EncodeSegment(logID, Hash{}, l.recs[:10])
	d2, _ := EncodeSegment(logID, other.recs[9].Hash(), other.recs[10:])
	if _, err := c.Upload(ctx, d1, SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: 10, HeadHash: l.recs[9].Hash()}.Tags()); err != nil {
		t.Fatal(err)
	}
	id2, err := c.Upload(ctx, d2, SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 11, LastSeq: 20, HeadHash: other.recs[19].Hash()}.Tags())
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{VerifyRecord: func(Hash, Record) error { return nil }})
	var rej *TxRejectedError
	if !errors.As(err, &rej) || rej.TxID != id2 || !errors.Is(err, ErrContinuity) {
		t.Fatalf("err = %v, want %s rejected for continuity", err, id2)
	}
}

// TestSyncAdoptsMidBatch: the gateway already holds one segment from the
// middle of what the next push sends as one batch (an earlier push posted
// it and lost the answer, and the state is gone). The push posts the
// segments before it, adopts it and posts the rest: every range on the
// gateway once, the covered prefix in order, a rebuild exact. Adopting
// only at a batch's start used to fail here with "records not contiguous".
func TestSyncAdoptsMidBatch(t *testing.T) {
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(400, 300) // 8 KiB segments, batches of 64 KiB
	seger := NewSegmenter(logID, Hash{}, 8<<10)
	var segs []*EncodedSegment
	for _, r := range l.recs {
		seg, err := seger.Add(r)
		if err != nil {
			t.Fatal(err)
		}
		if seg != nil {
			segs = append(segs, seg)
		}
	}
	if len(segs) < 6 {
		t.Fatalf("only %d segments: the test needs a batch with one in its middle", len(segs))
	}
	mid := segs[2]
	meta := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: mid.FirstSeq, LastSeq: mid.LastSeq, HeadHash: mid.HeadHash}
	if _, err := arweave.UploadAll(ctx, arweave.NewL1Uploader(c), []arweave.Upload{meta.Upload(mid.Data)}); err != nil {
		t.Fatal(err)
	}
	s := newSyncer(t, arweave.NewL1Uploader(c), l, logID, openTestState(t), 8<<10)
	res, err := s.Push(ctx, l.head())
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if res.Adopted != 1 || res.CoveredSeq != l.head() {
		t.Fatalf("push: %+v, want segment %d..%d adopted and everything covered", res, mid.FirstSeq, mid.LastSeq)
	}
	if total := countSegments(t, c, logID); total != res.Uploaded+1 {
		t.Fatalf("%d segments on the gateway, want %d uploaded + 1 adopted: a range was posted twice", total, res.Uploaded)
	}
	got, rres, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, l.recs)
	if rres.Duplicates != 0 {
		t.Fatalf("rebuild dropped %d duplicates", rres.Duplicates)
	}
}
