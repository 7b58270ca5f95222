package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/httpapi"
	"github.com/unlimitedcontext/ucl/log"
)

var initCommand = &cli.Command{
	Name:  "init",
	Usage: "create a store: log, vault key and Arweave wallet",
	Description: `Creates the store in --dir (default ~/.ucl). The vault key encrypts
everything; without it nothing can be recovered, so export it (ucl keys export)
and keep it somewhere safe. --wallet imports an existing Arweave JWK instead
of generating one. An existing store is never overwritten.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "wallet", Usage: "import this Arweave wallet (JWK file) instead of generating one"},
		&cli.StringFlag{Name: "durability", Value: "sync", Usage: "sync (fsync each append), group (shared fsync) or none (UNSAFE, bulk import)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl init takes no arguments; use --dir to choose the directory", "unexpected argument %q", c.Args().First())
		}
		d, err := log.ParseDurability(c.String("durability"))
		if err != nil {
			return usage("use --durability sync, group or none", "%v", err)
		}
		var w *ucl.Wallet
		if p := c.String("wallet"); p != "" {
			if w, err = ucl.LoadWallet(p); err != nil {
				return badValue(err, "--wallet takes an Arweave JWK file")
			}
		}
		var kr *crypto.Keyring
		kr = vaultKeys(c)
		s, err := ucl.Init(storeDir(c), ucl.InitOptions{Keys: kr, Wallet: w, Durability: d})
		if err != nil {
			return err
		}
		defer s.Close()
		st, err := s.Status(c.Context, ucl.StatusRequest{})
		if err != nil {
			return err
		}
		// The bearer token of `ucl serve`'s TCP listener (0600).
		if _, err := httpapi.LoadToken(st.Dir); err != nil {
			return fmt.Errorf("init: create the serve token: %w", err)
		}
		vault := ucl.VaultKeyPath(st.Dir)
		if jsonOut(c) {
			return printJSON(c, map[string]any{"dir": st.Dir, "log_id": st.LogID, "wallet_address": st.WalletAddress,
				"vault_key": vault, "durability": d.String()})
		}
		printf(c, "Initialized ucl store in %s\n", st.Dir)
		printf(c, "  log id:          %s\n", st.LogID)
		printf(c, "  wallet address:  %s\n", st.WalletAddress)
		printf(c, "  vault key:       %s (mode 0600)\n", vault)
		printf(c, "Back up the vault key now: `ucl keys export` prints a recovery code.\n")
		printf(c, "Without it, neither this device nor Arweave can give your memory back.\n")
		return nil
	},
}

var keysCommand = &cli.Command{
	Name:  "keys",
	Usage: "export, import, rotate, seal or unseal the vault key",
	Subcommands: []*cli.Command{
		keysRotateCommand,
		keysSealCommand,
		keysUnsealCommand,
		{
			Name:  "export",
			Usage: "print the vault key as a recovery code",
			Action: func(c *cli.Context) error {
				kr, err := ucl.LoadVaultKey(storeDir(c), engineOptions(c))
				if err != nil {
					return err
				}
				if kr == nil {
					return withHint(ucl.ErrNoVaultKey, "pass it with --vault-key FILE")
				}
				if jsonOut(c) {
					return printJSON(c, map[string]any{"recovery_code": kr.RecoveryCode(), "fingerprint": kr.Fingerprint(),
						"epoch": kr.Current(), "note": exportNote})
				}
				printf(c, "%s\n", kr.RecoveryCode())
				fmt.Fprintf(c.App.ErrWriter, "Vault-key epoch %d. %s\n", kr.Current(), exportNote)
				return nil
			},
		},
		{
			Name:      "import",
			Usage:     "install a vault key (recovery code or key file) into a store",
			ArgsUsage: "CODE|FILE",
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usage("ucl keys import UCL1-… (or a file holding it)", "want one recovery code or key file")
				}
				arg := c.Args().First()
				kr, err := crypto.LoadKeyArg(arg)
				if err != nil {
					return withHint(err, "give the recovery code printed by `ucl keys export`, or a vault key file; nothing was written")
				}
				dir := storeDir(c)
				if err := ucl.ImportVaultKey(dir, kr); err != nil {
					if errors.Is(err, ucl.ErrWrongVaultKey) {
						return withHint(err, "this key belongs to another store, or to a vault-key epoch a rotation wiped (export a new code with `ucl keys export` on a device that has the store); nothing was written")
					}
					return err
				}
				if jsonOut(c) {
					return printJSON(c, map[string]any{"imported": true, "fingerprint": kr.Fingerprint()})
				}
				printf(c, "Vault key installed in %s\n", ucl.VaultKeyPath(dir))
				return nil
			},
		},
	},
}
