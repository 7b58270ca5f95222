package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/snapshot"
)

func snapshotHint(err error) string {
	switch {
	case errors.Is(err, snapshot.ErrNoSnapshot):
		return "make one with `ucl snapshot create`; `ucl snapshot list` shows what exists"
	case errors.Is(err, snapshot.ErrCorrupt):
		return "the snapshot is damaged: remove it, or restore without a NAME to fall back to an older snapshot or a full rebuild"
	case errors.Is(err, snapshot.ErrForeign), errors.Is(err, snapshot.ErrAhead), errors.Is(err, snapshot.ErrDiverged):
		return "the snapshot does not belong to this log's chain; restore without --no-fallback to rebuild from the log instead"
	case errors.Is(err, snapshot.ErrKey):
		return "the snapshot was sealed under a vault-key epoch this keyring lacks (shredded by `ucl keys rotate`, or another store's key)"
	case errors.Is(err, snapshot.ErrEmbedder):
		return "select the embedder the snapshot names (--embedder, --embed-model), or restore without --no-fallback to rebuild the projections with this one"
	case errors.Is(err, snapshot.ErrIncompatible):
		return "the snapshot was made by another ucl version; make a new one with `ucl snapshot create`"
	}
	return ""
}

func snapshotNameArg(c *cli.Context) (string, error) {
	if c.NArg() > 1 {
		return "", usage("give at most one snapshot NAME (see `ucl snapshot list`)", "too many arguments")
	}
	return c.Args().First(), nil
}

var snapshotCommand = &cli.Command{
	Name:  "snapshot",
	Usage: "create, list, verify, restore or publish snapshots of the projections",
	Description: `A snapshot is the state of every projection at one log position (seq N),
encrypted under a fresh key wrapped by the vault key, with a plaintext manifest
(seq, head hash, digests). Restoring one replays only the events after N.
Snapshots live in DIR/snapshots; the newest --keep are kept.`,
	Subcommands: []*cli.Command{
		{
			Name:  "create",
			Usage: "catch the projections up and snapshot them at the log head",
			Flags: []cli.Flag{&cli.IntFlag{Name: "keep", Value: snapshot.DefaultKeep, Usage: "keep this many snapshots (the new one included); older ones are removed; 0 keeps all"}},
			Action: func(c *cli.Context) error {
				if c.Int("keep") < 0 {
					return usage("--keep takes 0 (keep all) or a positive count", "bad --keep %d", c.Int("keep"))
				}
				keep := c.Int("keep")
				if keep == 0 {
					keep = -1
				}
				return withAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, err := api.SnapshotCreate(context.Background(), ucl.SnapshotCreateRequest{Keep: keep, Progress: prog})
					done()
					if err != nil {
						return withHint(err, snapshotHint(err))
					}
					if jsonOut(c) {
						return printJSON(c, res)
					}
					m := res.Manifest
					printf(c, "created %s: seq %d, %s archive (%s of state)\n", m.Name, m.Seq, humanBytes(m.Archive.Size), humanBytes(m.Archive.PlainSize))
					for _, r := range res.Removed {
						printf(c, "removed %s (keeping %d)\n", r, c.Int("keep"))
					}
					return nil
				})
			},
		},
		{
			Name:  "list",
			Usage: "the local snapshots, newest first (no vault key needed)",
			Action: func(c *cli.Context) error {
				return withAPI(c, func(api ucl.API) error {
					res, err := api.SnapshotList(context.Background(), ucl.SnapshotListRequest{})
					if err != nil {
						return err
					}
					if jsonOut(c) {
						return printJSON(c, res)
					}
					if len(res.Snapshots) == 0 {
						printf(c, "no snapshots (make one with `ucl snapshot create`)\n")
						return nil
					}
					printf(c, "%-42s %10s %10s %6s  %s\n", "name", "seq", "size", "epoch", "created")
					for _, in := range res.Snapshots {
						if in.Error != "" {
							printf(c, "%-42s  unreadable: %s\n", in.Name, in.Error)
							continue
						}
						m := in.Manifest
						printf(c, "%-42s %10d %10s %6d  %s\n", in.Name, m.Seq, humanBytes(m.Archive.Size), m.Key.Epoch, m.Created)
					}
					return nil
				})
			},
		},
		{
			Name:      "verify",
			Usage:     "check a snapshot (default: the newest): manifest, archive hash, decryption, and the log at its seq",
			ArgsUsage: "[NAME]",
			Action: func(c *cli.Context) error {
				name, err := snapshotNameArg(c)
				if err != nil {
					return err
				}
				return withAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, verr := api.SnapshotVerify(context.Background(), ucl.SnapshotVerifyRequest{Name: name, Progress: prog})
					done()
					if res == nil {
						return withHint(verr, snapshotHint(verr))
					}
					if jsonOut(c) {
						if err := printJSON(c, res); err != nil {
							return err
						}
					} else {
						for _, ch := range res.Checks {
							st := "ok"
							if ch.Skipped {
								st = "skipped"
							} else if !ch.OK {
								st = "FAILED"
							}
							printf(c, "%-9s %-8s %s\n", ch.Name, st, ch.Detail)
						}
					}
					if verr != nil {
						return withHint(verr, snapshotHint(verr))
					}
					if !jsonOut(c) {
						printf(c, "ok: %s\n", res.Name)
					}
					return nil
				})
			},
		},
		{
			Name:      "restore",
			Usage:     "replace the projections with a snapshot (default: the newest usable) and replay the log after it",
			ArgsUsage: "[NAME]",
			Flags:     []cli.Flag{&cli.BoolFlag{Name: "no-fallback", Usage: "fail instead of rebuilding from the log when no snapshot is usable"}},
			Action: func(c *cli.Context) error {
				name, err := snapshotNameArg(c)
				if err != nil {
					return err
				}
				return withAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, err := api.SnapshotRestore(context.Background(), ucl.SnapshotRestoreRequest{Name: name, NoFallback: c.Bool("no-fallback"), Progress: prog})
					done()
					if err != nil {
						if res != nil && jsonOut(c) {
							printJSON(c, res)
						}
						if snapshot.Refused(err) {
							return withHint(err, snapshotHint(err))
						}
						return err
					}
					if jsonOut(c) {
						return printJSON(c, res)
					}
					for _, r := range res.Refused {
						n := r.Name
						if n == "" {
							n = "(none)"
						}
						printf(c, "refused %s: %s\n", n, r.Reason)
					}
					if res.FellBack {
						printf(c, "no usable snapshot: rebuilt every projection from the log (%d events)\n", res.Replayed)
					} else {
						printf(c, "restored %s (seq %d) and replayed %d events to seq %d\n", res.Snapshot, res.Seq, res.Replayed, res.Head)
					}
					var parts []string
					for _, n := range sortedKeys(res.Digests) {
						parts = append(parts, fmt.Sprintf("%s %.12s", n, res.Digests[n]))
					}
					printf(c, "digests: %s\n", strings.Join(parts, ", "))
					return nil
				})
			},
		},
		{
			Name:      "push",
			Usage:     "publish a snapshot (default: the newest) to Arweave, split into transactions of at most --part-size bytes",
			ArgsUsage: "[NAME]",
			Flags: []cli.Flag{
				syncGatewayFlag(),
				&cli.IntFlag{Name: "part-size", Value: snapshot.DefaultPartSize, Usage: "bytes per transaction"},
			},
			Action: func(c *cli.Context) error {
				name, err := snapshotNameArg(c)
				if err != nil {
					return err
				}
				if c.Int("part-size") < 1024 {
					return usage("--part-size takes at least 1024 bytes", "bad --part-size %d", c.Int("part-size"))
				}
				return withAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, err := api.SnapshotPublish(context.Background(), ucl.SnapshotPublishRequest{Name: name, Gateway: gatewaySetting(c),
						PartSize: c.Int("part-size"), Progress: prog})
					done()
					switch {
					case errors.Is(err, ucl.ErrBadRequest):
						return usage("pass an http(s) URL to --gateway", "%v", err)
					case snapshotHint(err) != "":
						return withHint(err, snapshotHint(err))
					case err != nil:
						return withHint(err, "run the same command again; a snapshot already complete on the gateway is not uploaded twice")
					}
					if jsonOut(c) {
						return printJSON(c, res)
					}
					gw := gatewaySetting(c)
					if gw == "" {
						gw = "the store's gateway"
					}
					if res.Existed {
						printf(c, "%s is already on %s (%d parts)\n", res.Name, gw, len(res.TxIDs))
					} else {
						printf(c, "pushed %s (seq %d, %s) in %d transactions to %s\n", res.Name, res.Seq, humanBytes(int64(res.Bytes)), len(res.TxIDs), gw)
					}
					// Hundreds of part ids help nobody reading a terminal;
					// --json keeps them all.
					if len(res.TxIDs) <= 3 {
						for i, id := range res.TxIDs {
							printf(c, "  part %d: %s\n", i, id)
						}
					} else {
						printf(c, "  parts 0..%d: %s … %s (--json lists every transaction id)\n", len(res.TxIDs)-1, res.TxIDs[0], res.TxIDs[len(res.TxIDs)-1])
					}
					return nil
				})
			},
		},
	},
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
