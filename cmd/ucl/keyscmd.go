package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/rotate"
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
		&cli.IntFlag{Name: "keys-per-event", Usage: "data keys per rekey event", Value: rotate.DefaultKeysPerEvent, Hidden: true},
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
			if errors.Is(err, rotate.ErrKeyOutsideStore) {
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

var keysSealCommand = &cli.Command{
	Name:  "seal",
	Usage: "seal the vault key file with a passphrase (or change the passphrase)",
	Description: `Rewrites DIR/vault.key encrypted under a key derived from a passphrase
(scrypt, N=2^15 r=8 p=1; AES-256-GCM), overwriting the old file's bytes.
From then on every command that opens the store asks for the passphrase on
the terminal, or reads it from ` + passphraseEnv + `; commands attached to a
running owner do not need it. The passphrase comes from ` + passphraseEnv + `
(or ` + newPassphraseEnv + ` when the key is already sealed: the old one is
then ` + passphraseEnv + `), else it is asked twice on the terminal. Sealing
protects the key file only: the projections hold plaintext (see the README,
"Encryption at rest"). Forgetting the passphrase loses the key: export a
recovery code first (ucl keys export). Refused while a process serves the
store.

--keyring also keeps the passphrase in the OS keyring (the Secret Service
over the D-Bus session bus on Linux, the Keychain on macOS, the Credential
Manager on Windows) under service "ucl" and the store's directory; a
passphrase kept there is updated by a later seal and removed by unseal.
Opening a sealed store then takes ` + passphraseEnv + ` first, else the
keyring, else the terminal. Where no keyring is reachable (no session bus:
servers, containers, CI) it is skipped silently and the passphrase comes
from ` + passphraseEnv + ` or the terminal as before; with --keyring the
seal still happens and ucl says the passphrase was not kept. ` + noKeyringEnv + `=1
never consults the keyring. What the keyring protects is the OS's to say:
anything running as your user in your session can usually read it.`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "keyring", Usage: "also keep the passphrase in the OS keyring, where one is reachable"},
	},
	Action: func(c *cli.Context) error {
		dir := storeDir(c)
		b, err := os.ReadFile(ucl.VaultKeyPath(dir))
		if err != nil {
			return withHint(err, "this store has no vault key file to seal")
		}
		pass, err := newPassphrase(c, crypto.IsSealed(b))
		if err != nil {
			return withHint(err, "set "+passphraseEnv+" (or run on a terminal); nothing was changed")
		}
		_, kept := keyringGet(dir) // an old passphrase kept there must not outlive the seal
		if err := ucl.SealVaultKey(dir, ucl.Options{Passphrase: passphrase(c)}, pass); err != nil {
			return keyFileHint(err)
		}
		var keyringErr error
		if c.Bool("keyring") || kept {
			if keyringErr = keyringSet(dir, pass); keyringErr != nil && kept {
				keyringDelete(dir)
			}
		}
		clear(pass)
		if jsonOut(c) {
			out := map[string]any{"sealed": true, "vault_key": ucl.VaultKeyPath(dir), "keyring": (c.Bool("keyring") || kept) && keyringErr == nil}
			if keyringErr != nil {
				out["keyring_error"] = keyringErr.Error()
			}
			return printJSON(c, out)
		}
		printf(c, "vault key %s sealed: opening the store now needs the passphrase\n", ucl.VaultKeyPath(dir))
		switch {
		case keyringErr != nil:
			printf(c, "the passphrase was not kept in the OS keyring (%v): give it in %s or on the terminal\n", keyringErr, passphraseEnv)
		case c.Bool("keyring") || kept:
			printf(c, "the passphrase is kept in the OS keyring (service %q, account %s)\n", keyringService, keyringUser(dir))
		}
		return nil
	},
}

var keysUnsealCommand = &cli.Command{
	Name:  "unseal",
	Usage: "store the vault key file without a passphrase again",
	Description: `Rewrites a sealed DIR/vault.key as the plain key file (mode 0600), after
opening it with the passphrase (` + passphraseEnv + `, the OS keyring or the
terminal), and removes a passphrase kept in the OS keyring. Refused while a
process serves the store.`,
	Action: func(c *cli.Context) error {
		dir := storeDir(c)
		if err := ucl.UnsealVaultKey(dir, ucl.Options{Passphrase: passphrase(c)}); err != nil {
			return keyFileHint(err)
		}
		removed := keyringDelete(dir)
		if jsonOut(c) {
			return printJSON(c, map[string]any{"sealed": false, "vault_key": ucl.VaultKeyPath(dir), "keyring_removed": removed})
		}
		printf(c, "vault key %s unsealed: its protection is now its file mode (0600) only\n", ucl.VaultKeyPath(dir))
		if removed {
			printf(c, "the passphrase kept in the OS keyring was removed\n")
		}
		return nil
	},
}

// keyFileHint adds what to do to the errors of sealing and unsealing.
func keyFileHint(err error) error {
	switch {
	case errors.Is(err, ucl.ErrOwnerRunning):
		return withHint(err, "stop `ucl serve` / `ucl mcp` on this store, then run this again; nothing was changed")
	case errors.Is(err, ucl.ErrBadPassphrase), errors.Is(err, ucl.ErrSealed):
		return withHint(err, "give the current passphrase in "+passphraseEnv+" or on the terminal; nothing was changed")
	}
	return err
}
