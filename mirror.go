package ucl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
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

func newClient(gateway string, w *arweave.Wallet) (*arweave.Client, error) {
	cl, err := arweave.NewClient(gatewayOr(gateway), w, arweave.Options{})
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

// Push uploads every event not yet on Arweave (resumable and idempotent:
// ranges already on the gateway are adopted). On failure the result says
// how far the mirror got.
//
// After the segments, it anchors a checkpoint (signed note of the Merkle
// root) of the mirrored events as its own transaction, chained to the
// previous one, unless one of that size is already anchored (see anchor).
func (s *Store) Push(ctx context.Context, req PushRequest) (*PushResult, error) {
	if req.SegmentBytes == 0 {
		req.SegmentBytes = mirror.DefaultSegmentBytes
	}
	if req.SegmentBytes < 1024 || req.SegmentBytes > 64<<20 {
		return nil, badRequest("bad segment size %d", req.SegmentBytes)
	}
	w, err := s.wallet()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(req.Gateway, w)
	if err != nil {
		return nil, err
	}
	s.mirror.Lock()
	defer s.mirror.Unlock()
	head, _ := s.st.Log.Head()
	res := &PushResult{Gateway: cl.Gateway(), Mode: "l1", HeadSeq: head}
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
	if req.Bundle {
		res.Mode = "bundle"
	}
	prog := req.Progress.stage("sync")
	sy, err := mirror.NewSyncer(mirror.SyncConfig{
		LogID: logID, Records: logSource(ctx, s.st.Log), Gateway: cl, Uploader: mirror.Uploads(cl, req.Bundle), State: st, SegmentBytes: req.SegmentBytes,
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
	if sum, err := st.Summary(logID); err == nil {
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
	if res.CoveredSeq > 0 {
		cp, err := s.anchor(ctx, cl, w, res.CoveredSeq)
		if err != nil {
			res.Error = err.Error()
			return res, err
		}
		res.Checkpoint = cp
	}
	n, err := s.disclose(ctx, cl, res.CoveredSeq)
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
	if req.Refresh {
		cl, err := newClient(req.Gateway, nil)
		if err != nil {
			return nil, err
		}
		if _, err := mirror.RefreshState(ctx, cl, st, logID); err != nil {
			return nil, err
		}
		if in, err := cl.Info(ctx); err == nil {
			height = in.Height
		}
	}
	sum, err := st.Summary(logID)
	if err != nil {
		return nil, err
	}
	segs, err := st.Segments(logID)
	if err != nil {
		return nil, err
	}
	views := make([]SegmentView, 0, len(segs))
	for _, seg := range segs {
		v := segmentView(seg)
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
	return out, nil
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
		headOf = func() (uint64, error) { h, _ := s.st.Log.Head(); return h, nil }
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
				errors.Is(err, ErrCheckpointDiverged):
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
