package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/store"
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
		var w *crypto.Wallet
		if p := c.String("wallet"); p != "" {
			if w, err = crypto.LoadWallet(p); err != nil {
				return withHint(err, "--wallet takes an Arweave JWK file")
			}
		}
		var kr *crypto.Keyring
		if p := c.String("vault-key"); p != "" {
			if kr, err = crypto.LoadKeyring(p); err != nil {
				return err
			}
		}
		s, err := store.Init(storeDir(c), store.InitOptions{Keys: kr, Wallet: w, Durability: d})
		if err != nil {
			return err
		}
		defer s.Close()
		if jsonOut(c) {
			return printJSON(c, map[string]any{"dir": s.Dir, "log_id": s.Meta.LogID, "wallet_address": s.Meta.WalletAddress,
				"vault_key": filepath.Join(s.Dir, store.VaultFile), "durability": d.String()})
		}
		printf(c, "Initialized ucl store in %s\n", s.Dir)
		printf(c, "  log id:          %s\n", s.Meta.LogID)
		printf(c, "  wallet address:  %s\n", s.Meta.WalletAddress)
		printf(c, "  vault key:       %s (mode 0600)\n", filepath.Join(s.Dir, store.VaultFile))
		printf(c, "Back up the vault key now: `ucl keys export` prints a recovery code.\n")
		printf(c, "Without it, neither this device nor Arweave can give your memory back.\n")
		return nil
	},
}

var keysCommand = &cli.Command{
	Name:  "keys",
	Usage: "export or import the vault key",
	Subcommands: []*cli.Command{
		{
			Name:  "export",
			Usage: "print the vault key as a recovery code",
			Action: func(c *cli.Context) error {
				m, err := store.ReadMeta(storeDir(c))
				if err != nil {
					return err
				}
				kr, err := loadKeysFor(c, m)
				if err != nil {
					return err
				}
				if kr == nil {
					return withHint(fmt.Errorf("this store has no vault key"), "pass it with --vault-key FILE")
				}
				if jsonOut(c) {
					return printJSON(c, map[string]any{"recovery_code": kr.RecoveryCode(), "fingerprint": kr.Fingerprint()})
				}
				printf(c, "%s\n", kr.RecoveryCode())
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
				m, err := store.ReadMeta(dir)
				if err != nil {
					return err
				}
				if m.KeyFingerprint != kr.Fingerprint() {
					return withHint(fmt.Errorf("import key: %w", store.ErrWrongVaultKey), "this key belongs to another store; nothing was written")
				}
				if err := kr.Save(filepath.Join(dir, store.VaultFile)); err != nil {
					return err
				}
				if jsonOut(c) {
					return printJSON(c, map[string]any{"imported": true, "fingerprint": kr.Fingerprint()})
				}
				printf(c, "Vault key installed in %s\n", filepath.Join(dir, store.VaultFile))
				return nil
			},
		},
	},
}

func init() { register(initCommand, keysCommand) }
