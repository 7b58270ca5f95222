package mirror

import (
	"context"
	"errors"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"sort"
	"time"
)

// RecordSource yields the log's records with seq >= from in seq order,
// calling fn for each until fn returns an error (which it returns) or the log
// ends. The log package's replay fits this shape.
type RecordSource func(from uint64, fn func(Record) error) error

// SyncConfig configures a Syncer.
type SyncConfig struct {
	LogID   [16]byte
	Records RecordSource
	// Gateway is where the log is mirrored; its Address signs the segments.
	Gateway Gateway
	// Uploader posts batches of segments to Gateway: Uploads(c, bundle).
	Uploader arweave.Uploader
	State    *State
	// SegmentBytes caps a segment (default DefaultSegmentBytes).
	SegmentBytes int
	// BatchBytes caps the segment bytes handed to the uploader at once; with
	// bundles it is the bundle size (default 2 MiB). L1 uploads post one
	// segment per transaction regardless.
	BatchBytes int
	// Progress, if set, is called after each batch and at the end.
	Progress func(SyncProgress)
	// MaxPages bounds the GraphQL pages of the scan for segments already on
	// the gateway. 0 derives it from the push: 10 + 2 pages per 100 seqs up
	// to head (room for one segment per seq, twice over), at least 100 so
	// that a log far behind the mirror still sees the mirror's segments and
	// is refused as diverged.
	MaxPages int
	// Timeout, if set, bounds a whole Push; running out fails with
	// ErrTimeout (postings already recorded are resolved by the next Push).
	Timeout time.Duration
	// RecheckSubmitted makes Push also ask about segments already
	// submitted but not confirmed, and upload again those that Gateway
	// reports unknown. Through a bundler an accepted item can still be lost
	// (the bundler acknowledged it and never bundled it); Gateway.Status
	// then says not found only when neither the gateway nor the bundler
	// holds it.
	RecheckSubmitted bool
}

// SyncProgress reports a push in flight.
type SyncProgress struct {
	HeadSeq     uint64 // target
	CoveredSeq  uint64 // every seq up to here is submitted or confirmed
	Uploaded    int    // segments uploaded by this push
	Adopted     int    // segments found already on the gateway
	BytesPosted int64  // segment bytes posted by this push
}

// SyncResult is the outcome of Push.
type SyncResult struct {
	SyncProgress
	Resolved int // postings from an earlier run resolved (accepted or dropped)
}

// Syncer pushes a log to Arweave, resumably and idempotently (see the
// package doc). It is not safe for concurrent Push calls.
type Syncer struct {
	cfg       SyncConfig
	g         Gateway
	afterPost func() error // tests only
}

// NewSyncer validates cfg and returns a Syncer.
func NewSyncer(cfg SyncConfig) (*Syncer, error) {
	if cfg.Records == nil || cfg.Gateway == nil || cfg.Uploader == nil || cfg.State == nil {
		return nil, errors.New("new syncer: Records, Gateway, Uploader and State are required")
	}
	if cfg.Gateway == nil || cfg.Gateway.Address() == "" {
		return nil, fmt.Errorf("new syncer: %w", arweave.ErrNoWallet)
	}
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = DefaultSegmentBytes
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = 2 << 20
	}
	return &Syncer{cfg: cfg, g: cfg.Gateway}, nil
}

var errStop = errors.New("stop")

// ErrDiverged is returned (inside a *DivergedError) when the local log no
// longer agrees with what is mirrored on Arweave: the event at a mirrored
// seq has another hash locally, the local log ends before a mirrored seq,
// or the gateway already holds segments of another history for seqs this
// push would upload. Pushing would fork the permanent mirror.
var ErrDiverged = errors.New("arweave: local log diverged from the Arweave mirror")

// DivergedError names where the local log and the mirror disagree. It
// unwraps to ErrDiverged.
type DivergedError struct {
	Seq          uint64 // seq at which they disagree
	LocalHead    uint64 // head seq the push was asked to mirror
	LocalHash    Hash   // local event hash at Seq; zero when the local log does not reach Seq
	MirroredHash Hash   // hash the mirror holds for Seq
	TxID         string // transaction holding the mirrored event
	First, Last  uint64 // that transaction's seq range
}

func (e *DivergedError) Error() string {
	if e.LocalHash == (Hash{}) {
		return fmt.Sprintf("%v: Arweave holds seq %d (hash %x, segment %d..%d, tx %s) but the local log ends at seq %d; "+
			"new local events would reuse mirrored seqs (rebuild from Arweave, or start a new log)",
			ErrDiverged, e.Seq, e.MirroredHash[:8], e.First, e.Last, e.TxID, e.LocalHead)
	}
	return fmt.Sprintf("%v: seq %d has hash %x locally but %x on Arweave (segment %d..%d, tx %s); "+
		"the local log is another history than the mirror (a cut and regrown log, or a device restored from an older backup)",
		ErrDiverged, e.Seq, e.LocalHash[:8], e.MirroredHash[:8], e.First, e.Last, e.TxID)
}

func (e *DivergedError) Unwrap() error { return ErrDiverged }

// lookup returns the record with seq; ok is false when the log does not
// reach seq.
func (s *Syncer) lookup(seq uint64) (r Record, ok bool, err error) {
	err = s.cfg.Records(seq, func(rec Record) error {
		if rec.Seq == seq {
			r, ok = rec, true
		}
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return Record{}, false, fmt.Errorf("read record %d: %w", seq, err)
	}
	return r, ok, nil
}

// recordAt returns the record with seq.
func (s *Syncer) recordAt(seq uint64) (Record, error) {
	r, ok, err := s.lookup(seq)
	if err == nil && !ok {
		err = fmt.Errorf("read record %d: not in the log", seq)
	}
	return r, err
}

// checkMirrored returns a *DivergedError unless the local event at seq
// hashes to mirrored (a segment's head hash). The log chains every event to
// its predecessor, so agreement at a segment head vouches for every seq
// before it.
func (s *Syncer) checkMirrored(seq, head uint64, mirrored Hash, txID string, first, last uint64) error {
	r, ok, err := s.lookup(seq)
	if err != nil {
		return err
	}
	if ok && r.Hash() == mirrored {
		return nil
	}
	de := &DivergedError{Seq: seq, LocalHead: head, MirroredHash: mirrored, TxID: txID, First: first, Last: last}
	if ok {
		de.LocalHash = r.Hash()
	}
	return de
}

// checkCovered verifies the local log against the mirror state at the
// covered seq, before anything is claimed or uploaded.
func (s *Syncer) checkCovered(sum MirrorSummary, head uint64) error {
	if sum.CoveredSeq == 0 {
		return nil
	}
	segs, err := s.cfg.State.Segments(s.cfg.LogID)
	if err != nil {
		return err
	}
	var seg SegmentState
	for _, sg := range segs {
		if sg.LastSeq == sum.CoveredSeq {
			seg = sg
		}
	}
	return s.checkMirrored(sum.CoveredSeq, head, sum.CoveredHash, seg.TxID, seg.FirstSeq, seg.LastSeq)
}

// checkRemote refuses when the gateway holds a segment past the covered
// prefix that is not this log's history: its head hash differs from the
// local event at its last seq, or the local log does not reach it.
// Uploading the local range then would fork the mirror.
func (s *Syncer) checkRemote(byFirst map[uint64][]arweave.TxInfo, covered, head uint64) error {
	var beyond []arweave.TxInfo
	for _, l := range byFirst {
		for _, t := range l {
			if m, err := ParseTags(t.Tags); err == nil && m.LastSeq > covered {
				beyond = append(beyond, t)
			}
		}
	}
	// Report the lowest conflict, whatever the gateway's order.
	sort.Slice(beyond, func(i, j int) bool {
		mi, _ := ParseTags(beyond[i].Tags)
		mj, _ := ParseTags(beyond[j].Tags)
		if mi.LastSeq != mj.LastSeq {
			return mi.LastSeq < mj.LastSeq
		}
		return beyond[i].ID < beyond[j].ID
	})
	for _, t := range beyond {
		m, _ := ParseTags(t.Tags)
		if err := s.checkMirrored(m.LastSeq, head, m.HeadHash, t.ID, m.FirstSeq, m.LastSeq); err != nil {
			return err
		}
	}
	return nil
}

// resolvePostings settles segments left in status posting by an earlier
// run: accepted ones become submitted/confirmed, unknown ones are dropped so
// their range is uploaded again.
func (s *Syncer) resolvePostings(ctx context.Context) (int, error) {
	segs, err := s.cfg.State.Segments(s.cfg.LogID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, seg := range segs {
		recheck := s.cfg.RecheckSubmitted && seg.Status == StatusSubmitted
		if seg.Status != StatusPosting && !recheck {
			continue
		}
		st, err := s.g.Status(ctx, seg.StatusTxID())
		if err != nil {
			return n, fmt.Errorf("resolve posting %d..%d: %w", seg.FirstSeq, seg.LastSeq, err)
		}
		if recheck && st.State == arweave.StatePending {
			continue // still on its way: nothing to settle
		}
		switch st.State {
		case arweave.StateNotFound:
			err = s.cfg.State.Delete(s.cfg.LogID, seg.FirstSeq)
		case arweave.StatePending:
			err = s.cfg.State.MarkSubmitted(s.cfg.LogID, seg.FirstSeq)
		case arweave.StateConfirmed:
			err = s.cfg.State.MarkConfirmed(s.cfg.LogID, seg.FirstSeq, st.Height)
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

type rangeKey struct {
	first, last uint64
	head        Hash
}

// remoteSegments lists this wallet's segments of the log on the gateway.
func (s *Syncer) remoteSegments(ctx context.Context, head uint64) (map[uint64][]arweave.TxInfo, map[rangeKey]arweave.TxInfo, error) {
	pages := s.cfg.MaxPages
	if pages <= 0 {
		pages = max(100, 10+2*int(min((head+pageSize-1)/pageSize, 1<<20)))
	}
	txs, err := FindSegments(ctx, s.g, s.g.Address(), s.cfg.LogID, KindSegment, pages)
	if err != nil {
		return nil, nil, err
	}
	byFirst := map[uint64][]arweave.TxInfo{}
	exact := map[rangeKey]arweave.TxInfo{}
	for _, t := range txs {
		if t.Owner != s.g.Address() || arweave.VerifyOwner(t.OwnerKey, t.Owner) != nil {
			continue
		}
		m, err := ParseTags(t.Tags)
		if err != nil || m.LogID != s.cfg.LogID || m.Kind != KindSegment {
			continue
		}
		byFirst[m.FirstSeq] = append(byFirst[m.FirstSeq], t)
		k := rangeKey{m.FirstSeq, m.LastSeq, m.HeadHash}
		if old, ok := exact[k]; !ok || (old.Pending && !t.Pending) {
			exact[k] = t
		}
	}
	for f := range byFirst {
		l := byFirst[f]
		// Longest first, confirmed before pending.
		sort.Slice(l, func(i, j int) bool {
			mi, _ := ParseTags(l[i].Tags)
			mj, _ := ParseTags(l[j].Tags)
			if mi.LastSeq != mj.LastSeq {
				return mi.LastSeq > mj.LastSeq
			}
			return !l[i].Pending && l[j].Pending
		})
	}
	return byFirst, exact, nil
}

func (s *Syncer) adopt(t arweave.TxInfo, prev Hash) (SegmentState, error) {
	m, _ := ParseTags(t.Tags)
	seg := SegmentState{
		LogID: s.cfg.LogID, FirstSeq: m.FirstSeq, LastSeq: m.LastSeq,
		PrevHash: prev, HeadHash: m.HeadHash, TxID: t.ID, BundleID: t.BundledIn,
		Status: StatusSubmitted, Size: int(t.DataSize), Adopted: true,
	}
	if !t.Pending {
		seg.Status, seg.Height = StatusConfirmed, t.Height
	}
	return seg, s.cfg.State.Put(seg)
}

// Push mirrors every record up to head: it settles earlier postings, adopts
// matching segments already on the gateway, then cuts and uploads the rest
// in seq order. A segment is marked submitted only after the gateway
// accepted it.
func (s *Syncer) Push(ctx context.Context, head uint64) (res SyncResult, err error) {
	ctx, cancelBudget, budgetErr := withBudget(ctx, s.cfg.Timeout, "sync push")
	defer cancelBudget()
	defer func() { err = budgetErr(err) }()
	res.HeadSeq = head
	report := func() {
		if s.cfg.Progress != nil {
			s.cfg.Progress(res.SyncProgress)
		}
	}
	n, err := s.resolvePostings(ctx)
	res.Resolved = n
	if err != nil {
		return res, fmt.Errorf("sync push: %w", err)
	}
	sum, err := s.cfg.State.Summary(s.cfg.LogID)
	if err != nil {
		return res, fmt.Errorf("sync push: %w", err)
	}
	covered, coveredHash := sum.CoveredSeq, sum.CoveredHash
	if err := s.checkCovered(sum, head); err != nil {
		return res, fmt.Errorf("sync push: %w", err)
	}
	res.CoveredSeq = covered
	if covered >= head {
		report()
		return res, nil
	}
	if err := s.dropBeyond(covered); err != nil {
		return res, fmt.Errorf("sync push: %w", err)
	}
	byFirst, exact, err := s.remoteSegments(ctx, head)
	if err != nil {
		return res, fmt.Errorf("sync push: scan gateway: %w", err)
	}
	// Adopt remote segments that extend the covered prefix and agree with
	// the local log at their last seq (the hash chain makes that agreement
	// cover the whole prefix).
	for covered < head {
		adopted := false
		for _, t := range byFirst[covered+1] {
			m, _ := ParseTags(t.Tags)
			if m.LastSeq > head {
				continue
			}
			r, err := s.recordAt(m.LastSeq)
			if err != nil {
				return res, fmt.Errorf("sync push: %w", err)
			}
			if r.Hash() != m.HeadHash {
				continue
			}
			if _, err := s.adopt(t, coveredHash); err != nil {
				return res, fmt.Errorf("sync push: %w", err)
			}
			covered, coveredHash = m.LastSeq, m.HeadHash
			res.Adopted++
			adopted = true
			break
		}
		if !adopted {
			break
		}
	}
	if err := s.checkRemote(byFirst, covered, head); err != nil {
		return res, fmt.Errorf("sync push: %w", err)
	}
	res.CoveredSeq = covered
	if covered >= head {
		report()
		return res, nil
	}

	seger := NewSegmenter(s.cfg.LogID, coveredHash, s.cfg.SegmentBytes)
	var batch []*EncodedSegment
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.uploadBatch(ctx, batch, exact, &res)
		batch, batchBytes = batch[:0], 0
		report()
		return err
	}
	add := func(seg *EncodedSegment) error {
		if seg == nil {
			return nil
		}
		if batchBytes > 0 && batchBytes+len(seg.Data) > s.cfg.BatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, seg)
		batchBytes += len(seg.Data)
		return nil
	}
	next := covered + 1
	err = s.cfg.Records(next, func(r Record) error {
		if r.Seq > head {
			return errStop
		}
		if r.Seq != next {
			return fmt.Errorf("%w: log yielded seq %d, want %d", ErrNotContiguous, r.Seq, next)
		}
		next++
		seg, err := seger.Add(r)
		if err != nil {
			return err
		}
		return add(seg)
	})
	if err != nil && !errors.Is(err, errStop) {
		return res, fmt.Errorf("sync push: %w", err)
	}
	if next <= head {
		return res, fmt.Errorf("sync push: log ends at seq %d, before head %d", next-1, head)
	}
	seg, err := seger.Flush()
	if err == nil {
		err = add(seg)
	}
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, fmt.Errorf("sync push: %w", err)
	}
	return res, nil
}

// dropBeyond forgets state entries past the covered prefix (they cannot be
// trusted to line up with new segments).
func (s *Syncer) dropBeyond(covered uint64) error {
	segs, err := s.cfg.State.Segments(s.cfg.LogID)
	if err != nil {
		return err
	}
	for _, seg := range segs {
		if seg.FirstSeq > covered {
			if err := s.cfg.State.Delete(s.cfg.LogID, seg.FirstSeq); err != nil {
				return err
			}
		}
	}
	return nil
}

// uploadBatch posts a batch of consecutive segments. A segment the gateway
// already holds (posted by an earlier push whose answer was lost) is
// adopted where it stands, and the segments before it are posted first:
// the covered prefix grows in seq order, and the segments posted together
// are always contiguous, wherever in the batch an adopted one falls.
func (s *Syncer) uploadBatch(ctx context.Context, batch []*EncodedSegment, exact map[rangeKey]arweave.TxInfo, res *SyncResult) error {
	start := 0
	for i, seg := range batch {
		t, ok := exact[rangeKey{seg.FirstSeq, seg.LastSeq, seg.HeadHash}]
		if !ok {
			continue
		}
		if err := s.postRun(ctx, batch[start:i], res); err != nil {
			return err
		}
		start = i + 1
		if _, err := s.adopt(t, seg.PrevHash); err != nil {
			return err
		}
		res.Adopted++
		res.CoveredSeq = seg.LastSeq
	}
	return s.postRun(ctx, batch[start:], res)
}

// postRun signs, records and posts a run of contiguous segments.
func (s *Syncer) postRun(ctx context.Context, todo []*EncodedSegment, res *SyncResult) error {
	if len(todo) == 0 {
		return nil
	}
	ups := make([]arweave.Upload, len(todo))
	for i, seg := range todo {
		if i > 0 && todo[i-1].LastSeq+1 != seg.FirstSeq {
			return fmt.Errorf("upload batch: %w", ErrNotContiguous)
		}
		ups[i] = SegmentMeta{Kind: KindSegment, LogID: s.cfg.LogID, FirstSeq: seg.FirstSeq, LastSeq: seg.LastSeq, HeadHash: seg.HeadHash}.Upload(seg.Data)
	}
	signed, err := s.cfg.Uploader.Sign(ctx, ups)
	if err != nil {
		return err
	}
	for i, r := range signed.Receipts {
		seg := todo[i]
		if err := s.cfg.State.MarkPosting(SegmentState{
			LogID: s.cfg.LogID, FirstSeq: seg.FirstSeq, LastSeq: seg.LastSeq,
			PrevHash: seg.PrevHash, HeadHash: seg.HeadHash,
			TxID: r.TxID, BundleID: r.BundleID, Size: r.Size,
		}); err != nil {
			return err
		}
	}
	n, perr := s.cfg.Uploader.Post(ctx, signed)
	if s.afterPost != nil && perr == nil {
		// Fault-injection seam: a "crash" after the gateway accepted the
		// batch and before bookkeeping.
		if err := s.afterPost(); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		if err := s.cfg.State.MarkSubmitted(s.cfg.LogID, todo[i].FirstSeq); err != nil {
			return err
		}
		res.Uploaded++
		res.BytesPosted += int64(signed.Receipts[i].Size)
		res.CoveredSeq = todo[i].LastSeq
	}
	if perr != nil {
		// Leave the unaccepted ones as postings; the next Push resolves them.
		return perr
	}
	return nil
}

// Refresh asks the gateway about every unconfirmed segment and records
// confirmations. It returns the updated summary.
func (s *Syncer) Refresh(ctx context.Context) (MirrorSummary, error) {
	return RefreshState(ctx, s.g, s.cfg.State, s.cfg.LogID)
}

// RefreshState updates the status of logID's unconfirmed segments in st
// from the gateway and returns the new summary. Postings the gateway does
// not know are left alone (Push resolves them).
func RefreshState(ctx context.Context, c Gateway, st *State, logID [16]byte) (MirrorSummary, error) {
	sum, err := st.Summary(logID)
	if err != nil {
		return sum, err
	}
	cache := map[string]arweave.TxStatus{}
	for _, seg := range sum.Unconfirmed {
		id := seg.StatusTxID()
		ts, ok := cache[id]
		if !ok {
			if ts, err = c.Status(ctx, id); err != nil {
				return sum, fmt.Errorf("refresh mirror state: %w", err)
			}
			cache[id] = ts
		}
		switch ts.State {
		case arweave.StateConfirmed:
			err = st.MarkConfirmed(logID, seg.FirstSeq, ts.Height)
		case arweave.StatePending:
			if seg.Status == StatusPosting {
				err = st.MarkSubmitted(logID, seg.FirstSeq)
			}
		}
		if err != nil {
			return sum, fmt.Errorf("refresh mirror state: %w", err)
		}
	}
	return st.Summary(logID)
}
