package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

// exportNote is what `ucl keys export` says about rotations.
const exportNote = "This code is the key of the current vault-key epoch. `ucl keys rotate` shreds tombstoned content by wiping " +
	"that key from the store, but it cannot wipe copies of this code: after a rotation, destroy every code exported before it " +
	"(whoever holds one could still decrypt the shredded events from Arweave; it no longer opens the store) and export a new one."

var keysRotateCommand = &cli.Command{
	Name:  "rotate",
	Usage: "shred tombstoned content: new vault-key epoch, live data keys rewrapped, the old epoch wiped",
	Description: `Makes vault-key epoch e+1, appends rekey events that rewrap the data key of
every event except tombstoned content, rebuilds the projections from the
live log, deletes the local snapshots and the corrupt/ leftovers, keeps
only live chunks in the embedding cache, then wipes epoch e from the vault
key file. After it nobody, you included, can decrypt the tombstoned
content, from this device or from Arweave. It cannot be undone.

Recovery codes exported before the rotation no longer open the store, but
they still hold the wiped key: destroy them (whoever keeps one could
decrypt the shredded events from Arweave), and export a new code
afterwards (ucl keys export). Run ucl sync push afterwards so that
Arweave holds the rekey events; a store rebuilt with the new key needs
them. Asks for confirmation on a terminal; --yes skips it (and is
required when standard input is not a terminal).`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
		&cli.IntFlag{Name: "keys-per-event", Usage: "data keys per rekey event", Value: ucl.DefaultRekeyKeysPerEvent, Hidden: true},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl keys rotate [--yes]", "unexpected argument %q", c.Args().First())
		}
		if !c.Bool("yes") {
			if !stdinIsTerminal(c) || jsonOut(c) {
				return usage("pass --yes to rotate without a terminal to confirm on", "a key rotation cannot be undone and needs confirmation")
			}
			fmt.Fprint(c.App.ErrWriter, "This wipes the current vault-key epoch: tombstoned content becomes unreadable for everyone,\n"+
				"forever, and recovery codes exported so far stop working. Type \"rotate\" to continue: ")
			line, _ := bufio.NewReader(c.App.Reader).ReadString('\n')
			if strings.TrimSpace(line) != "rotate" {
				return usage("type rotate, or pass --yes", "not confirmed; nothing was changed")
			}
		}
		prog, done := stagedProgress(c)
		req := ucl.RotateKeysRequest{KeysPerEvent: c.Int("keys-per-event"), Progress: prog}
		return withAPI(c, func(api ucl.API) error {
			res, err := api.RotateKeys(context.Background(), req)
			done()
			if errors.Is(err, ucl.ErrKeyOutsideStore) {
				return withHint(err, "run it without --vault-key (and UCL_VAULT_KEY), with the key in the store's vault.key (`ucl keys import` puts it there); nothing was changed")
			}
			if errors.Is(err, log.ErrNoKeys) {
				return withHint(err, "a rotation needs the vault key: pass it with --vault-key FILE; nothing was changed")
			}
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			printf(c, "Rotated the vault key: epoch %d -> %d (fingerprint %s); epoch %d is wiped.\n", res.FromEpoch, res.ToEpoch, res.Fingerprint, res.FromEpoch)
			printf(c, "  rewrapped:  %d data keys in %d rekey events\n", res.Rekeyed, res.RekeyEvents)
			printf(c, "  shredded:   %d tombstoned events (%d shredded by earlier rotations)\n", len(res.Shredded), res.ShreddedBefore)
			printf(c, "  local:      projections rebuilt, %d snapshots deleted, %d embedding-cache entries dropped, %d corrupt/ files deleted\n",
				len(res.SnapshotsDeleted), res.EmbedCacheDropped, len(res.CorruptDeleted))
			printf(c, "%s\n", res.Note)
			printf(c, "Next: `ucl keys export` (a new recovery code) and `ucl sync push` (the rekey events to Arweave).\n")
			return nil
		})
	},
}
