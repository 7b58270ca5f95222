package main

// Arweave mirror commands: `ucl sync push`, `ucl sync status`, `ucl rebuild`.
//
// Watch mode (`sync push --watch`) runs the engine's mirror loop. With no
// owner serving the store it becomes the owner: it holds the store, serves
// the other commands on DIR/ucl.sock and pushes as appends arrive. With an
// owner it attaches and asks the owner to push when events are pending.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/config"
	"github.com/unlimitedcontext/ucl/proof"
)

func syncGatewayFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "gateway", EnvVars: []string{"UCL_GATEWAY"},
		Usage: "Arweave gateway URL, or several separated by commas (read in order, falling over; graphql=URL names a GraphQL endpoint). " +
			"Default: [arweave] in ucl.toml, else the gateway of the store's last push, else " + ucl.DefaultGateway}
}

// configured is key's value from ucl.toml or the environment, "" when it
// is left at its default.
func configured(key string) string {
	if fileConfig == nil {
		return ""
	}
	for _, s := range fileConfig.Settings() {
		if s.Key == key && (s.Source == config.SourceFile || s.Source == config.SourceEnv) {
			return s.Value
		}
	}
	return ""
}

// gatewaySetting is the endpoint list a command talks to: --gateway (or
// UCL_GATEWAY), else [arweave] gateways or gateway of ucl.toml (or
// UCL_GATEWAYS), with [arweave] graphql added; "" leaves the choice to
// the store: the gateway it remembers from its last push, else the default.
func gatewaySetting(c *cli.Context) string {
	g := c.String("gateway")
	if !c.IsSet("gateway") {
		if g = configured("arweave.gateways"); g == "" {
			g = configured("arweave.gateway")
		}
	}
	if gq := configured("arweave.graphql"); gq != "" && !strings.Contains(g, "graphql=") {
		if g == "" {
			if g = ucl.RememberedArweave(storeDir(c)).Gateway; g == "" {
				g = ucl.DefaultGateway
			}
		}
		g += ",graphql=" + gq
	}
	return g
}

// gatewayUsage is the usage error of a bad gateway setting.
func gatewayUsage(err error) error {
	return usage("pass an http(s) URL to --gateway, or several separated by commas (or set UCL_GATEWAY, or [arweave] gateways in ucl.toml)", "%v", err)
}

// signalContext is cancelled on SIGINT/SIGTERM, so an interrupted push or
// rebuild stops cleanly (state consistent, staging removed).
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// gatewayHint says what to do after a failed gateway call.
func gatewayHint(err error, again string) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted; nothing was lost: run `" + again + "` again to resume"
	case errors.Is(err, ucl.ErrMirrorDiverged):
		return "nothing was uploaded: this log is not the history already on Arweave; to continue the mirrored history, rebuild a new store from it with `ucl rebuild`"
	case errors.Is(err, proof.ErrCheckpointDiverged):
		return "the segments were pushed but no checkpoint was anchored: this log is not the history this wallet already anchored for its id"
	case errors.Is(err, ucl.ErrMirrorStateCorrupt):
		return "the mirror state is derived data: delete it and run `" + again + "` again (it is re-adopted from the gateway)"
	case errors.Is(err, ucl.ErrGatewayUnavailable), errors.Is(err, ucl.ErrGatewayTimeout):
		return "the gateway is unreachable or failing; nothing was lost: run `" + again + "` again to resume (check --gateway / UCL_GATEWAY)"
	case errors.Is(err, ucl.ErrCannotPay):
		return "nothing was signed or uploaded. Either fund the wallet (its address is above; `ucl sync estimate` says the cost), or push without AR through a bundler: `ucl sync push --via bundler` (uploads under 100 KiB per item are free)"
	case errors.Is(err, ucl.ErrBundlerPayment):
		return "the bundler charges for items over its free size: buy credits for this wallet at the bundler, or lower --segment-bytes (the default through a bundler keeps items free); nothing was lost, run `" + again + "` again afterwards"
	case errors.Is(err, ucl.ErrGatewayRejected):
		return "the gateway or bundler refused the request: an L1 push needs AR in the wallet (`ucl sync estimate` shows the cost and balance), or push through a bundler with `--via bundler`; nothing was lost, run `" + again + "` again afterwards"
	case errors.Is(err, ucl.ErrGatewayGraphQL):
		return "the gateway's GraphQL endpoint failed; try again or another --gateway; nothing was lost"
	}
	return "nothing was lost; run `" + again + "` again to resume"
}

// mirrorError adds the CLI's words to a mirror error.
func mirrorError(err error, again string) error {
	switch {
	case errors.Is(err, ucl.ErrBadRequest):
		return gatewayUsage(err)
	case errors.Is(err, ucl.ErrNoWallet), errors.Is(err, ucl.ErrBadWallet):
		return err
	}
	return withHint(err, gatewayHint(err, again))
}

func printPush(c *cli.Context, r *ucl.PushResult) {
	if jsonOut(c) {
		printJSON(c, r)
		return
	}
	switch {
	case r.Uploaded == 0 && r.Adopted == 0 && r.Error == "" && r.HeadSeq == 0:
		printf(c, "up to date: the log is empty, nothing to push\n")
		return
	case r.Uploaded == 0 && r.Adopted == 0 && r.Error == "" && r.CoveredSeq >= r.HeadSeq:
		printf(c, "up to date: %s\n", mirroredText(r.CoveredSeq, r.HeadSeq, r.SafeSeq))
		printAnchored(c, r)
		return
	case r.Error == "":
		to := r.Gateway
		if r.Bundler != "" {
			to = r.Bundler + " (read back from " + r.Gateway + ")"
		}
		printf(c, "pushed %d segments (%s, %s) to %s; adopted %d already there\n", r.Uploaded, humanBytes(r.BytesPosted), r.Mode, to, r.Adopted)
	}
	if r.Resolved > 0 {
		printf(c, "settled %d uploads left unfinished by an earlier run\n", r.Resolved)
	}
	printf(c, "mirrored: %s\n", mirroredText(r.CoveredSeq, r.HeadSeq, r.SafeSeq))
	printAnchored(c, r)
}

func printAnchored(c *cli.Context, r *ucl.PushResult) {
	if cp := r.Checkpoint; cp != nil && cp.Anchored {
		printf(c, "anchored checkpoint of %d events (root %s) in Arweave transaction %s\n", cp.Size, cp.Root, cp.TxID)
	}
}

// mirroredText says how much of the log is on Arweave, in words that stay
// true when nothing is ("events 1..0" is not).
func mirroredText(covered, head, safe uint64) string {
	var s string
	switch {
	case covered == 0:
		return fmt.Sprintf("nothing mirrored yet (0 of %d events on Arweave)", head)
	case covered >= head:
		s = fmt.Sprintf("all %d events are on Arweave", head)
	default:
		s = fmt.Sprintf("events 1..%d of %d are on Arweave", covered, head)
	}
	switch {
	case safe == 0:
		return s + ", none confirmed yet"
	case safe >= covered:
		return s + ", all confirmed"
	}
	return s + fmt.Sprintf(", confirmed up to %d", safe)
}

func pushRequest(c *cli.Context) (ucl.PushRequest, error) {
	o := ucl.PushRequest{Gateway: gatewaySetting(c), Bundle: c.Bool("bundle"), Via: c.String("via"), Bundler: c.String("bundler")}
	if !c.IsSet("bundler") {
		o.Bundler = configured("arweave.bundler")
	}
	switch o.Via {
	case "", ucl.ViaL1, ucl.ViaBundle, ucl.ViaBundler:
	default:
		return o, usage("--via takes l1, bundle or bundler", "bad --via %q", o.Via)
	}
	if o.Bundler != "" && (o.Via == ucl.ViaL1 || o.Via == ucl.ViaBundle || o.Bundle) {
		if c.IsSet("bundler") {
			return o, usage("--bundler goes with --via bundler", "--bundler with an L1 push")
		}
		o.Bundler = "" // the configured bundler, overridden by --via
	}
	if o.Bundler != "" {
		if err := ucl.CheckURL(o.Bundler); err != nil {
			return o, usage("pass the bundler's http(s) URL to --bundler (or [arweave] bundler in ucl.toml), e.g. "+ucl.TurboUploadURL, "%v", err)
		}
	}
	if c.IsSet("segment-bytes") {
		o.SegmentBytes = c.Int("segment-bytes")
		if o.SegmentBytes < 1024 || o.SegmentBytes > 64<<20 {
			return o, usage("--segment-bytes takes 1024 .. 67108864 (default 262144, through a bundler 98304)", "bad --segment-bytes %d", o.SegmentBytes)
		}
	}
	if c.Command.Name == "estimate" {
		o.Estimate = true
		return o, nil
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
	if err := ucl.CheckGateway(o.Gateway); err != nil {
		return o, gatewayUsage(err)
	}
	return o, nil
}

func syncPushAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl sync push [--via bundler|l1|bundle] [--gateway URL] [--watch]", "unexpected argument %q", c.Args().First())
	}
	req, err := pushRequest(c)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	if c.Bool("watch") {
		return watchPush(ctx, c, req)
	}
	return withAPI(c, func(api ucl.API) error {
		p := newProgress(c, "sync", 0)
		req.Progress = func(_ string, done, total uint64) { p.Set(done, total) }
		res, err := api.Push(ctx, req)
		p.Done()
		if err != nil {
			if res != nil && jsonOut(c) {
				printJSON(c, res)
			}
			return mirrorError(err, "ucl sync push")
		}
		printPush(c, res)
		return nil
	})
}

// watchPush runs the mirror loop until interrupted: as the owner (serving
// the other commands) when no process owns the store, else attached.
func watchPush(ctx context.Context, c *cli.Context, req ucl.PushRequest) error {
	api, err := ucl.Attach(storeDir(c), engineOptions(c))
	if err != nil {
		return openError(err)
	}
	defer api.Close()
	// As the owner, serve the other commands while mirroring; stop serving
	// (waiting for requests in flight) before the store closes.
	stopServing := func() error { return nil }
	if s, ok := api.(*ucl.Store); ok {
		stopServing = s.StartServing()
	}
	var covered uint64
	err = ucl.Watch(ctx, api, ucl.WatchOptions{Push: req, EveryEvents: c.Int("every-events"), Every: c.Duration("every")}, func(r ucl.WatchReport) {
		covered = r.Covered
		if r.Err != nil {
			fmt.Fprintf(c.App.ErrWriter, "ucl: %v; retrying in %s\n", r.Err, r.RetryIn)
			return
		}
		printPush(c, r.Result)
	})
	if serr := stopServing(); serr != nil && err == nil {
		return fmt.Errorf("serve: %w", serr)
	}
	if err != nil {
		return mirrorError(err, "ucl sync push --watch")
	}
	if !jsonOut(c) {
		if covered == 0 {
			printf(c, "stopped; nothing mirrored yet\n")
		} else {
			printf(c, "stopped; events 1..%d are mirrored\n", covered)
		}
	}
	return nil
}

func syncStatusAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl sync status [--refresh]", "unexpected argument %q", c.Args().First())
	}
	ctx, stop := signalContext()
	defer stop()
	return withAPI(c, func(api ucl.API) error {
		r, err := api.SyncStatus(ctx, ucl.SyncStatusRequest{Gateway: gatewaySetting(c), Refresh: c.Bool("refresh")})
		if err != nil {
			return mirrorError(err, "ucl sync status --refresh")
		}
		if jsonOut(c) {
			return printJSON(c, r)
		}
		printf(c, "log %s: head %d; %s\n", r.LogID, r.HeadSeq, mirroredText(r.CoveredSeq, r.HeadSeq, r.SafeSeq))
		printf(c, "%d segments (%s): %d confirmed, %d submitted, %d posting\n", r.SegmentCount, humanBytes(r.Bytes), r.Confirmed, r.Submitted, r.Posting)
		printf(c, "%s", segmentTable(r.Segments))
		switch {
		case r.Payer == "bundler":
			printf(c, "pushes go through the bundler %s (free under 100 KiB per item)\n", r.Bundler)
		case r.BalanceWinston != nil:
			printf(c, "pushes are paid by the wallet, which holds %s AR (`ucl sync estimate` says what the next push costs; `--via bundler` needs no AR)\n", ucl.FormatAR(*r.BalanceWinston))
		}
		switch {
		case r.HeadSeq > r.CoveredSeq && r.CoveredSeq == 0:
			printf(c, "run `ucl sync push` to mirror the log\n")
		case r.HeadSeq > r.CoveredSeq:
			printf(c, "events %d..%d are not on Arweave yet: run `ucl sync push`\n", r.CoveredSeq+1, r.HeadSeq)
		case !r.Refreshed && r.SafeSeq < r.CoveredSeq:
			printf(c, "run `ucl sync status --refresh` to ask the gateway about confirmations\n")
		}
		return nil
	})
}

// segmentTable is sync status's table of segments: one line each, a
// diverged one marked (the local log no longer holds its events), and a
// line saying what that means when there is one.
func segmentTable(segs []ucl.SegmentView) string {
	if len(segs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%10s %10s  %-10s %6s %5s  %s\n", "first", "last", "status", "height", "conf", "tx")
	diverged := 0
	for _, v := range segs {
		conf := "-"
		if v.Confirmations != nil {
			conf = fmt.Sprint(*v.Confirmations)
		}
		mark := ""
		if v.Diverged {
			mark = "  DIVERGED"
			diverged++
		}
		fmt.Fprintf(&b, "%10d %10d  %-10s %6d %5s  %s%s\n", v.First, v.Last, v.Status, v.Height, conf, v.TxID, mark)
	}
	if diverged > 0 {
		fmt.Fprintf(&b, "%d segment(s) DIVERGED: the local log no longer holds their events (it was cut below them and took other events since); they cover nothing of it\n", diverged)
	}
	return b.String()
}

func rebuildHint(err error) string {
	var gap *ucl.GapError
	var rej *ucl.TxRejectedError
	switch {
	case errors.Is(err, ucl.ErrForked):
		return "nothing was written. Two histories were uploaded for the same seqs: pass --branch TX with the transaction whose history to keep"
	case errors.Is(err, ucl.ErrBranchNotFound):
		return "nothing was written: --branch must be one of the transactions the fork error named"
	case errors.Is(err, proof.ErrCheckpointDiverged):
		return "nothing was written. The segments on Arweave do not add up to the history the wallet itself anchored in a signed checkpoint: the gateway serves altered or other segments, or the wallet anchored a rewritten history; try another --gateway"
	case errors.Is(err, ucl.ErrTxSignature):
		return "nothing was written. A checkpoint transaction the gateway serves does not verify (altered, or not this wallet's): try another --gateway"
	case errors.As(err, &gap):
		return "nothing was written. The segments may not be indexed yet (wait and retry), or were never uploaded: run `ucl sync push` on a device that has them; or pass --allow-partial to keep the events before the gap"
	case errors.As(err, &rej):
		return "nothing was written. The gateway served a transaction that fails verification (altered, or not this wallet's): try another --gateway, or --allow-partial to keep the verified events before it"
	case errors.Is(err, ucl.ErrExists):
		return "rebuild needs a new directory: pass --dir NEW"
	case errors.Is(err, ucl.ErrNoSegments):
		return "check --wallet (the store's wallet.json), --log-id and --gateway; was `ucl sync push` run on the source device?"
	}
	if errors.Is(err, crypto.ErrUnknownEpoch) {
		return "nothing was written; the log was moved to a newer vault-key epoch than this key's (`ucl keys rotate`): pass the source store's current vault key (a recovery code exported after its last rotation) with --vault-key"
	}
	if errors.Is(err, crypto.ErrWrongKey) || strings.Contains(err.Error(), "import event") {
		return "nothing was written; the vault key cannot open these events: pass the source store's vault key (or recovery code file) with --vault-key"
	}
	return gatewayHint(err, "ucl rebuild")
}

func rebuildAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl rebuild --gateway URL --wallet FILE --vault-key FILE --dir NEW", "unexpected argument %q", c.Args().First())
	}
	if c.String("wallet") == "" || c.String("vault-key") == "" {
		return usage("a new device needs the source store's wallet.json (--wallet FILE) and vault key (--vault-key FILE, or its recovery code)", "rebuild: --wallet and --vault-key are required")
	}
	if err := ucl.CheckGateway(gatewaySetting(c)); err != nil {
		return gatewayUsage(err)
	}
	w, err := ucl.LoadWallet(c.String("wallet"))
	if err != nil {
		return badValue(err, "--wallet takes the Arweave JWK of the source store (its wallet.json)")
	}
	kr := vaultKeys(c)
	ctx, stop := signalContext()
	defer stop()
	prog, done := stagedProgress(c)
	eo := engineOptions(c)
	res, err := ucl.Rebuild(ctx, ucl.RebuildOptions{Dir: storeDir(c), Gateway: gatewaySetting(c), Wallet: w, Keys: kr,
		LogID: c.String("log-id"), AllowPartial: c.Bool("allow-partial"), Branch: c.String("branch"), NoSnapshot: c.Bool("no-snapshot"),
		Embedder: eo.Embedder, Progress: prog,
		Warn: func(msg string) { fmt.Fprintf(c.App.ErrWriter, "ucl: %s\n", msg) }})
	done()
	switch {
	case errors.Is(err, ucl.ErrDirNotEmpty):
		return usage("pass --dir with a new or empty directory", "%v", err)
	case errors.Is(err, ucl.ErrAmbiguousLog):
		return usage("pass --log-id ID; `ucl status` on the source device shows its log id", "%v", err)
	case errors.Is(err, ucl.ErrBadWallet):
		return withHint(err, "--wallet takes the Arweave JWK of the source store (its wallet.json)")
	case errors.Is(err, ucl.ErrBadRequest):
		return usage("--log-id takes the 32 hex digits `ucl status` shows", "%v", err)
	case err != nil:
		return withHint(err, rebuildHint(err))
	}
	if c.Bool("no-snapshot") && !res.Partial {
		res.Snapshot.Reason = "--no-snapshot"
	}
	if res.Partial {
		fmt.Fprintf(c.App.ErrWriter, "ucl: warning: PARTIAL rebuild: kept events 1..%d; stopped at: %v\n", res.HeadSeq, res.Problem)
		fmt.Fprintf(c.App.ErrWriter, "hint: events after %d are not in this store; do not append to it before the rest is recovered, or the log forks from its Arweave copy\n", res.HeadSeq)
	}
	if jsonOut(c) {
		return printJSON(c, res)
	}
	printf(c, "rebuilt %s from %s\n", res.Dir, res.Gateway)
	if len(res.Answered) > 0 {
		printf(c, "  answered:   %s\n", strings.Join(res.Answered, ", "))
	}
	if res.GatewaysDisagree {
		for _, g := range res.Gateways {
			printf(c, "  gateway:    %s newest checkpoint %s (%d events) %s\n", g.Gateway, g.TxID, g.Size, g.Error)
		}
	}
	printf(c, "  log id:     %s\n", res.LogID)
	printf(c, "  events:     %d (head hash %s)\n", res.HeadSeq, res.HeadHash)
	if res.Shredded > 0 {
		printf(c, "  shredded:   %d events erased by key rotations of the source (unreadable by design, not damage)\n", res.Shredded)
	}
	printf(c, "  segments:   %d (%s; %d not yet mined, %d duplicates dropped)\n", res.Segments, humanBytes(res.Bytes), res.PendingSegments, res.Duplicates)
	if cp := res.Checkpoint; cp.Verified {
		printf(c, "  checkpoint: events 1..%d match the wallet-signed checkpoint in Arweave transaction %s\n", cp.Size, cp.TxID)
	} else {
		printf(c, "  checkpoint: none checked (%s)\n", cp.Reason)
	}
	if res.MirroredSeq > 0 {
		printf(c, "  mirror:     events 1..%d recorded as on Arweave (a push uploads only what follows)\n", res.MirroredSeq)
	}
	if res.Snapshot.Used {
		printf(c, "  snapshot:   %s at seq %v; replayed %v events after it\n", res.Snapshot.Name, res.Snapshot.Seq, res.Snapshot.Replayed)
	} else {
		printf(c, "  snapshot:   none used (%v); projected every event\n", res.Snapshot.Reason)
	}
	for _, n := range sortedKeys(res.Digests) {
		printf(c, "  %-11s %s\n", n+":", res.Digests[n])
	}
	return nil
}

var syncCommand = &cli.Command{
	Name:  "sync",
	Usage: "mirror the log to Arweave and show the mirror's state",
	Description: `The log is uploaded as segments (contiguous seq ranges of encrypted events,
no plaintext in data or tags), signed by the store's wallet. Push is resumable
and idempotent: run it again after any failure; ranges already on the gateway
are adopted, never uploaded twice.

Two ways to pay. Through a bundler (--via bundler, or [arweave] bundler in
ucl.toml; Turbo's https://upload.ardrive.io by default) each segment is one
signed ANS-104 data item and the bundler pays the Arweave fee: items under
100 KiB are free, and segments are cut to 96 KiB by default so they stay
free. As L1 transactions (the default without a bundler) the wallet pays in
AR; a push it cannot pay is refused before anything is signed. ` + "`ucl sync estimate`" + `
says what a push costs.

The gateway is --gateway, UCL_GATEWAY or [arweave] gateway(s) in ucl.toml;
several gateways are read in order, a failing one passed over. The first
successful push remembers its gateway and bundler (DIR/arweave.json): later
commands use them unless told otherwise.`,
	Subcommands: []*cli.Command{
		{
			Name:  "push",
			Usage: "upload every event not yet on Arweave",
			Description: `--watch keeps running: it pushes when --every-events events were appended,
or --every elapsed with events pending. Without another owner it owns the
store and serves the other ucl commands on DIR/ucl.sock, so appends keep
working and wake the mirror. Gateway errors are reported and retried.`,
			Flags: []cli.Flag{
				syncGatewayFlag(),
				&cli.BoolFlag{Name: "bundle", Usage: "upload ANS-104 bundles of segments instead of one L1 transaction per segment"},
				viaFlag(), bundlerFlag(), segmentBytesFlag(),
				&cli.BoolFlag{Name: "watch", Usage: "keep running and push as events arrive (Ctrl-C stops)"},
				&cli.IntFlag{Name: "every-events", Value: 1000, Usage: "with --watch: push after this many new events"},
				&cli.DurationFlag{Name: "every", Value: time.Minute, Usage: "with --watch: push pending events at least this often"},
			},
			Action: syncPushAction,
		},
		{
			Name:  "estimate",
			Usage: "what a push would upload (bytes, items) and cost, and the wallet's balance; nothing is signed",
			Description: `Cuts the events not yet on Arweave into segments as a push would and says
what they cost: through a bundler, whether every data item is under its free
size (100 KiB on Turbo); for L1 transactions, the gateway's /price in winston
and AR, and the wallet's balance. The gateway may already hold some of the
segments (a push adopts them): the estimate is an upper bound.`,
			Flags:  []cli.Flag{syncGatewayFlag(), &cli.BoolFlag{Name: "bundle", Usage: "price ANS-104 bundles"}, viaFlag(), bundlerFlag(), segmentBytesFlag()},
			Action: syncEstimateAction,
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
		&cli.StringFlag{Name: "branch", Usage: "when Arweave holds a forked log, the segment transaction `TX` whose history to follow"},
		&cli.BoolFlag{Name: "no-snapshot", Usage: "project every event instead of starting from the newest published snapshot"},
	},
	Action: rebuildAction,
}

func viaFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "via", Usage: "how to upload: l1 (the wallet pays AR), bundle (ANS-104 bundles, the wallet pays AR) or bundler " +
		"(data items through a bundler, free under 100 KiB). Default: bundler when one is configured or remembered, else l1"}
}

func bundlerFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "bundler", EnvVars: []string{"UCL_BUNDLER"}, Usage: "bundler URL (Turbo upload API) for --via bundler (default: [arweave] bundler, the remembered one, else " + ucl.TurboUploadURL + ")"}
}

func segmentBytesFlag() *cli.IntFlag {
	return &cli.IntFlag{Name: "segment-bytes", Value: ucl.DefaultSegmentBytes, Usage: "maximum segment size in bytes (through a bundler the default is 98304, so items stay free)"}
}

func syncEstimateAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl sync estimate [--via bundler|l1|bundle] [--gateway URL]", "unexpected argument %q", c.Args().First())
	}
	req, err := pushRequest(c)
	if err != nil {
		return err
	}
	if err := ucl.CheckGateway(req.Gateway); err != nil {
		return gatewayUsage(err)
	}
	ctx, stop := signalContext()
	defer stop()
	return withAPI(c, func(api ucl.API) error {
		res, err := api.Push(ctx, req)
		if err != nil {
			return mirrorError(err, "ucl sync estimate")
		}
		if jsonOut(c) {
			return printJSON(c, res.Estimate)
		}
		printf(c, "%s\n", res.Estimate.Sentence)
		return nil
	})
}
