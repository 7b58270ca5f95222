package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/crypto"
)

// version is the ucl release; set by the linker for releases.
var version = "0.1.0-dev"

// commands lists every command (help output sorts them by name).
func commands() []*cli.Command {
	return []*cli.Command{
		initCommand, keysCommand,
		appendCommand, importCommand, storeCommand, storeToolCommand, editCommand, getCommand, replayCommand, tombstoneCommand,
		queryCommand, contextCommand, indexCommand, dedupeCommand, sessionCommand, projectCommand,
		auditCommand, statusCommand, consolidateCommand, profileCommand,
		snapshotCommand, syncCommand, rebuildCommand, shareCommand,
		daemonCommand, mcpCommand, serveCommand, storesCommand, configCommand, versionCommand, newHelpCommand(),
	}
}

// versionInfo is what `ucl version --json` prints.
type versionInfo struct {
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, when the
	// build recorded one.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a tree with changes
	Go       string `json:"go"`
	Platform string `json:"platform"` // GOOS/GOARCH
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

var versionCommand = &cli.Command{
	Name:        "version",
	Usage:       "print the version of ucl (and the commit, Go version and platform it was built with)",
	ArgsUsage:   " ",
	Description: `With --json: {"version","commit","modified","go","platform"} (commit and modified only when the build recorded them).`,
	Action:      printVersion,
}

func printVersion(c *cli.Context) error {
	v := currentVersion()
	if jsonOut(c) {
		return printJSON(c, v)
	}
	commit := ""
	if v.Commit != "" {
		commit = ", commit " + v.Commit[:min(12, len(v.Commit))]
		if v.Modified {
			commit += "+changes"
		}
	}
	printf(c, "ucl %s (%s %s%s)\n", v.Version, v.Go, v.Platform, commit)
	return nil
}

func init() {
	// `ucl --version` says what `ucl version` says.
	cli.VersionPrinter = func(c *cli.Context) {
		if err := printVersion(c); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "ucl: %v\n", err)
		}
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
		Name:  "ucl",
		Usage: "Unlimited Context Log: permanent, encrypted, verifiable memory for LLM tools",
		Description: `Exit status: 0 done; 2 the command line or a value in it is wrong (fix
it and run again); 1 any other failure. An error is one line on stderr
("ucl: …") and a hint ("hint: …"); with --json it is one JSON object on
stderr, {"error":{"message","class","codes","hint","exit"}}, class being
bad_request, not_found, conflict, forbidden, unavailable or internal.`,
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
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &flagError{err: err}
		},
		Before: func(c *cli.Context) error {
			if err := loadFileConfig(c); err != nil {
				return err
			}
			return loadVaultKeyArg(c)
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand(c.App.Commands, "", c.Args().First())
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
		return badValue(err, "--vault-key takes a recovery code (UCL1-…, from `ucl keys export`) or a vault key file")
	}
	c.App.Metadata[metaKeys] = kr
	return nil
}

// vaultKeys is the keyring --vault-key named, nil when none was given.
func vaultKeys(c *cli.Context) *crypto.Keyring {
	kr, _ := c.App.Metadata[metaKeys].(*crypto.Keyring)
	return kr
}

// guarded holds the commands whose Action sortedCommands has wrapped: the
// commands are package values, and tests build many apps over them.
var guarded = map[*cli.Command]bool{}

func sortedCommands() []*cli.Command {
	out := commands()
	var quiet func(parent []string, cs []*cli.Command)
	quiet = func(parent []string, cs []*cli.Command) {
		for _, c := range cs {
			if len(parent) > 0 && c.Name == "help" {
				// urfave's own help subcommand, which its setup adds to a
				// command when it runs (in tests, several runs share the
				// commands): one value shared by every command, listing
				// itself among its subcommands once it has run.
				continue
			}
			path := append(slices.Clone(parent), c.Name)
			if c.OnUsageError == nil {
				c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
					return &flagError{err: err, path: path}
				}
			}
			if len(c.Subcommands) > 0 && c.Action == nil {
				// urfave's default answers an unknown subcommand with "No
				// help topic" and exit status 1.
				c.Action = func(ctx *cli.Context) error {
					if ctx.NArg() == 0 {
						return cli.ShowSubcommandHelp(ctx)
					}
					return unknownCommand(c.Subcommands, strings.Join(path, " "), ctx.Args().First())
				}
			}
			if strings.TrimSpace(c.ArgsUsage) == "" && c.Action != nil && !c.SkipFlagParsing && !guarded[c] {
				// A command that declares no arguments refuses them before
				// it opens anything, rather than ignore them; with
				// subcommands, the word names none of them.
				guarded[c] = true
				action, subs := c.Action, c.Subcommands
				c.Action = func(ctx *cli.Context) error {
					if ctx.NArg() == 0 {
						return action(ctx)
					}
					name := strings.Join(path, " ")
					if len(subs) > 0 {
						return unknownCommand(subs, name, ctx.Args().First())
					}
					return usage(fmt.Sprintf("`ucl %s` takes flags only: see `ucl help %s`", name, name), "unexpected argument %q", ctx.Args().First())
				}
			}
			quiet(path, c.Subcommands)
		}
	}
	quiet(nil, out)
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
	typed := args[min(1, len(args)):]
	var fe *flagError
	if errors.As(err, &fe) {
		err = explainFlagError(app, fe, typed)
	}
	return report(stderr, err, commandIn(app, typed), jsonRequested(args))
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
