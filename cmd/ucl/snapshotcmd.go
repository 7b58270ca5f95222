package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// stagedProgress returns a snapshot.Progress that draws one bar per stage
// (on a terminal only) and a func that ends the current bar.
func stagedProgress(c *cli.Context) (snapshot.Progress, func()) {
	var cur *progress
	var name string
	return func(stage string, done, total uint64) {
			if stage != name {
				cur.Done()
				cur, name = newProgress(c, stage, total), stage
			}
			cur.Set(done, total)
		}, func() {
			cur.Done()
		}
}

func snapshotEnv(c *cli.Context, s *store.Store) (snapshot.Env, error) {
	o, err := projOptions(c, s)
	if err != nil {
		return snapshot.Env{}, err
	}
	return snapshot.EnvFor(s, o), nil
}

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
				s, err := openStore(c)
				if err != nil {
					return err
				}
				defer s.Close()
				env, err := snapshotEnv(c, s)
				if err != nil {
					return err
				}
				keep := c.Int("keep")
				if keep == 0 {
					keep = -1
				}
				prog, done := stagedProgress(c)
				res, err := snapshot.Create(context.Background(), env, snapshot.CreateOptions{Keep: keep, Progress: prog})
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
			},
		},
		{
			Name:  "list",
			Usage: "the local snapshots, newest first (no vault key needed)",
			Action: func(c *cli.Context) error {
				l, err := snapshot.List(filepath.Join(storeDir(c), store.SnapshotsDir))
				if err != nil {
					return err
				}
				if jsonOut(c) {
					type item struct {
						snapshot.Info
						Error string `json:"error,omitempty"`
					}
					out := []item{}
					for _, in := range l {
						it := item{Info: in}
						if in.Err != nil {
							it.Error = in.Err.Error()
						}
						out = append(out, it)
					}
					return printJSON(c, map[string]any{"snapshots": out})
				}
				if len(l) == 0 {
					printf(c, "no snapshots (make one with `ucl snapshot create`)\n")
					return nil
				}
				printf(c, "%-42s %10s %10s %6s  %s\n", "name", "seq", "size", "epoch", "created")
				for _, in := range l {
					if in.Err != nil {
						printf(c, "%-42s  unreadable: %v\n", in.Name, in.Err)
						continue
					}
					m := in.Manifest
					printf(c, "%-42s %10d %10s %6d  %s\n", in.Name, m.Seq, humanBytes(m.Archive.Size), m.Key.Epoch, m.Created)
				}
				return nil
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
				s, err := openStoreMaybeKeys(c)
				if err != nil {
					return err
				}
				defer s.Close()
				in, err := snapshot.Find(s.Path(store.SnapshotsDir), name)
				if err != nil {
					return withHint(err, snapshotHint(err))
				}
				o := snapshot.VerifyOptions{Log: s.Log, LogID: s.Meta.LogIDBytes()}
				if s.Keys != nil {
					o.Keys = s.Keys
				}
				p := newProgress(c, "verify", 0)
				o.Progress = p.Set
				_, checks, verr := snapshot.Verify(context.Background(), in.Dir, o)
				p.Done()
				if jsonOut(c) {
					out := map[string]any{"name": in.Name, "ok": verr == nil, "checks": checks}
					if verr != nil {
						out["error"] = verr.Error()
					}
					if err := printJSON(c, out); err != nil {
						return err
					}
				} else {
					for _, ch := range checks {
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
					return withHint(fmt.Errorf("snapshot verify %s: %w", in.Name, verr), snapshotHint(verr))
				}
				if !jsonOut(c) {
					printf(c, "ok: %s\n", in.Name)
				}
				return nil
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
				s, err := openStore(c)
				if err != nil {
					return err
				}
				defer s.Close()
				env, err := snapshotEnv(c, s)
				if err != nil {
					return err
				}
				prog, done := stagedProgress(c)
				res, err := snapshot.Restore(context.Background(), env, snapshot.RestoreOptions{Name: name, Fallback: !c.Bool("no-fallback"), Progress: prog})
				done()
				if err != nil {
					if res != nil && jsonOut(c) {
						printJSON(c, res)
					}
					if snapshot.Refused(err) {
						return withHint(fmt.Errorf("%w; the projections were not changed", err), snapshotHint(err))
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
				for _, n := range snapshotDigestNames(res.Digests) {
					parts = append(parts, fmt.Sprintf("%s %.12s", n, res.Digests[n]))
				}
				printf(c, "digests: %s\n", strings.Join(parts, ", "))
				return nil
			},
		},
		{
			Name:      "push",
			Usage:     "publish a snapshot (default: the newest) to Arweave, split into transactions of at most --part-size bytes",
			ArgsUsage: "[NAME]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "gateway", EnvVars: []string{"UCL_GATEWAY"}, Value: "https://arweave.net", Usage: "Arweave gateway URL"},
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
				s, err := openStore(c)
				if err != nil {
					return err
				}
				defer s.Close()
				w, err := storeArweaveWallet(s)
				if err != nil {
					return err
				}
				client, err := arweave.NewClient(c.String("gateway"), w, arweave.Options{})
				if err != nil {
					return usage("pass an http(s) URL to --gateway", "%v", err)
				}
				in, err := snapshot.Find(s.Path(store.SnapshotsDir), name)
				if err != nil {
					return withHint(err, snapshotHint(err))
				}
				p := newProgress(c, "push", 0)
				res, err := snapshot.Push(context.Background(), client, in.Dir, snapshot.PushOptions{PartSize: c.Int("part-size"), Progress: p.Set})
				p.Done()
				if err != nil {
					return withHint(err, "run the same command again; a snapshot already complete on the gateway is not uploaded twice")
				}
				if jsonOut(c) {
					return printJSON(c, res)
				}
				if res.Existed {
					printf(c, "%s is already on %s (%d parts)\n", res.Name, client.Gateway(), len(res.TxIDs))
				} else {
					printf(c, "pushed %s (seq %d, %s) in %d transactions to %s\n", res.Name, res.Seq, humanBytes(int64(res.Bytes)), len(res.TxIDs), client.Gateway())
				}
				for i, id := range res.TxIDs {
					printf(c, "  part %d: %s\n", i, id)
				}
				return nil
			},
		},
	},
}

// storeArweaveWallet returns the store's wallet as an arweave.Wallet. The
// JWK written by crypto.NewWallet omits p and q, which arweave.ParseWallet
// requires, so the key is re-encoded from the parsed private key when the
// file alone does not parse.
func storeArweaveWallet(s *store.Store) (*arweave.Wallet, error) { return storeWallet(s) }

func snapshotDigestNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func init() { register(snapshotCommand) }
