package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
)

// version is the ucl release; set by the linker for releases.
var version = "0.1.0-dev"

// commands lists every command (help output sorts them by name).
func commands() []*cli.Command {
	return []*cli.Command{
		initCommand, keysCommand,
		appendCommand, storeCommand, storeToolCommand, editCommand, getCommand, replayCommand, tombstoneCommand,
		queryCommand, contextCommand, indexCommand, dedupeCommand, sessionCommand, projectCommand,
		auditCommand, statusCommand,
		snapshotCommand, syncCommand, rebuildCommand, shareCommand,
		daemonCommand, mcpCommand, serveCommand, configCommand, newHelpCommand(),
	}
}

var (
	dirFlag = &cli.StringFlag{
		Name: "dir", EnvVars: []string{"UCL_DIR"}, Usage: "store directory",
		Value: defaultDir(),
	}
	jsonFlag     = &cli.BoolFlag{Name: "json", Usage: "machine-readable JSON output, no progress bars"}
	vaultKeyFlag = &cli.StringFlag{Name: "vault-key", EnvVars: []string{"UCL_VAULT_KEY"}, Usage: "vault key: a recovery code (UCL1-…), or a key or recovery code file (default DIR/vault.key)"}
	globalFlags  = append([]cli.Flag{dirFlag, jsonFlag, vaultKeyFlag}, embedderFlags...)
)

func defaultDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".ucl")
	}
	return ".ucl"
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:    "ucl",
		Usage:   "Unlimited Context Log: permanent, encrypted, verifiable memory for LLM tools",
		Version: version,
		// urfave adds --help only beside its own help command, which
		// newHelpCommand replaces: without it `ucl --help` was a usage error.
		Flags: append(slices.Clone(globalFlags), cli.HelpFlag),
		// Commands are sorted by name for help output.
		Commands:             sortedCommands(),
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {}, // run() prints errors
		HideHelpCommand:      true,                         // newHelpCommand replaces urfave's
		Metadata:             map[string]any{},
		Before: func(c *cli.Context) error {
			if err := loadFileConfig(c); err != nil {
				return err
			}
			return loadVaultKeyArg(c)
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usage("run `ucl help` for the list of commands", "unknown command %q", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
}

// metaKeys is the App.Metadata entry holding the keyring --vault-key named.
const metaKeys = "vault-keys"

// loadVaultKeyArg reads --vault-key once, before any command: a recovery
// code typed on the command line works like a key file.
func loadVaultKeyArg(c *cli.Context) error {
	v := c.String("vault-key")
	if v == "" {
		return nil
	}
	kr, err := crypto.LoadKeyArg(v)
	if err != nil {
		return withHint(err, "--vault-key takes a recovery code (UCL1-…, from `ucl keys export`) or a vault key file")
	}
	c.App.Metadata[metaKeys] = kr
	return nil
}

// vaultKeys is the keyring --vault-key named, nil when none was given.
func vaultKeys(c *cli.Context) *crypto.Keyring {
	kr, _ := c.App.Metadata[metaKeys].(*crypto.Keyring)
	return kr
}

func sortedCommands() []*cli.Command {
	out := commands()
	var quiet func(cs []*cli.Command)
	quiet = func(cs []*cli.Command) {
		for _, c := range cs {
			if c.OnUsageError == nil {
				c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
					return &usageError{msg: err.Error()}
				}
			}
			quiet(c.Subcommands)
		}
	}
	quiet(out)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// run is main without os.Exit, for tests.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	err := app.Run(reorderArgs(app, helpArgs(app, args)))
	if err == nil {
		return 0
	}
	var he *hintError
	msg := err.Error()
	hint := ""
	if errors.As(err, &he) {
		hint = he.hint
	} else {
		hint = defaultHint(err)
	}
	fmt.Fprintf(stderr, "ucl: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	var ue *usageError
	if errors.As(err, &ue) || strings.Contains(msg, "flag provided but not defined") || strings.Contains(msg, "invalid value") {
		return 2
	}
	return 1
}

// hintError carries a hint for the user: what to do next.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hint: hint}
}

// usageError is a bad command line (exit status 2).
type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }

func usage(hint, format string, a ...any) error {
	return &hintError{err: &usageError{msg: fmt.Sprintf(format, a...)}, hint: hint}
}

func defaultHint(err error) string {
	var ce *log.CorruptionError
	switch {
	case errors.Is(err, log.ErrDamagedTail), errors.Is(err, log.ErrLost):
		return "the log was damaged after these events were acknowledged, so nothing was cut: see `ucl audit verify`; `ucl audit repair` cuts the log back to its last sound event (keeping the cut bytes in the store's corrupt/ folder), and a store mirrored to Arweave can be recovered with `ucl rebuild`"
	case errors.As(err, &ce):
		return "the log is damaged: run `ucl audit verify` for details; a store mirrored to Arweave can be recovered with `ucl rebuild`"
	case errors.Is(err, log.ErrLocked):
		return "another ucl process is using this store"
	case errors.Is(err, ucl.ErrSealed), errors.Is(err, ucl.ErrBadPassphrase):
		return "the vault key is sealed: give its passphrase in UCL_PASSPHRASE or on the terminal (ucl keys unseal removes the seal)"
	case errors.Is(err, ucl.ErrWrongVaultKey):
		return "pass this store's vault key with --vault-key FILE"
	case errors.Is(err, ucl.ErrNoWallet), errors.Is(err, ucl.ErrBadWallet):
		return "copy the store's Arweave wallet JWK to DIR/wallet.json"
	case errors.Is(err, log.ErrNoKeys):
		return "no vault key here: pass it with --vault-key FILE (or import it with `ucl keys import`)"
	case strings.Contains(err.Error(), "probe embedding model"):
		return "check --embed-url and --embed-model, or pass --embed-dim"
	case strings.Contains(err.Error(), "catch up projections"):
		return "the log is untouched; fix the cause (e.g. the embedding server) and run the command again, it resumes"
	case strings.Contains(err.Error(), "flag provided but not defined"):
		return "see `ucl help COMMAND` for the flags a command takes"
	}
	return ""
}

// reorderArgs lets flags follow positional arguments (`ucl query "text" --k 5`):
// urfave/cli v2 stops parsing flags at the first positional argument. It
// walks to the (sub)command, then moves every flag token of that command
// before its positionals, and global flags given after the command before
// the command. A "--" ends flag processing as usual.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	globals := flagKinds(app.Flags)
	var pre []string // program + global flags
	pre = append(pre, args[0])
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		n := flagArity(globals, args[i])
		pre = append(pre, args[i:min(i+1+n, len(args))]...)
		i += 1 + n
	}
	if i >= len(args) {
		return args
	}
	var cmd *cli.Command
	cmds := app.Commands
	var path []string
	for i < len(args) {
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(args[i]) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd = next
		path = append(path, args[i])
		cmds = cmd.Subcommands
		i++
	}
	if cmd == nil {
		return args
	}
	local := flagKinds(cmd.Flags)
	var flags, pos, moved []string
	for i < len(args) {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			name := flagName(a)
			if _, ok := local[name]; ok || name == "help" || name == "h" {
				n := flagArity(local, a)
				flags = append(flags, args[i:min(i+1+n, len(args))]...)
				i += 1 + n
				continue
			}
			if _, ok := globals[name]; ok {
				n := flagArity(globals, a)
				moved = append(moved, args[i:min(i+1+n, len(args))]...)
				i += 1 + n
				continue
			}
			// Unknown flag: leave it for urfave to report.
			flags = append(flags, a)
			i++
			continue
		}
		pos = append(pos, a)
		i++
	}
	out := append(pre, moved...)
	out = append(out, path...)
	out = append(out, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

func flagName(a string) string {
	a = strings.TrimLeft(a, "-")
	if i := strings.IndexByte(a, '='); i >= 0 {
		a = a[:i]
	}
	return a
}

// flagKinds maps every flag name and alias to whether it takes a value.
func flagKinds(fs []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range fs {
		takes := true
		if _, ok := f.(*cli.BoolFlag); ok {
			takes = false
		}
		for _, n := range f.Names() {
			m[n] = takes
		}
	}
	return m
}

func flagArity(kinds map[string]bool, a string) int {
	if strings.Contains(a, "=") {
		return 0
	}
	if kinds[flagName(a)] {
		return 1
	}
	return 0
}
