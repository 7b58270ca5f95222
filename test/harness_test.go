// Package test drives the built ucl binary end to end, in temp dirs, the way
// a user or a script would.
package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var uclBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ucl-e2e-bin-")
	if err != nil {
		panic(err)
	}
	uclBin = filepath.Join(dir, "ucl")
	args := []string{"build", "-o", uclBin}
	if raceEnabled {
		args = append(args, "-race") // the binary's goroutines are checked too
	}
	cmd := exec.Command("go", append(args, "../cmd/ucl")...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build ucl:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
}

// ucl runs the binary with UCL_DIR=dir.
func ucl(t testing.TB, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(uclBin, args...)
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=")
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{o.String(), e.String(), code}
}

// must runs ucl and fails the test on a non-zero exit.
func must(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	r := ucl(t, dir, stdin, args...)
	if r.code != 0 {
		t.Fatalf("ucl %s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

func newStore(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	must(t, dir, "", "init")
	return dir
}

// jsonLines decodes JSONL output.
func jsonLines(t testing.TB, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(s), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("bad JSON line %q: %v", ln, err)
		}
		out = append(out, m)
	}
	return out
}

func jsonDoc(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad JSON %q: %v", s, err)
	}
	return m
}
