package main

// Arweave mirror commands: `ucl sync push`, `ucl sync status`, `ucl rebuild`,
// and the mirror line of `ucl status`.
//
// Watch mode (`sync push --watch`) does not keep the store open: between
// flushes it only stats the log files (no lock). When they changed it opens
// the store for a moment to read the head; a flush copies the new events into
// memory and closes the store before uploading (a backlog over
// watchMemBytes is pushed with the store held, as a one-off catch-up). So
// `ucl append` and friends keep working while a watcher runs; one that lands
// in one of those short windows gets "store is in use" and can be retried.
// The mirror state file is likewise opened per flush, so `ucl sync status`
// and `ucl status` work alongside.
//
// Rebuild never leaves a half-built store at --dir: the log is rebuilt in a
// hidden staging directory next to it (".NAME.rebuild-*") that is removed on
// any failure and renamed into place only once every verified event is
// written. With --allow-partial the verified prefix before a gap (or before
// a segment that fails verification) is kept and the command says so.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// defaultGateway is used when neither --gateway nor UCL_GATEWAY is set.
const defaultGateway = "https://arweave.net"

// watchMemBytes caps the backlog a watch flush copies into memory so it can
// upload without holding the store.
const watchMemBytes = 64 << 20

// importBatch is how many rebuilt events one log.Import call writes.
const importBatch = 4096

func syncGatewayFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "gateway", EnvVars: []string{"UCL_GATEWAY"}, Value: defaultGateway, Usage: "Arweave gateway URL"}
}

// signalContext is cancelled on SIGINT/SIGTERM, so an interrupted push or
// rebuild stops cleanly (state consistent, staging removed).
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// arweaveWallet converts a store wallet for the arweave package.
func arweaveWallet(w *crypto.Wallet) (*arweave.Wallet, error) {
	return arweave.ParseWallet(w.JWK)
}

func storeWallet(s *store.Store) (*arweave.Wallet, error) {
	if s.Wallet == nil {
		return nil, withHint(errors.New("sync: this store has no Arweave wallet"), "copy the store's wallet JWK to "+s.Path(store.WalletFile))
	}
	w, err := arweaveWallet(s.Wallet)
	if err != nil {
		return nil, withHint(fmt.Errorf("sync: %w", err), s.Path(store.WalletFile)+" is not a usable Arweave wallet")
	}
	return w, nil
}

func newGatewayClient(c *cli.Context, w *arweave.Wallet) (*arweave.Client, error) {
	cl, err := arweave.NewClient(c.String("gateway"), w, arweave.Options{})
	if err != nil {
		return nil, usage("pass an http(s) URL to --gateway (or set UCL_GATEWAY)", "%v", err)
	}
	return cl, nil
}

// gatewayHint says what to do after a failed gateway call.
func gatewayHint(err error, again string) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted; nothing was lost: run `" + again + "` again to resume"
	case errors.Is(err, arweave.ErrUnavailable), errors.Is(err, arweave.ErrTimeout):
		return "the gateway is unreachable or failing; nothing was lost: run `" + again + "` again to resume (check --gateway / UCL_GATEWAY)"
	case errors.Is(err, arweave.ErrRejected):
		return "the gateway refused the request: check the wallet has funds (`ucl status` shows its address); nothing was lost, run `" + again + "` again afterwards"
	case errors.Is(err, arweave.ErrGraphQL):
		return "the gateway's GraphQL endpoint failed; try again or another --gateway; nothing was lost"
	}
	return "nothing was lost; run `" + again + "` again to resume"
}

// pushOpts are the parsed `sync push` flags.
type pushOpts struct {
	bundle       bool
	segmentBytes int
}

// pushResult is what one push reports.
type pushResult struct {
	Gateway     string                 `json:"gateway"`
	Mode        string                 `json:"mode"`
	HeadSeq     uint64                 `json:"head_seq"`
	CoveredSeq  uint64                 `json:"covered_seq"`
	SafeSeq     uint64                 `json:"safe_seq"`
	Uploaded    int                    `json:"uploaded"`
	Adopted     int                    `json:"adopted"`
	Resolved    int                    `json:"resolved"`
	BytesPosted int64                  `json:"bytes_posted"`
	Segments    []arweave.SegmentState `json:"segments"` // segments new in the state after this push
	Error       string                 `json:"error,omitempty"`
}

// logSource adapts the log to arweave.RecordSource.
func logSource(ctx context.Context, l *log.Log) arweave.RecordSource {
	return func(from uint64, fn func(arweave.Record) error) error {
		return l.Records(ctx, from, 0, func(r *log.Record) error {
			return fn(arweave.Record{Seq: r.Header.Seq, Raw: r.Raw})
		})
	}
}

// memSource serves records first..first+len-1 from memory.
func memSource(recs []arweave.Record) arweave.RecordSource {
	return func(from uint64, fn func(arweave.Record) error) error {
		if len(recs) == 0 || from > recs[len(recs)-1].Seq {
			return nil
		}
		if from < recs[0].Seq {
			return fmt.Errorf("read records from %d: only %d.. were copied", from, recs[0].Seq)
		}
		for _, r := range recs[from-recs[0].Seq:] {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// pushWith runs one Push of src up to head with a fresh mirror state handle.
func pushWith(ctx context.Context, s *store.Store, cl *arweave.Client, o pushOpts, src arweave.RecordSource, head uint64, p *progress) (pushResult, error) {
	res := pushResult{Gateway: cl.Gateway(), Mode: "l1", HeadSeq: head}
	st, err := arweave.OpenState(s.Path(store.MirrorFile))
	if err != nil {
		return res, withHint(err, "another `ucl sync` may be running on this store; wait for it")
	}
	defer st.Close()
	logID := s.Meta.LogIDBytes()
	before, err := st.Segments(logID)
	if err != nil {
		return res, err
	}
	var up arweave.Uploader = arweave.NewL1Uploader(cl)
	if o.bundle {
		up, res.Mode = arweave.NewBundleUploader(cl), "bundle"
	}
	sy, err := arweave.NewSyncer(arweave.SyncConfig{
		LogID: logID, Records: src, Uploader: up, State: st, SegmentBytes: o.segmentBytes,
		Progress: func(sp arweave.SyncProgress) { p.Set(sp.CoveredSeq, sp.HeadSeq) },
	})
	if err != nil {
		return res, err
	}
	r, perr := sy.Push(ctx, head)
	res.CoveredSeq, res.Uploaded, res.Adopted, res.Resolved, res.BytesPosted = r.CoveredSeq, r.Uploaded, r.Adopted, r.Resolved, r.BytesPosted
	sum, err := st.Summary(logID)
	if err == nil {
		res.SafeSeq = sum.SafeSeq
		if perr != nil {
			res.CoveredSeq = sum.CoveredSeq
		}
	}
	after, _ := st.Segments(logID)
	old := map[string]bool{}
	for _, seg := range before {
		old[fmt.Sprint(seg.FirstSeq, seg.LastSeq, seg.TxID)] = true
	}
	res.Segments = []arweave.SegmentState{}
	for _, seg := range after {
		if !old[fmt.Sprint(seg.FirstSeq, seg.LastSeq, seg.TxID)] && seg.Status != arweave.StatusPosting {
			res.Segments = append(res.Segments, seg)
		}
	}
	if perr != nil {
		res.Error = perr.Error()
		return res, perr
	}
	return res, nil
}

func printPush(c *cli.Context, r pushResult) {
	if jsonOut(c) {
		printJSON(c, r)
		return
	}
	var bytes int64
	for _, seg := range r.Segments {
		bytes += int64(seg.Size)
	}
	switch {
	case r.Uploaded == 0 && r.Adopted == 0 && r.Error == "":
		printf(c, "up to date: events 1..%d are on Arweave (confirmed up to %d)\n", r.CoveredSeq, r.SafeSeq)
		return
	case r.Error == "":
		printf(c, "pushed %d segments (%s, %s) to %s; adopted %d already there\n", r.Uploaded, humanBytes(r.BytesPosted), r.Mode, r.Gateway, r.Adopted)
	}
	if r.Resolved > 0 {
		printf(c, "settled %d uploads left unfinished by an earlier run\n", r.Resolved)
	}
	printf(c, "mirrored: events 1..%d of %d (confirmed up to %d)\n", r.CoveredSeq, r.HeadSeq, r.SafeSeq)
}

func parsePushOpts(c *cli.Context) (pushOpts, error) {
	o := pushOpts{bundle: c.Bool("bundle"), segmentBytes: c.Int("segment-bytes")}
	if o.segmentBytes < 1024 || o.segmentBytes > 64<<20 {
		return o, usage("--segment-bytes takes 1024 .. 67108864 (default 262144)", "bad --segment-bytes %d", o.segmentBytes)
	}
	if !c.Bool("watch") && (c.IsSet("every-events") || c.IsSet("every")) {
		return o, usage("--every-events and --every go with --watch", "--every-events/--every without --watch")
	}
	if c.Int("every-events") < 1 {
		return o, usage("--every-events takes a positive count", "bad --every-events %d", c.Int("every-events"))
	}
	if c.Duration("every") <= 0 {
		return o, usage("--every takes a positive duration, e.g. 30s or 5m", "bad --every %s", c.Duration("every"))
	}
	return o, nil
}

func syncPushAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl sync push [--gateway URL] [--bundle] [--watch]", "unexpected argument %q", c.Args().First())
	}
	o, err := parsePushOpts(c)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	if c.Bool("watch") {
		return watchPush(ctx, c, o)
	}
	s, err := openStoreMaybeKeys(c)
	if err != nil {
		return err
	}
	defer s.Close()
	w, err := storeWallet(s)
	if err != nil {
		return err
	}
	cl, err := newGatewayClient(c, w)
	if err != nil {
		return err
	}
	head, _ := s.Log.Head()
	p := newProgress(c, "sync", head)
	res, err := pushWith(ctx, s, cl, o, logSource(ctx, s.Log), head, p)
	p.Done()
	if err != nil {
		if jsonOut(c) {
			printJSON(c, res)
		}
		return withHint(fmt.Errorf("%w (events 1..%d of %d are mirrored)", err, res.CoveredSeq, head), gatewayHint(err, "ucl sync push"))
	}
	printPush(c, res)
	return nil
}

// logFingerprint summarises the log directory's files (names, sizes, mtimes)
// without opening the log, so a watcher can tell whether anything was
// appended without taking the store lock.
func logFingerprint(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && e.Name() != "LOCK" {
			fmt.Fprintf(&b, "%s:%d:%d;", e.Name(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// watchPush pushes now, then whenever --every-events events were appended
// or --every elapsed with events pending, until interrupted. Gateway errors
// are reported and retried at the next round; they do not end the watch.
func watchPush(ctx context.Context, c *cli.Context, o pushOpts) error {
	dir := storeDir(c)
	everyN, everyT := uint64(c.Int("every-events")), c.Duration("every")
	poll := min(time.Second, everyT)
	var covered, known uint64
	var fp string
	lastFlush := time.Time{}
	retryAt := time.Time{}
	failures := 0

	// flush pushes up to the head, holding the store only while it copies the
	// backlog (or, for a backlog over watchMemBytes, for the whole push).
	flush := func() error {
		s, err := openStoreMaybeKeys(c)
		if err != nil {
			return err
		}
		held := true
		defer func() {
			if held {
				s.Close()
			}
		}()
		w, err := storeWallet(s)
		if err != nil {
			return err
		}
		cl, err := newGatewayClient(c, w)
		if err != nil {
			return err
		}
		head, _ := s.Log.Head()
		known = head
		from := uint64(1)
		if st, err := arweave.OpenState(s.Path(store.MirrorFile)); err == nil {
			sum, serr := st.Summary(s.Meta.LogIDBytes())
			st.Close()
			if serr == nil {
				from = sum.CoveredSeq + 1
			}
		}
		src := logSource(ctx, s.Log)
		var recs []arweave.Record
		size := 0
		err = s.Log.Records(ctx, from, head, func(r *log.Record) error {
			size += len(r.Raw)
			if size > watchMemBytes {
				return errStopCopy
			}
			recs = append(recs, arweave.Record{Seq: r.Header.Seq, Raw: append([]byte(nil), r.Raw...)})
			return nil
		})
		if err == nil {
			// The store stays usable by other processes during the upload;
			// pushWith needs only its directory and metadata from here on.
			src = memSource(recs)
			s.Close()
			held = false
		} else if !errors.Is(err, errStopCopy) {
			return err
		}
		p := newProgress(c, "sync", head)
		res, err := pushWith(ctx, s, cl, o, src, head, p)
		p.Done()
		if res.CoveredSeq > covered {
			covered = res.CoveredSeq
		}
		if err != nil {
			return err
		}
		if res.Uploaded > 0 || res.Adopted > 0 || lastFlush.IsZero() {
			printPush(c, res)
		}
		return nil
	}

	for {
		now := time.Now()
		if now.After(retryAt) {
			due := lastFlush.IsZero() || (known > covered && (known-covered >= everyN || now.Sub(lastFlush) >= everyT))
			if !due {
				if f := logFingerprint(filepath.Join(dir, store.LogDir)); f != fp {
					if s, err := openStoreMaybeKeys(c); err == nil {
						known, _ = s.Log.Head()
						s.Close()
						fp = f
					} else if !errors.Is(err, log.ErrLocked) {
						return err
					}
					due = known > covered && (known-covered >= everyN || now.Sub(lastFlush) >= everyT)
				}
			}
			if due {
				err := flush()
				switch {
				case ctx.Err() != nil:
				case err == nil:
					lastFlush, failures = time.Now(), 0
					fp = logFingerprint(filepath.Join(dir, store.LogDir))
				case errors.Is(err, log.ErrLocked):
					// Another process holds the store; try again next round.
				default:
					var he *hintError
					var ue *usageError
					if errors.As(err, &ue) || errors.Is(err, store.ErrNotInitialized) || errors.Is(err, store.ErrWrongVaultKey) || (errors.As(err, &he) && strings.HasPrefix(err.Error(), "sync: ")) {
						return err
					}
					failures++
					wait := min(time.Duration(1<<min(failures, 6))*time.Second, 5*time.Minute)
					retryAt = time.Now().Add(wait)
					fmt.Fprintf(c.App.ErrWriter, "ucl: %v (events 1..%d are mirrored); retrying in %s\n", err, covered, wait)
					if lastFlush.IsZero() {
						lastFlush = time.Now() // the first round was attempted
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			if !jsonOut(c) {
				printf(c, "stopped; events 1..%d are mirrored\n", covered)
			}
			return nil
		case <-time.After(poll):
		}
	}
}

var errStopCopy = errors.New("backlog too large to copy")

// segmentView is one segment in `sync status`.
type segmentView struct {
	First         uint64 `json:"first"`
	Last          uint64 `json:"last"`
	Status        string `json:"status"`
	TxID          string `json:"tx"`
	BundleID      string `json:"bundle,omitempty"`
	Height        int64  `json:"height,omitempty"`
	Confirmations *int64 `json:"confirmations,omitempty"`
	Size          int    `json:"size"`
	Adopted       bool   `json:"adopted,omitempty"`
}

func syncStatusAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl sync status [--refresh]", "unexpected argument %q", c.Args().First())
	}
	s, err := openStoreMaybeKeys(c)
	if err != nil {
		return err
	}
	defer s.Close()
	head, _ := s.Log.Head()
	st, err := arweave.OpenState(s.Path(store.MirrorFile))
	if err != nil {
		return withHint(err, "a `ucl sync push` may be running on this store; try again when it finishes")
	}
	defer st.Close()
	logID := s.Meta.LogIDBytes()
	var height int64 = -1
	if c.Bool("refresh") {
		cl, err := newGatewayClient(c, nil)
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		if _, err := arweave.RefreshState(ctx, cl, st, logID); err != nil {
			return withHint(err, gatewayHint(err, "ucl sync status --refresh"))
		}
		if in, err := cl.Info(ctx); err == nil {
			height = in.Height
		}
	}
	sum, err := st.Summary(logID)
	if err != nil {
		return err
	}
	segs, err := st.Segments(logID)
	if err != nil {
		return err
	}
	views := make([]segmentView, 0, len(segs))
	for _, seg := range segs {
		v := segmentView{First: seg.FirstSeq, Last: seg.LastSeq, Status: string(seg.Status), TxID: seg.TxID,
			BundleID: seg.BundleID, Height: seg.Height, Size: seg.Size, Adopted: seg.Adopted}
		if seg.Status == arweave.StatusConfirmed && height >= seg.Height {
			n := height - seg.Height + 1
			v.Confirmations = &n
		}
		views = append(views, v)
	}
	if jsonOut(c) {
		out := map[string]any{"log_id": s.Meta.LogID, "head_seq": head, "covered_seq": sum.CoveredSeq, "safe_seq": sum.SafeSeq,
			"segments": views, "posting": sum.Posting, "submitted": sum.Submitted, "confirmed": sum.Confirmed,
			"bytes": sum.Bytes, "unmirrored": head - min(head, sum.CoveredSeq), "refreshed": c.Bool("refresh")}
		if height >= 0 {
			out["gateway_height"] = height
		}
		return printJSON(c, out)
	}
	printf(c, "log %s: head %d; on Arweave up to %d; safe (confirmed) up to %d\n", s.Meta.LogID, head, sum.CoveredSeq, sum.SafeSeq)
	printf(c, "%d segments (%s): %d confirmed, %d submitted, %d posting\n", sum.Segments, humanBytes(sum.Bytes), sum.Confirmed, sum.Submitted, sum.Posting)
	if len(views) > 0 {
		printf(c, "%10s %10s  %-10s %6s %5s  %s\n", "first", "last", "status", "height", "conf", "tx")
	}
	for _, v := range views {
		conf := "-"
		if v.Confirmations != nil {
			conf = fmt.Sprint(*v.Confirmations)
		}
		printf(c, "%10d %10d  %-10s %6d %5s  %s\n", v.First, v.Last, v.Status, v.Height, conf, v.TxID)
	}
	switch {
	case head > sum.CoveredSeq:
		printf(c, "events %d..%d are not on Arweave yet: run `ucl sync push`\n", sum.CoveredSeq+1, head)
	case !c.Bool("refresh") && sum.SafeSeq < sum.CoveredSeq:
		printf(c, "run `ucl sync status --refresh` to ask the gateway about confirmations\n")
	}
	return nil
}

// mirrorStatus adds the mirror summary to `ucl status` from the local state
// only (no network call).
func mirrorStatus(_ *cli.Context, s *store.Store, out map[string]any) {
	path := s.Path(store.MirrorFile)
	if _, err := os.Stat(path); err != nil {
		out["mirror_text"] = "not mirrored (run `ucl sync push`)"
		return
	}
	st, err := arweave.OpenState(path)
	if err != nil {
		out["mirror_text"] = "state busy (a sync is running)"
		return
	}
	defer st.Close()
	sum, err := st.Summary(s.Meta.LogIDBytes())
	if err != nil {
		out["mirror_text"] = "state unreadable: " + err.Error()
		return
	}
	head, _ := s.Log.Head()
	out["mirror"] = map[string]any{"segments": sum.Segments, "covered_seq": sum.CoveredSeq, "safe_seq": sum.SafeSeq,
		"posting": sum.Posting, "submitted": sum.Submitted, "confirmed": sum.Confirmed, "bytes": sum.Bytes}
	out["mirror_text"] = fmt.Sprintf("%d segments; on Arweave up to %d of %d, confirmed up to %d", sum.Segments, sum.CoveredSeq, head, sum.SafeSeq)
}

// rebuildOpts is a parsed `ucl rebuild`.
type rebuildOpts struct {
	dir          string
	keys         *crypto.Keyring
	wallet       *crypto.Wallet
	owner        string
	logID        [16]byte
	allowPartial bool
	// from/fromPrev start the log at a later seq (a snapshot's head); zero
	// means from seq 1. Not exposed yet.
	from     uint64
	fromPrev arweave.Hash
}

// rebuildOutcome is what rebuildLog did.
type rebuildOutcome struct {
	res     arweave.RebuildResult
	head    uint64
	hash    log.Hash
	partial error // the *GapError or *TxRejectedError that stopped a partial rebuild
}

// findLogID lists the log ids of owner's segments and picks the only one.
func findLogID(ctx context.Context, cl *arweave.Client, owner string) ([16]byte, error) {
	var id [16]byte
	txs, err := cl.FindTxs(ctx, arweave.TxQuery{Owners: []string{owner}, Tags: []arweave.Tag{
		{Name: arweave.TagAppName, Value: arweave.AppName}, {Name: arweave.TagKind, Value: string(arweave.KindSegment)}}})
	if err != nil {
		return id, withHint(fmt.Errorf("rebuild: find logs: %w", err), gatewayHint(err, "ucl rebuild"))
	}
	count := map[[16]byte]int{}
	last := map[[16]byte]uint64{}
	for _, t := range txs {
		m, err := arweave.ParseTags(t.Tags)
		if err != nil || t.Owner != owner {
			continue
		}
		count[m.LogID]++
		last[m.LogID] = max(last[m.LogID], m.LastSeq)
	}
	switch len(count) {
	case 0:
		return id, withHint(fmt.Errorf("rebuild: %s has no ucl segments on %s", owner, cl.Gateway()),
			"check --wallet (the store's wallet.json) and --gateway; was `ucl sync push` run on the source device?")
	case 1:
		for k := range count {
			id = k
		}
		return id, nil
	}
	var ids []string
	for k, n := range count {
		ids = append(ids, fmt.Sprintf("%s (%d segments, up to seq %d)", arweave.LogIDHex(k), n, last[k]))
	}
	sort.Strings(ids)
	return id, usage("pass --log-id ID; `ucl status` on the source device shows its log id",
		"rebuild: wallet %s has several logs: %s", owner, strings.Join(ids, ", "))
}

// rebuildLog creates a store in o.dir and fills its log from Arweave. On
// error the caller removes o.dir, unless the outcome is partial.
func rebuildLog(ctx context.Context, c *cli.Context, cl *arweave.Client, o rebuildOpts) (rebuildOutcome, error) {
	var out rebuildOutcome
	s, err := store.Init(o.dir, store.InitOptions{Keys: o.keys, Wallet: o.wallet, LogID: arweave.LogIDHex(o.logID)})
	if err != nil {
		return out, err
	}
	defer s.Close()
	var batch [][]byte
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.Log.Import(ctx, batch)
		batch = batch[:0]
		return err
	}
	p := newProgress(c, "rebuild", 0)
	res, rerr := arweave.Rebuild(ctx, arweave.RebuildOptions{
		Client: cl, Owner: o.owner, LogID: o.logID, From: o.from, FromPrevHash: o.fromPrev,
		AllowPartial: o.allowPartial,
		VerifyRecord: func(prev arweave.Hash, r arweave.Record) error {
			h, err := log.DecodeHeader(r.Raw)
			if err != nil {
				return err
			}
			if h.Seq != r.Seq {
				return fmt.Errorf("%w: header says seq %d", log.ErrChainBroken, h.Seq)
			}
			if h.Prev != log.Hash(prev) {
				return fmt.Errorf("%w: prev is not the hash of seq %d", log.ErrChainBroken, r.Seq-1)
			}
			return nil
		},
		Progress: func(rp arweave.RebuildProgress) { p.Set(uint64(rp.Segments), uint64(rp.TotalSegments)) },
	}, func(r arweave.Record) error {
		batch = append(batch, r.Raw)
		if len(batch) >= importBatch {
			return flush()
		}
		return nil
	})
	p.Done()
	out.res = res
	if rerr == nil || o.allowPartial {
		if err := flush(); err != nil {
			return out, fmt.Errorf("rebuild: write log: %w", err)
		}
	}
	out.head, out.hash = s.Log.Head()
	var gap *arweave.GapError
	var rej *arweave.TxRejectedError
	switch {
	case rerr == nil:
	case o.allowPartial && (errors.As(rerr, &gap) || errors.As(rerr, &rej)):
		out.partial = rerr
	default:
		return out, rerr
	}
	if res.Found == 0 {
		return out, withHint(fmt.Errorf("rebuild: no segments of log %s from %s on %s", arweave.LogIDHex(o.logID), o.owner, cl.Gateway()),
			"check --log-id, --wallet and --gateway")
	}
	if out.head != res.LastSeq || (res.LastSeq > 0 && out.hash != log.Hash(res.HeadHash)) {
		return out, fmt.Errorf("rebuild: wrote up to seq %d, Arweave gave up to %d", out.head, res.LastSeq)
	}
	return out, nil
}

func rebuildHint(err error) string {
	var gap *arweave.GapError
	var rej *arweave.TxRejectedError
	switch {
	case errors.As(err, &gap):
		return "nothing was written. The segments may not be indexed yet (wait and retry), or were never uploaded: run `ucl sync push` on a device that has them; or pass --allow-partial to keep the events before the gap"
	case errors.As(err, &rej):
		return "nothing was written. The gateway served a transaction that fails verification (altered, or not this wallet's): try another --gateway, or --allow-partial to keep the verified events before it"
	case errors.Is(err, store.ErrExists):
		return "rebuild needs a new directory: pass --dir NEW"
	}
	if errors.Is(err, crypto.ErrWrongKey) || errors.Is(err, crypto.ErrUnknownEpoch) || strings.Contains(err.Error(), "import event") {
		return "nothing was written; the vault key cannot open these events: pass the source store's vault key (or recovery code file) with --vault-key"
	}
	return gatewayHint(err, "ucl rebuild")
}

func rebuildAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl rebuild --gateway URL --wallet FILE --vault-key FILE --dir NEW", "unexpected argument %q", c.Args().First())
	}
	if c.String("wallet") == "" || c.String("vault-key") == "" {
		return usage("a new device needs the source store's wallet.json (--wallet FILE) and vault key or recovery code file (--vault-key FILE)", "rebuild: --wallet and --vault-key are required")
	}
	dir := filepath.Clean(storeDir(c))
	if _, err := os.Stat(filepath.Join(dir, store.MetaFile)); err == nil {
		return withHint(fmt.Errorf("rebuild %s: %w", dir, store.ErrExists), "rebuild needs a new directory: pass --dir NEW")
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return usage("pass --dir with a new or empty directory", "rebuild: %s exists and is not empty", dir)
	}
	w, err := crypto.LoadWallet(c.String("wallet"))
	if err != nil {
		return withHint(err, "--wallet takes the Arweave JWK of the source store (its wallet.json)")
	}
	aw, err := arweaveWallet(w)
	if err != nil {
		return withHint(fmt.Errorf("rebuild: %w", err), "--wallet takes the Arweave JWK of the source store (its wallet.json)")
	}
	kr, err := crypto.LoadKeyring(c.String("vault-key"))
	if err != nil {
		return withHint(err, "--vault-key takes the source store's vault.key or a file with its recovery code")
	}
	o := rebuildOpts{keys: kr, wallet: w, owner: aw.Address(), allowPartial: c.Bool("allow-partial")}
	cl, err := newGatewayClient(c, nil)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	if id := c.String("log-id"); id != "" {
		b, err := hex.DecodeString(id)
		if err != nil || len(b) != 16 {
			return usage("--log-id takes the 32 hex digits `ucl status` shows", "bad --log-id %q", id)
		}
		copy(o.logID[:], b)
	} else if o.logID, err = findLogID(ctx, cl, o.owner); err != nil {
		return err
	}

	// Build in a staging directory next to dir; rename it into place only
	// when the log is complete (or an accepted partial prefix).
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := fsutil.MkdirAllSync(parent, 0o700); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	if _, err := store.Tidy(dir); err != nil { // a crashed rebuild's staging (keys inside)
		return fmt.Errorf("rebuild: %w", err)
	}
	stage, err := os.MkdirTemp(parent, "."+base+".rebuild-")
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	o.dir = stage
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(stage)
		}
	}()
	t0 := time.Now()
	out, err := rebuildLog(ctx, c, cl, o)
	logSecs := time.Since(t0).Seconds()
	if err != nil {
		return withHint(err, rebuildHint(err))
	}
	if out.partial != nil && out.head == 0 {
		return withHint(fmt.Errorf("rebuild: nothing verified before the first problem: %w", out.partial), rebuildHint(out.partial))
	}
	if err := os.Rename(stage, dir); err != nil {
		return fmt.Errorf("rebuild: move %s into place: %w", stage, err)
	}
	keep = true
	if err := fsutil.SyncDir(parent); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}

	// Project everything.
	s, err := store.Open(dir, store.OpenOptions{Keys: kr})
	if err != nil {
		return err
	}
	defer s.Close()
	// A published snapshot spares the projection replay (the slow part):
	// the log is always rebuilt whole — it is the source of truth and must
	// verify from seq 1 — but projections start from the newest valid
	// snapshot and replay only the events after it.
	t0 = time.Now()
	snap := map[string]any{"used": false, "reason": "--no-snapshot"}
	if out.partial != nil {
		snap["reason"] = "partial rebuild"
	} else if !c.Bool("no-snapshot") {
		snap = restoreFromPublished(ctx, c, cl, s, o)
	}
	set, err := openSet(c, s)
	if err != nil {
		return err
	}
	defer set.Close()
	p := newProgress(c, "project", out.head)
	err = set.CatchUp(ctx, p.Set)
	p.Done()
	projSecs := time.Since(t0).Seconds()
	if err != nil {
		return withHint(fmt.Errorf("rebuild: project: %w", err), "the log is rebuilt in "+dir+"; run `ucl project` to finish the projections")
	}
	digests, _ := set.Projector.Digests()
	if out.partial != nil {
		fmt.Fprintf(c.App.ErrWriter, "ucl: warning: PARTIAL rebuild: kept events 1..%d; stopped at: %v\n", out.head, out.partial)
		fmt.Fprintf(c.App.ErrWriter, "hint: events after %d are not in this store; do not append to it before the rest is recovered, or the log forks from its Arweave copy\n", out.head)
	}
	if jsonOut(c) {
		doc := map[string]any{"dir": dir, "log_id": arweave.LogIDHex(o.logID), "events": out.head, "head_seq": out.head,
			"head_hash": out.hash.String(), "segments": out.res.Segments, "pending_segments": out.res.Pending,
			"duplicates": out.res.Duplicates, "bytes": out.res.Bytes, "digests": digests, "partial": out.partial != nil,
			"log_seconds": logSecs, "project_seconds": projSecs, "snapshot": snap}
		if out.partial != nil {
			doc["problem"] = out.partial.Error()
		}
		return printJSON(c, doc)
	}
	printf(c, "rebuilt %s from %s\n", dir, cl.Gateway())
	printf(c, "  log id:     %s\n", arweave.LogIDHex(o.logID))
	printf(c, "  events:     %d (head hash %s)\n", out.head, out.hash)
	printf(c, "  segments:   %d (%s; %d not yet mined, %d duplicates dropped)\n", out.res.Segments, humanBytes(out.res.Bytes), out.res.Pending, out.res.Duplicates)
	if snap != nil && snap["used"] == true {
		printf(c, "  snapshot:   %s at seq %v; replayed %v events after it\n", snap["name"], snap["seq"], snap["replayed"])
	} else {
		printf(c, "  snapshot:   none used (%v); projected every event\n", snap["reason"])
	}
	for _, n := range snapshotDigestNames(digests) {
		printf(c, "  %-11s %s\n", n+":", digests[n])
	}
	return nil
}

// restoreFromPublished fetches the newest published snapshot that checks
// out, imports it into the new store and restores the projections from it
// (replaying the events after it). Any problem is reported and leaves the
// projections to a full replay: a snapshot is an accelerator, never needed.
func restoreFromPublished(ctx context.Context, c *cli.Context, cl *arweave.Client, s *store.Store, o rebuildOpts) map[string]any {
	info := map[string]any{"used": false}
	pub, refused, err := snapshot.FetchNewest(ctx, cl, o.owner, o.logID)
	for _, r := range refused {
		fmt.Fprintf(c.App.ErrWriter, "ucl: snapshot %s refused: %s\n", r.Name, r.Reason)
	}
	if err != nil {
		if errors.Is(err, snapshot.ErrNoSnapshot) {
			info["reason"] = "no published snapshot"
		} else {
			info["reason"] = err.Error()
			fmt.Fprintf(c.App.ErrWriter, "ucl: could not fetch snapshots (%v); projecting from the log\n", err)
		}
		return info
	}
	in, err := snapshot.Import(s.Path(store.SnapshotsDir), pub.ManifestJSON, pub.Archive)
	if err != nil {
		info["reason"] = err.Error()
		return info
	}
	po, err := projOptions(c, s)
	if err != nil {
		info["reason"] = err.Error()
		return info
	}
	prog, done := stagedProgress(c)
	res, err := snapshot.Restore(ctx, snapshot.EnvFor(s, po), snapshot.RestoreOptions{Name: in.Name, Fallback: false, Progress: prog})
	done()
	if err != nil {
		info["reason"] = err.Error()
		fmt.Fprintf(c.App.ErrWriter, "ucl: snapshot %s not used (%v); projecting from the log\n", in.Name, err)
		return info
	}
	info["used"], info["name"], info["seq"], info["replayed"] = true, res.Snapshot, res.Seq, res.Replayed
	return info
}

var syncCommand = &cli.Command{
	Name:  "sync",
	Usage: "mirror the log to Arweave and show the mirror's state",
	Description: `The log is uploaded as segments (contiguous seq ranges of encrypted events,
no plaintext in data or tags), signed by the store's wallet. Push is resumable
and idempotent: run it again after any failure; ranges already on the gateway
are adopted, never uploaded twice. The gateway is --gateway or UCL_GATEWAY
(default https://arweave.net); the wallet needs funds there.`,
	Subcommands: []*cli.Command{
		{
			Name:  "push",
			Usage: "upload every event not yet on Arweave",
			Description: `--watch keeps running: it pushes when --every-events events were appended,
or --every elapsed with events pending. It does not hold the store between
flushes (it only stats the log files), so appends from other processes keep
working; one that hits the moment a flush copies the new events gets "store is
in use" and can be retried. Gateway errors are reported and retried.`,
			Flags: []cli.Flag{
				syncGatewayFlag(),
				&cli.BoolFlag{Name: "bundle", Usage: "upload ANS-104 bundles of segments instead of one L1 transaction per segment"},
				&cli.IntFlag{Name: "segment-bytes", Value: arweave.DefaultSegmentBytes, Usage: "maximum segment size in bytes"},
				&cli.BoolFlag{Name: "watch", Usage: "keep running and push as events arrive (Ctrl-C stops)"},
				&cli.IntFlag{Name: "every-events", Value: 1000, Usage: "with --watch: push after this many new events"},
				&cli.DurationFlag{Name: "every", Value: time.Minute, Usage: "with --watch: push pending events at least this often"},
			},
			Action: syncPushAction,
		},
		{
			Name:  "status",
			Usage: "per segment: range, status, confirmations, tx id; how far the log is safe on Arweave",
			Flags: []cli.Flag{
				syncGatewayFlag(),
				&cli.BoolFlag{Name: "refresh", Usage: "ask the gateway about unconfirmed segments first"},
			},
			Action: syncStatusAction,
		},
	},
}

var rebuildCommand = &cli.Command{
	Name:  "rebuild",
	Usage: "recover a store on a new device from Arweave: wallet + vault key → log → projections",
	Description: `Finds this wallet's segments with GraphQL, verifies owner, Merkle roots,
head hashes and the hash chain, writes the log into --dir (which must be new or
empty) and builds every projection. Nothing is left at --dir on failure. A gap
(missing seqs) is refused unless --allow-partial, which keeps the verified
events before it. Without --log-id the wallet's only log is used.
Projections start from the newest valid published snapshot (ucl snapshot
push) and replay only the events after it; the log itself is always rebuilt
from seq 1 and verified whole. --no-snapshot projects every event.`,
	Flags: []cli.Flag{
		syncGatewayFlag(),
		&cli.StringFlag{Name: "wallet", Usage: "the source store's Arweave wallet (wallet.json)"},
		&cli.StringFlag{Name: "log-id", Usage: "log to rebuild (default: the wallet's only log)"},
		&cli.BoolFlag{Name: "allow-partial", Usage: "keep the verified events before a gap or a bad segment"},
		&cli.BoolFlag{Name: "no-snapshot", Usage: "project every event instead of starting from the newest published snapshot"},
	},
	Action: rebuildAction,
}

func init() {
	register(syncCommand, rebuildCommand)
	statusExtras = append(statusExtras, mirrorStatus)
}
