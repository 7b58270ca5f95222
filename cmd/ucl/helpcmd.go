package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// newHelpCommand is `ucl help [COMMAND [SUBCOMMAND]]`. urfave's own help
// command stops at the first level (`ucl help sync push` showed sync), so
// run rewrites a help request naming a known command into `ucl COMMAND …
// --help` (see helpArgs); this action lists the commands, or refuses an
// unknown one.
func newHelpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the commands, or the help of one command (ucl help sync push)",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) == 0 {
				return cli.ShowAppHelp(c)
			}
			n := knownPrefix(c.App.Commands, args)
			cmds := c.App.Commands
			if n > 0 {
				cmds = commandAt(c.App, args[:n]).Subcommands
			}
			return unknownCommand(cmds, strings.Join(args[:n], " "), args[n])
		},
	}
}

// knownPrefix is how many of path's leading words name nested commands.
func knownPrefix(cmds []*cli.Command, path []string) int {
	for i, a := range path {
		var found *cli.Command
		for _, cmd := range cmds {
			if cmd.HasName(a) {
				found = cmd
			}
		}
		if found == nil {
			return i
		}
		cmds = found.Subcommands
	}
	return len(path)
}

// helpArgs turns `ucl [GLOBALS] help CMD [SUB]` into `ucl [GLOBALS] CMD
// [SUB] --help` when the path names a command; other args are unchanged.
func helpArgs(app *cli.App, args []string) []string {
	globals := flagKinds(app.Flags)
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		i += 1 + flagArity(globals, args[i])
	}
	if i+1 >= len(args) || args[i] != "help" {
		return args
	}
	path := args[i+1:]
	if knownPrefix(app.Commands, path) != len(path) {
		return args
	}
	out := append([]string{}, args[:i]...)
	out = append(out, path...)
	return append(out, "--help")
}
