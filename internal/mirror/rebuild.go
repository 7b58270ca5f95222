package mirror

import (
	"context"
	"errors"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"sort"
	"strings"
	"time"
)

// GapError names seqs no valid segment on the gateway covers.
type GapError struct {
	From, To uint64 // inclusive
	// More lists further gaps after this one, if any.
	More []GapError
}

func (e *GapError) Error() string {
	s := fmt.Sprintf("arweave: seqs %d..%d missing on the gateway", e.From, e.To)
	if e.From == e.To {
		s = fmt.Sprintf("arweave: seq %d missing on the gateway", e.From)
	}
	if len(e.More) > 0 {
		parts := make([]string, len(e.More))
		for i, g := range e.More {
			parts[i] = fmt.Sprintf("%d..%d", g.From, g.To)
		}
		s += " (also " + strings.Join(parts, ", ") + ")"
	}
	return s
}

// TxRejectedError reports a transaction Rebuild refused: wrong owner, tags
// that disagree with its bytes, a segment that fails to decode or verify,
// or a break in continuity. It unwraps to the cause.
type TxRejectedError struct {
	TxID string
	Err  error
}

func (e *TxRejectedError) Error() string {
	return fmt.Sprintf("arweave: transaction %s rejected: %v", e.TxID, e.Err)
}

func (e *TxRejectedError) Unwrap() error { return e.Err }

// ErrContinuity is returned (inside a TxRejectedError) when a segment does
// not link to the previous one: its prev hash or first seq disagrees.
var ErrContinuity = errors.New("arweave: segment does not continue the chain")

var (
	// ErrForked is returned (inside a *ForkError) when the gateway holds two
	// valid segments of the log that disagree about the same seqs: two
	// devices (or a log cut and regrown) uploaded different histories.
	ErrForked = errors.New("arweave: the mirrored log is forked")
	// ErrBranchNotFound is returned when RebuildOptions.Branch names no
	// segment of the log.
	ErrBranchNotFound = errors.New("arweave: branch transaction is not a segment of this log")
)

// Branch names one side of a fork: a segment transaction and its range.
type Branch struct {
	TxID        string
	First, Last uint64
	HeadHash    Hash
}

func (b Branch) String() string {
	return fmt.Sprintf("tx %s (seqs %d..%d, head %x)", b.TxID, b.First, b.Last, b.HeadHash[:8])
}

// ForkError reports two valid segments that disagree: the divergence lies
// within From..To (the seqs they share). Branches[0] is the segment the
// chain had followed, Branches[1] the one that contradicts it. It unwraps to
// ErrForked.
type ForkError struct {
	From, To uint64
	Branches []Branch
}

func (e *ForkError) Error() string {
	parts := make([]string, len(e.Branches))
	for i, b := range e.Branches {
		parts[i] = b.String()
	}
	return fmt.Sprintf("%v: seqs %d..%d differ between %s; choose the branch to follow (RebuildOptions.Branch)",
		ErrForked, e.From, e.To, strings.Join(parts, " and "))
}

func (e *ForkError) Unwrap() error { return ErrForked }

func branchOf(c candidate) Branch {
	return Branch{TxID: c.tx.ID, First: c.meta.FirstSeq, Last: c.meta.LastSeq, HeadHash: c.meta.HeadHash}
}

// RebuildOptions configures Rebuild.
type RebuildOptions struct {
	Gateway Gateway
	Owner   string // wallet address whose segments are trusted
	LogID   [16]byte
	// From is the first seq wanted (default 1); FromPrevHash is the hash of
	// event From-1 (zero for From == 1), e.g. a snapshot's head.
	From         uint64
	FromPrevHash Hash
	// AllowPartial yields records up to the first gap, then returns the
	// *GapError. Without it a gap is reported before any record is yielded.
	AllowPartial bool
	// VerifyRecord, if set, checks each record against the hash of its
	// predecessor (the log's own chain check: header prev == prev).
	VerifyRecord func(prev Hash, r Record) error
	// Concurrency is the number of segments fetched ahead (default 4).
	Concurrency int
	// Progress, if set, is called after each segment.
	Progress func(RebuildProgress)
	// Branch, when the log is forked, is the transaction id of a segment
	// whose chain to follow: segments overlapping it are set aside, as are
	// segments that contradict the chain through it, and the rebuild ends
	// where nothing continues that chain. Empty: a fork is an error.
	Branch string
	// MaxSegmentBytes bounds each segment fetched (default MaxSegmentSize);
	// a transaction whose data size is known is read up to that size only.
	MaxSegmentBytes int64
	// MaxPages bounds the GraphQL pages of the segment search (0: the
	// client's Options.MaxPages).
	MaxPages int
	// Timeout, if set, bounds the whole rebuild; running out fails with
	// ErrTimeout. Each gateway call is bounded by the client's options
	// regardless.
	Timeout time.Duration
}

// MaxSegmentSize is the largest segment a Syncer can produce with the
// default segment cap: one record of MaxRecordSize (a segment is cut before
// the cap, but a single record larger than the cap gets a segment of its
// own).
const MaxSegmentSize = SegmentHeaderSize + recordLenSize + MaxRecordSize

// withBudget bounds ctx by d (when d > 0). The returned func turns an error
// caused by that bound, and not by the parent, into one wrapping ErrTimeout.
func withBudget(ctx context.Context, d time.Duration, what string) (context.Context, context.CancelFunc, func(error) error) {
	if d <= 0 {
		return ctx, func() {}, func(err error) error { return err }
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, func(err error) error {
		if err != nil && ctx.Err() != nil && parent.Err() == nil && !errors.Is(err, arweave.ErrTimeout) {
			return fmt.Errorf("%s: %w: time budget of %s spent: %w", what, arweave.ErrTimeout, d, err)
		}
		return err
	}
}

// fetchLimit is the read bound for candidate c: its declared data size when
// the gateway reported one within the cap, else the cap.
func (o RebuildOptions) fetchLimit(c candidate) int64 {
	if c.tx.DataSize > 0 && c.tx.DataSize < o.MaxSegmentBytes {
		return c.tx.DataSize
	}
	return o.MaxSegmentBytes
}

// RebuildProgress reports a rebuild in flight.
type RebuildProgress struct {
	Segments, TotalSegments int
	Records                 uint64
	LastSeq                 uint64
	Bytes                   int64
}

// RebuildResult is the outcome of Rebuild.
type RebuildResult struct {
	RebuildProgress
	HeadHash   Hash // hash of LastSeq
	Found      int  // transactions GraphQL returned
	Duplicates int  // dropped as the same range and head hash
	Pending    int  // segments used that are not yet mined
	// SetAside lists the segments left out because they belong to another
	// branch than RebuildOptions.Branch.
	SetAside []Branch
}

type candidate struct {
	tx   arweave.TxInfo
	meta SegmentMeta
}

// plan picks, from From onwards, the segments to fetch (longest reach
// first at each step) and the gaps between them.
func plan(cands []candidate, from uint64) (chosen [][]candidate, gaps []GapError) {
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i].meta, cands[j].meta
		if a.FirstSeq != b.FirstSeq {
			return a.FirstSeq < b.FirstSeq
		}
		if a.LastSeq != b.LastSeq {
			return a.LastSeq > b.LastSeq
		}
		if cands[i].tx.Pending != cands[j].tx.Pending {
			return !cands[i].tx.Pending
		}
		return cands[i].tx.ID < cands[j].tx.ID
	})
	next := from
	for i := 0; i < len(cands); {
		// Every candidate covering next, best reach first.
		var step []candidate
		for _, c := range cands {
			if c.meta.FirstSeq <= next && c.meta.LastSeq >= next {
				step = append(step, c)
			}
		}
		if len(step) > 0 {
			sort.SliceStable(step, func(a, b int) bool { return step[a].meta.LastSeq > step[b].meta.LastSeq })
			chosen = append(chosen, step)
			next = step[0].meta.LastSeq + 1
			continue
		}
		for i < len(cands) && cands[i].meta.FirstSeq <= next {
			i++
		}
		if i == len(cands) {
			break
		}
		gaps = append(gaps, GapError{From: next, To: cands[i].meta.FirstSeq - 1})
		next = cands[i].meta.FirstSeq
	}
	return chosen, gaps
}

// Rebuild finds every segment of opt.LogID signed by opt.Owner, verifies
// them and yields their records in seq order to fn (see the package doc).
// A transaction that fails verification makes Rebuild return a
// *TxRejectedError naming it, unless another valid segment covers the same
// seqs. Missing seqs give a *GapError: without AllowPartial nothing is
// yielded; with it, records up to the gap are yielded and the *GapError is
// still returned (res.LastSeq says how far it got). Seqs after the last
// segment are not a gap (the reader cannot know the head); no segment at
// all gives a zero result and nil error (check res.Found). Segments from
// From onwards are used whether mined or pending (res.Pending counts the
// latter).
func Rebuild(ctx context.Context, opt RebuildOptions, fn func(Record) error) (res RebuildResult, err error) {
	ctx, cancelBudget, budgetErr := withBudget(ctx, opt.Timeout, "rebuild")
	defer cancelBudget()
	defer func() { err = budgetErr(err) }()
	if opt.MaxSegmentBytes <= 0 {
		opt.MaxSegmentBytes = MaxSegmentSize
	}
	if opt.Gateway == nil || opt.Owner == "" {
		return res, errors.New("rebuild: Gateway and Owner are required")
	}
	if opt.From == 0 {
		opt.From = 1
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 4
	}
	txs, err := FindSegments(ctx, opt.Gateway, opt.Owner, opt.LogID, KindSegment, opt.MaxPages)
	if err != nil {
		return res, fmt.Errorf("rebuild: %w", err)
	}
	res.Found = len(txs)
	var cands []candidate
	seen := map[rangeKey]bool{}
	for _, t := range txs {
		if t.Owner != opt.Owner {
			return res, &TxRejectedError{TxID: t.ID, Err: fmt.Errorf("%w: owner %s, want %s", arweave.ErrOwnerMismatch, t.Owner, opt.Owner)}
		}
		if err := arweave.VerifyOwner(t.OwnerKey, opt.Owner); err != nil {
			return res, &TxRejectedError{TxID: t.ID, Err: err}
		}
		m, err := ParseTags(t.Tags)
		if err != nil {
			return res, &TxRejectedError{TxID: t.ID, Err: err}
		}
		if m.LogID != opt.LogID || m.Kind != KindSegment {
			return res, &TxRejectedError{TxID: t.ID, Err: fmt.Errorf("%w: log id or kind differs", arweave.ErrTags)}
		}
		if m.LastSeq < opt.From {
			continue
		}
		k := rangeKey{m.FirstSeq, m.LastSeq, m.HeadHash}
		if seen[k] {
			res.Duplicates++
			continue
		}
		seen[k] = true
		cands = append(cands, candidate{tx: t, meta: m})
	}
	var branchID string // the kept candidate standing for opt.Branch
	var branchLast uint64
	branchUsed := false // the chain has gone through it
	if opt.Branch != "" {
		var bk *candidate
		for i := range cands {
			if cands[i].tx.ID == opt.Branch {
				bk = &cands[i]
			}
		}
		if bk == nil {
			// A dropped duplicate stands for the kept one.
			for _, t := range txs {
				if m, err := ParseTags(t.Tags); err == nil && t.ID == opt.Branch {
					for i := range cands {
						if cands[i].meta.FirstSeq == m.FirstSeq && cands[i].meta.LastSeq == m.LastSeq && cands[i].meta.HeadHash == m.HeadHash {
							bk = &cands[i]
						}
					}
				}
			}
		}
		if bk == nil {
			return res, fmt.Errorf("rebuild: %w: %s", ErrBranchNotFound, opt.Branch)
		}
		b := *bk
		branchID, branchLast = b.tx.ID, b.meta.LastSeq
		kept := cands[:0:0]
		for _, c := range cands {
			if c.tx.ID != b.tx.ID && c.meta.FirstSeq <= b.meta.LastSeq && b.meta.FirstSeq <= c.meta.LastSeq {
				res.SetAside = append(res.SetAside, branchOf(c))
				continue
			}
			kept = append(kept, c)
		}
		cands = kept
	}
	// A segment the chain does not use is checked against the chain when the
	// chain reaches its last seq: a different head hash there is a fork.
	byLast := map[uint64][]candidate{}
	for _, c := range cands {
		byLast[c.meta.LastSeq] = append(byLast[c.meta.LastSeq], c)
	}
	chosen, gaps := plan(cands, opt.From)
	if branchID != "" && len(gaps) > 0 && gaps[0].From > branchLast && coveredBy(res.SetAside, gaps[0].From, gaps[0].To) {
		// The hole is where the set-aside branch was: the chosen branch
		// ends before it, and what follows continues the other one.
		cut := len(chosen)
		for i, st := range chosen {
			if st[0].meta.FirstSeq > gaps[0].From {
				cut = i
				break
			}
		}
		for _, st := range chosen[cut:] {
			for _, c := range st {
				res.SetAside = append(res.SetAside, branchOf(c))
			}
		}
		chosen, gaps = chosen[:cut], nil
	}
	res.TotalSegments = len(chosen)
	var gapErr *GapError
	if len(gaps) > 0 {
		gapErr = &gaps[0]
		gapErr.More = gaps[1:]
		if !opt.AllowPartial {
			return res, gapErr
		}
		// Keep only the steps before the first gap.
		cut := len(chosen)
		for i, st := range chosen {
			if st[0].meta.FirstSeq > gapErr.From {
				cut = i
				break
			}
		}
		chosen = chosen[:cut]
	}

	// Fetch ahead concurrently, verify and yield in order.
	type fetched struct {
		data []byte
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan fetched, len(chosen))
	sem := make(chan struct{}, opt.Concurrency)
	for i := range chosen {
		results[i] = make(chan fetched, 1)
	}
	go func() {
		for i, st := range chosen {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func(i int, c candidate) {
				d, err := opt.Gateway.FetchDataLimit(ctx, c.tx.ID, opt.fetchLimit(c))
				results[i] <- fetched{d, err}
			}(i, st[0])
		}
	}()

	next, prevHash := opt.From, opt.FromPrevHash
	for i, step := range chosen {
		var f fetched
		select {
		case f = <-results[i]:
			<-sem
		case <-ctx.Done():
			return res, fmt.Errorf("rebuild: %w", ctx.Err())
		}
		var seg *Segment
		var used candidate
		var firstErr error
		for j, c := range step {
			data, ferr := f.data, f.err
			if j > 0 { // alternates are fetched only when needed
				data, ferr = opt.Gateway.FetchDataLimit(ctx, c.tx.ID, opt.fetchLimit(c))
			}
			if ferr != nil {
				if ctx.Err() != nil {
					return res, fmt.Errorf("rebuild: %w", ferr)
				}
				if firstErr == nil {
					firstErr = fmt.Errorf("rebuild: segment %d..%d: %w", c.meta.FirstSeq, c.meta.LastSeq, ferr)
				}
				continue
			}
			s, verr := verifySignedSegment(c, data, opt.LogID, next, prevHash)
			if verr != nil {
				// One more fetch in case the bytes were damaged in transit.
				if data2, ferr2 := opt.Gateway.FetchDataLimit(ctx, c.tx.ID, opt.fetchLimit(c)); ferr2 == nil {
					s, verr = verifySignedSegment(c, data2, opt.LogID, next, prevHash)
					data = data2
				}
			}
			if verr != nil {
				if firstErr == nil {
					firstErr = &TxRejectedError{TxID: c.tx.ID, Err: verr}
				}
				continue
			}
			seg, used = s, c
			res.Bytes += int64(len(data))
			break
		}
		if seg == nil {
			var rej *TxRejectedError
			if branchUsed && errors.As(firstErr, &rej) && errors.Is(firstErr, ErrContinuity) {
				// Nothing continues the chosen branch: what follows is the
				// other branch's continuation.
				for _, st := range chosen[i:] {
					for _, c := range st {
						res.SetAside = append(res.SetAside, branchOf(c))
					}
				}
				break
			}
			return res, firstErr
		}
		if used.tx.Pending {
			res.Pending++
		}
		if opt.Branch != "" && used.tx.ID == branchID {
			branchUsed = true
		}
		for _, r := range seg.Records {
			if r.Seq < next {
				continue
			}
			if opt.VerifyRecord != nil {
				if err := opt.VerifyRecord(prevHash, r); err != nil {
					return res, &TxRejectedError{TxID: used.tx.ID, Err: fmt.Errorf("seq %d: %w", r.Seq, err)}
				}
			}
			if err := fn(r); err != nil {
				return res, err
			}
			prevHash = r.Hash()
			for _, c := range byLast[r.Seq] {
				if c.tx.ID == used.tx.ID || c.meta.HeadHash == prevHash {
					continue
				}
				fork, err := confirmFork(ctx, opt, c)
				if err != nil {
					return res, err
				}
				if !fork {
					continue
				}
				if opt.Branch != "" {
					res.SetAside = append(res.SetAside, branchOf(c))
					continue
				}
				return res, &ForkError{From: max(c.meta.FirstSeq, opt.From), To: c.meta.LastSeq, Branches: []Branch{branchOf(used), branchOf(c)}}
			}
			next = r.Seq + 1
			res.Records++
			res.LastSeq = r.Seq
		}
		res.HeadHash = prevHash
		res.Segments++
		if opt.Progress != nil {
			opt.Progress(res.RebuildProgress)
		}
	}
	if gapErr != nil {
		return res, gapErr
	}
	return res, nil
}

// coveredBy reports whether the ranges of bs cover every seq from..to.
func coveredBy(bs []Branch, from, to uint64) bool {
	bs = append([]Branch(nil), bs...)
	sort.Slice(bs, func(i, j int) bool { return bs[i].First < bs[j].First })
	next := from
	for _, b := range bs {
		if b.First > next {
			break
		}
		if b.Last >= next {
			next = b.Last + 1
		}
		if next > to {
			return true
		}
	}
	return next > to
}

// confirmFork fetches c, whose head hash contradicts the chain, and reports
// whether it is a valid segment (a real fork) rather than damaged data or
// tags that disagree with its bytes (which the chain never needed).
func confirmFork(ctx context.Context, opt RebuildOptions, c candidate) (bool, error) {
	data, err := opt.Gateway.FetchDataLimit(ctx, c.tx.ID, opt.fetchLimit(c))
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("rebuild: %w", err)
		}
		return false, fmt.Errorf("rebuild: segment %d..%d (tx %s) contradicts the chain and cannot be fetched to confirm a fork: %w",
			c.meta.FirstSeq, c.meta.LastSeq, c.tx.ID, err)
	}
	if arweave.VerifySigned(c.tx, data) != nil {
		return false, nil // not the wallet's: no fork, whatever it says
	}
	seg, err := DecodeSegment(data)
	if err != nil || seg.LogID != opt.LogID || seg.FirstSeq != c.meta.FirstSeq || seg.LastSeq != c.meta.LastSeq || seg.HeadHash != c.meta.HeadHash {
		return false, nil
	}
	return true, nil
}

// verifySignedSegment checks the segment (verifySegment), then its own
// signature (VerifySigned: the owner key GraphQL reports is trusted only
// once it hashes to the owner, and the data and tags only once that key
// signed them).
func verifySignedSegment(c candidate, data []byte, logID [16]byte, next uint64, prev Hash) (*Segment, error) {
	seg, err := verifySegment(data, c.meta, logID, next, prev)
	if err != nil {
		return nil, err
	}
	if err := arweave.VerifySigned(c.tx, data); err != nil {
		return nil, err
	}
	return seg, nil
}

// verifySegment decodes data and checks it against its tags, the log id and
// the chain so far (next seq expected, hash of next-1).
func verifySegment(data []byte, m SegmentMeta, logID [16]byte, next uint64, prev Hash) (*Segment, error) {
	seg, err := DecodeSegment(data)
	if err != nil {
		return nil, err
	}
	switch {
	case seg.LogID != logID:
		return nil, fmt.Errorf("%w: segment log id differs", arweave.ErrTags)
	case seg.FirstSeq != m.FirstSeq || seg.LastSeq != m.LastSeq || seg.HeadHash != m.HeadHash:
		return nil, fmt.Errorf("%w: tags say %d..%d, bytes say %d..%d", arweave.ErrTags, m.FirstSeq, m.LastSeq, seg.FirstSeq, seg.LastSeq)
	case seg.FirstSeq > next:
		return nil, fmt.Errorf("%w: starts at %d, want %d", ErrContinuity, seg.FirstSeq, next)
	}
	// The event before next must be the one we hold.
	if seg.FirstSeq == next {
		if seg.PrevHash != prev {
			return nil, fmt.Errorf("%w: prev hash differs at seq %d", ErrContinuity, next)
		}
	} else if seg.Records[next-1-seg.FirstSeq].Hash() != prev {
		return nil, fmt.Errorf("%w: record %d differs", ErrContinuity, next-1)
	}
	return seg, nil
}
