package ucl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/proof"
)

// wallet returns the store's wallet.
func (s *Store) wallet() (*arweave.Wallet, error) {
	w, err := s.st.Wallet()
	if err != nil {
		return nil, fmt.Errorf("sync: %w: %v", ErrBadWallet, err)
	}
	if w == nil {
		return nil, fmt.Errorf("sync: %w (%s)", ErrNoWallet, s.st.Path(store.WalletFile))
	}
	return w, nil
}

func gatewayOr(g string) string {
	if g == "" {
		return DefaultGateway
	}
	return g
}

// arweaveTimeoutEnv, when set to a duration, bounds each Arweave request
// (gateway or bundler) by it and each call with its retries by twice it,
// instead of 30s and 60s: for slow links, or tests of a gateway that hangs.
const arweaveTimeoutEnv = "UCL_ARWEAVE_TIMEOUT"

// arweaveOptions are the transport options of every client.
func arweaveOptions() arweave.Options {
	var o arweave.Options
	if d, err := time.ParseDuration(os.Getenv(arweaveTimeoutEnv)); err == nil && d > 0 {
		o.RequestTimeout, o.CallTimeout = d, 2*d
	}
	return o
}

func newClient(gateway string, w *arweave.Wallet) (*arweave.Client, error) {
	cl, err := arweave.NewClient(gatewayOr(gateway), w, arweaveOptions())
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrBadRequest)
	}
	return cl, nil
}

// logSource adapts the log to mirror.RecordSource.
func logSource(ctx context.Context, l *log.Log) mirror.RecordSource {
	return func(from uint64, fn func(mirror.Record) error) error {
		return l.Records(ctx, from, 0, func(r *log.Record) error {
			return fn(mirror.Record{Seq: r.Header.Seq, Raw: r.Raw})
		})
	}
}

// mirrorHead is the last seq Push may upload: the log's head, or less
// when Options.MirrorHead says so (a cluster owner's events that the
// stream has not acknowledged yet).
func (s *Store) mirrorHead() uint64 {
	head, _ := s.st.Log.Head()
	if s.opts.MirrorHead != nil {
		head = min(head, s.opts.MirrorHead())
	}
	return head
}

// Push uploads every event not yet on Arweave (resumable and idempotent:
// ranges already on the gateway are adopted). On failure the result says
// how far the mirror got.
//
// After the segments, it anchors a checkpoint (signed note of the Merkle
// root) of the mirrored events as its own transaction, chained to the
// previous one, unless one of that size is already anchored (see anchor).
func (s *Store) Push(ctx context.Context, req PushRequest) (*PushResult, error) {
	via, bundler, err := s.pushVia(req)
	if err != nil {
		return nil, err
	}
	if req.SegmentBytes == 0 {
		req.SegmentBytes = mirror.DefaultSegmentBytes
		if via == ViaBundler {
			req.SegmentBytes = BundlerSegmentBytes
		}
	}
	if req.SegmentBytes < 1024 || req.SegmentBytes > 64<<20 {
		return nil, badRequest("bad segment size %d", req.SegmentBytes)
	}
	w, err := s.wallet()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(s.gatewayFor(req.Gateway), w)
	if err != nil {
		return nil, err
	}
	var gw mirror.Gateway = cl
	up := mirror.Uploads(cl, via == ViaBundle)
	if via == ViaBundler {
		b, err := arweave.NewBundler(bundler, arweaveOptions())
		if err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrBadRequest)
		}
		gw = &arweave.BundlerGateway{Client: cl, B: b}
		up = &arweave.BundlerUploader{C: cl, B: b}
	}
	s.mirror.Lock()
	defer s.mirror.Unlock()
	head := s.mirrorHead()
	res := &PushResult{Gateway: cl.Endpoints().String(), Mode: via, Bundler: bundler, HeadSeq: head}
	st, err := mirror.OpenState(s.st.Path(store.MirrorFile))
	if err != nil {
		return res, err
	}
	defer st.Close()
	logID := s.st.Meta.LogIDBytes()
	before, err := st.Segments(logID)
	if err != nil {
		return res, err
	}
	if req.Estimate || via != ViaBundler {
		// An L1 push that cannot pay is refused before anything is
		// signed; an estimate that cannot be made does not stop a push
		// (signing asks the price again and the gateway has the last word).
		e, err := s.estimate(ctx, cl, st, via, bundler, req.SegmentBytes, head)
		switch {
		case err != nil && req.Estimate:
			return res, err
		case req.Estimate:
			res.Estimate = e
			return res, nil
		case err == nil && !e.Enough:
			res.Estimate = e
			return res, fmt.Errorf("sync push: %w: %s", ErrCannotPay, e.Sentence)
		}
	}
	prog := req.Progress.stage("sync")
	sy, err := mirror.NewSyncer(mirror.SyncConfig{
		LogID: logID, Records: logSource(ctx, s.st.Log), Gateway: gw, Uploader: up, State: st, SegmentBytes: req.SegmentBytes,
		RecheckSubmitted: via == ViaBundler,
		Progress: func(sp mirror.SyncProgress) {
			if prog != nil {
				prog(sp.CoveredSeq, sp.HeadSeq)
			}
		},
	})
	if err != nil {
		return res, err
	}
	r, perr := sy.Push(ctx, head)
	res.CoveredSeq, res.Uploaded, res.Adopted, res.Resolved, res.BytesPosted = r.CoveredSeq, r.Uploaded, r.Adopted, r.Resolved, r.BytesPosted
	if sum, _, _, err := s.localSummary(st, logID); err == nil {
		res.SafeSeq = sum.SafeSeq
		if perr != nil {
			res.CoveredSeq = sum.CoveredSeq
		}
	}
	res.Segments = []SegmentView{}
	after, err := st.Segments(logID)
	if err != nil && perr == nil {
		return res, err
	}
	old := map[string]bool{}
	for _, seg := range before {
		old[fmt.Sprint(seg.FirstSeq, seg.LastSeq, seg.TxID)] = true
	}
	for _, seg := range after {
		if !old[fmt.Sprint(seg.FirstSeq, seg.LastSeq, seg.TxID)] && seg.Status != mirror.StatusPosting {
			res.Segments = append(res.Segments, segmentView(seg))
		}
	}
	if perr != nil {
		res.Error = perr.Error()
		if res.CoveredSeq == 0 {
			return res, fmt.Errorf("%w (nothing mirrored yet: 0 of %d events on Arweave)", perr, head)
		}
		return res, fmt.Errorf("%w (events 1..%d of %d are mirrored)", perr, res.CoveredSeq, head)
	}
	// Remembered for the commands after it (audit, share, status, the
	// next push): the gateway and bundler that just worked.
	if err := rememberArweave(s.st.Dir, ArweaveSettings{Gateway: res.Gateway, Bundler: bundler}); err != nil {
		res.Error = err.Error()
		return res, err
	}
	if res.CoveredSeq > 0 {
		cp, err := s.anchor(ctx, gw, w, res.CoveredSeq)
		if err != nil {
			res.Error = err.Error()
			return res, err
		}
		res.Checkpoint = cp
	}
	n, err := s.disclose(ctx, gw, res.CoveredSeq)
	res.Disclosures = n
	if err != nil {
		res.Error = err.Error()
		return res, err
	}
	return res, nil
}

// SyncStatus reports the mirror state, after asking the gateway about
// unconfirmed segments when req.Refresh.
func (s *Store) SyncStatus(ctx context.Context, req SyncStatusRequest) (*SyncStatusResult, error) {
	s.mirror.Lock()
	defer s.mirror.Unlock()
	head, _ := s.st.Log.Head()
	st, err := mirror.OpenState(s.st.Path(store.MirrorFile))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	logID := s.st.Meta.LogIDBytes()
	var height int64 = -1
	var balance *int64
	bundler := RememberedArweave(s.st.Dir).Bundler
	if req.Refresh {
		cl, err := newClient(s.gatewayFor(req.Gateway), nil)
		if err != nil {
			return nil, err
		}
		var gw mirror.Gateway = cl
		if b := RememberedArweave(s.st.Dir).Bundler; b != "" {
			bc, err := arweave.NewBundler(b, arweaveOptions())
			if err != nil {
				return nil, fmt.Errorf("%v: %w", err, ErrBadRequest)
			}
			gw = &arweave.BundlerGateway{Client: cl, B: bc}
		}
		if _, err := mirror.RefreshState(ctx, gw, st, logID); err != nil {
			return nil, err
		}
		if in, err := cl.Info(ctx); err == nil {
			height = in.Height
		}
		if w, err := s.wallet(); err == nil && bundler == "" {
			if b, err := cl.Balance(ctx, w.Address()); err == nil {
				balance = &b
			}
		}
	}
	sum, segs, diverged, err := s.localSummary(st, logID)
	if err != nil {
		return nil, err
	}
	views := make([]SegmentView, 0, len(segs))
	for i, seg := range segs {
		v := segmentView(seg)
		v.Diverged = i >= diverged
		if seg.Status == mirror.StatusConfirmed && height >= seg.Height {
			n := height - seg.Height + 1
			v.Confirmations = &n
		}
		views = append(views, v)
	}
	out := &SyncStatusResult{LogID: s.st.Meta.LogID, HeadSeq: head, CoveredSeq: sum.CoveredSeq, SafeSeq: sum.SafeSeq,
		Segments: views, SegmentCount: sum.Segments, Posting: sum.Posting, Submitted: sum.Submitted, Confirmed: sum.Confirmed,
		Bytes: sum.Bytes, Unmirrored: head - min(head, sum.CoveredSeq), Refreshed: req.Refresh}
	if height >= 0 {
		out.GatewayHeight = &height
	}
	out.Payer, out.Bundler, out.BalanceWinston = "wallet", bundler, balance
	if bundler != "" {
		out.Payer = "bundler"
	}
	return out, nil
}

// localSummary is st's summary checked against the local log: from the
// first segment whose recorded head hash is not the local event at its
// last seq (the log was cut below it by a repair and regrown, or restored
// from an older copy) the segments cover nothing of the local log, so
// covered and safe stop before it. diverged is that segment's index
// (len(segs) when all match). The hash chain makes matching monotone: a
// segment matches only if every one before it does, so a binary search
// reads O(log segments) events.
func (s *Store) localSummary(st *mirror.State, logID [16]byte) (sum mirror.MirrorSummary, segs []mirror.SegmentState, diverged int, err error) {
	if sum, err = st.Summary(logID); err != nil {
		return sum, nil, 0, err
	}
	if segs, err = st.Segments(logID); err != nil {
		return sum, nil, 0, err
	}
	head, _ := s.st.Log.Head()
	var readErr error
	diverged = sort.Search(len(segs), func(i int) bool {
		if segs[i].LastSeq > head {
			return true
		}
		h, err := s.st.Log.HashAt(segs[i].LastSeq)
		if err != nil && readErr == nil {
			readErr = err
		}
		return err != nil || mirror.Hash(h) != segs[i].HeadHash
	})
	if readErr != nil {
		return sum, nil, 0, fmt.Errorf("check mirror state against the log: %w", readErr)
	}
	if diverged < len(segs) {
		var limit uint64
		var limitHash mirror.Hash
		if diverged > 0 {
			limit, limitHash = segs[diverged-1].LastSeq, segs[diverged-1].HeadHash
		}
		if sum.CoveredSeq > limit {
			sum.CoveredSeq, sum.CoveredHash = limit, limitHash
		}
		sum.SafeSeq = min(sum.SafeSeq, limit)
	}
	return sum, segs, diverged, nil
}

// WatchOptions configure Watch.
type WatchOptions struct {
	// Push is the push to run at each flush.
	Push PushRequest
	// EveryEvents flushes once this many events are pending (default 1000).
	EveryEvents int
	// Every flushes pending events at least this often (default 1 minute).
	Every time.Duration
}

// WatchReport is one flush of Watch: a result, or an error and when the
// next attempt is.
type WatchReport struct {
	Result  *PushResult
	Err     error
	RetryIn time.Duration
	// Covered is how far the mirror is known to reach.
	Covered uint64
}

// Watch is the mirror loop: it pushes now, then whenever EveryEvents
// events are pending or Every elapsed with events pending, until ctx is
// done (then it returns nil). On a *Store it runs in the owner and is
// woken by appends; on a Client it asks the owner for the head once a
// second. Gateway errors are reported and retried with backoff; errors a
// retry cannot fix (no wallet, a bad request) end the loop.
func Watch(ctx context.Context, api API, o WatchOptions, report func(WatchReport)) error {
	if o.EveryEvents <= 0 {
		o.EveryEvents = 1000
	}
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	var wake <-chan struct{}
	headOf := func() (uint64, error) {
		st, err := api.Status(ctx, StatusRequest{})
		if err != nil {
			return 0, err
		}
		return st.HeadSeq, nil
	}
	if s, ok := api.(*Store); ok {
		wake = s.appended
		headOf = func() (uint64, error) { return s.mirrorHead(), nil }
	}
	poll := min(time.Second, o.Every)
	var covered uint64
	var lastFlush, retryAt time.Time
	failures := 0
	for {
		head, err := headOf()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		due := lastFlush.IsZero() || (head > covered && (head-covered >= uint64(o.EveryEvents) || now.Sub(lastFlush) >= o.Every))
		if due && !now.Before(retryAt) {
			res, err := api.Push(ctx, o.Push)
			if res != nil && res.CoveredSeq > covered {
				covered = res.CoveredSeq
			}
			switch {
			case ctx.Err() != nil:
				return nil
			case err == nil:
				if res.Uploaded > 0 || res.Adopted > 0 || lastFlush.IsZero() {
					report(WatchReport{Result: res, Covered: covered})
				}
				lastFlush, failures = time.Now(), 0
			case errors.Is(err, ErrNoWallet), errors.Is(err, ErrBadWallet), errors.Is(err, ErrBadRequest),
				errors.Is(err, mirror.ErrDiverged), errors.Is(err, mirror.ErrMirrorStateCorrupt),
				errors.Is(err, proof.ErrCheckpointDiverged):
				// A retry cannot fix these.
				return err
			default:
				failures++
				wait := min(time.Duration(1<<min(failures, 6))*time.Second, 5*time.Minute)
				retryAt = time.Now().Add(wait)
				report(WatchReport{Err: err, RetryIn: wait, Covered: covered})
				if lastFlush.IsZero() {
					lastFlush = time.Now() // the first round was attempted
				}
			}
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}
