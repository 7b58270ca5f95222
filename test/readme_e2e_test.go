package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeMarker precedes each README block that must run as written.
const readmeMarker = "<!-- readme-test: runs literally, in order -->"

// readmeBlocks returns the shell blocks of the README that follow
// readmeMarker, each as its lines.
func readmeBlocks(t *testing.T, readme string) [][]string {
	t.Helper()
	var blocks [][]string
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != readmeMarker {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```sh" {
			t.Fatalf("README line %d: %s is not followed by a ```sh block", i+1, readmeMarker)
		}
		var block []string
		j := i + 2
		for ; j < len(lines) && lines[j] != "```"; j++ {
			block = append(block, lines[j])
		}
		if j == len(lines) {
			t.Fatalf("README line %d: the block never ends", i+2)
		}
		blocks = append(blocks, block)
		i = j
	}
	return blocks
}

// The README's "Using it" blocks run literally, in order, against a fresh
// store in a fresh home directory: every command succeeds and none answers
// "no results". The commands are run by sh, one line at a time, with the
// built ucl first on PATH and no UCL_* setting from the environment.
func TestReadmeUsingItRunsLiterally(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	blocks := readmeBlocks(t, readme)
	using := strings.Index(readme, "\n## Using it\n")
	first := strings.Index(readme, readmeMarker)
	if len(blocks) < 2 || using < 0 || first < using {
		t.Fatalf("found %d marked blocks (the first at byte %d, \"## Using it\" at %d): want the section's two blocks marked", len(blocks), first, using)
	}
	home := t.TempDir()
	work := t.TempDir() // the empty directory the README speaks of
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "UCL_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "PATH="+filepath.Dir(uclBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := 0
	for bi, block := range blocks {
		for _, line := range block {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			cmd := exec.Command("sh", "-ec", line)
			cmd.Dir, cmd.Env = work, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err != nil {
				t.Fatalf("README block %d: %s\nfailed (%v):\n%s", bi+1, line, err, out.String())
			}
			if strings.Contains(strings.ToLower(out.String()), "no results") {
				t.Fatalf("README block %d: %s\nfound nothing:\n%s", bi+1, line, out.String())
			}
			if strings.Contains(out.String(), "WARNING: DATA RACE") {
				t.Fatalf("README block %d: %s\nthe race detector reported:\n%s", bi+1, line, out.String())
			}
			if strings.Contains(line, "ucl ") {
				ran++
			}
		}
	}
	if ran < 30 {
		t.Fatalf("only %d ucl command lines ran: the README's blocks lost their commands or the extraction broke", ran)
	}
	// The first block's `ucl init` made the store the rest used: ~/.ucl.
	if _, err := os.Stat(filepath.Join(home, ".ucl", "vault.key")); err != nil {
		t.Fatalf("the README's store is not in ~/.ucl: %v", err)
	}
}
