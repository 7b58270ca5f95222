package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

var docFiles = []string{"../../README.md", "../../docs/design.md", "../../docs/mcp.md", "../../docs/serve.md", "../../docs/sharing.md"}

// The README and docs work from a clone alone: no link or reference leaves
// the repository, and every relative link names a file in it.
func TestDocsSelfContained(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, f := range docFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"DESIGN.md", "../shared", "team checkout"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s refers to %q, outside the repository", f, bad)
			}
		}
		for _, m := range link.FindAllStringSubmatch(s, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			p := filepath.Join(filepath.Dir(f), target)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
			}
			if rel, err := filepath.Rel("../..", p); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links outside the repository: %s", f, target)
			}
		}
	}
}

// Every `ucl …` line in the docs' shell blocks names a real command and
// flags that command (or the app) defines.
func TestDocsCommandsExist(t *testing.T) {
	app := newApp(nil, nil, nil)
	globals := flagKinds(app.Flags)
	checked := 0
	for _, f := range docFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for _, ln := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(ln, "```") {
				in = strings.HasPrefix(ln, "```sh") && !in
				continue
			}
			if !in {
				continue
			}
			if i := strings.Index(ln, "#"); i >= 0 {
				ln = ln[:i]
			}
			for _, part := range regexp.MustCompile(`&&|;|\|`).Split(ln, -1) {
				words := strings.Fields(strings.TrimPrefix(strings.TrimSpace(part), "code=$("))
				if len(words) == 0 || (words[0] != "ucl" && words[0] != "bin/ucl") {
					continue
				}
				words = words[1:]
				for len(words) > 0 && strings.HasPrefix(words[0], "--") {
					words = words[1+flagArity(globals, words[0]):]
				}
				n := knownPrefix(app.Commands, words)
				if n == 0 {
					t.Errorf("%s: %q: unknown command", f, part)
					continue
				}
				cmds, cmd := app.Commands, (*cli.Command)(nil)
				for _, w := range words[:n] {
					for _, c := range cmds {
						if c.HasName(w) {
							cmd = c
						}
					}
					cmds = cmd.Subcommands
				}
				local := flagKinds(cmd.Flags)
				for _, w := range words[n:] {
					if !strings.HasPrefix(w, "--") {
						continue
					}
					name := flagName(w)
					if _, ok := local[name]; !ok {
						if _, ok := globals[name]; !ok {
							t.Errorf("%s: %q: %s has no flag --%s", f, part, cmd.Name, name)
						}
					}
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d ucl command lines found: the scan is broken", checked)
	}
}
