package main

import (
	"io"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl"
	"github.com/urfave/cli/v2"
)

// findCommand follows a command path ("sync push") through the app.
func findCommand(cmds []*cli.Command, path []string) *cli.Command {
	for _, c := range cmds {
		if c.Name != path[0] && !contains(c.Aliases, path[0]) {
			continue
		}
		if len(path) == 1 {
			return c
		}
		return findCommand(c.Subcommands, path[1:])
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Every CLI command the method table names exists, and takes --json: the
// table is held against the CLI.
func TestMethodTableCLICommands(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	for _, m := range ucl.Methods {
		if m.CLI == "" {
			continue
		}
		words := strings.Fields(m.CLI)
		var path []string
		for _, w := range words {
			if strings.HasPrefix(w, "-") {
				break
			}
			path = append(path, w)
		}
		c := findCommand(app.Commands, path)
		if c == nil {
			t.Errorf("method %s: no command `ucl %s`", m.Name, m.CLI)
			continue
		}
		hasJSON := false
		for _, f := range append(c.Flags, app.Flags...) {
			if contains(f.Names(), "json") {
				hasJSON = true
			}
		}
		if !hasJSON {
			t.Errorf("`ucl %s` has no --json", m.CLI)
		}
	}
}
