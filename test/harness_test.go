// Package test drives the built ucl binary end to end, in temp dirs, the way
// a user or a script would.
package test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

var uclBin string

// raceExitEnv turns off the race runtime's sleep at exit (atexit_sleep_ms,
// 1 s by default) in every ucl this package starts: each of the hundreds
// of commands here would otherwise idle a second after its work. Races
// are still reported as they happen, and the exit code is still 66 when
// one was (Go's own race output tests run with the same setting). An
// explicit GORACE atexit_sleep_ms is kept.
func raceExitEnv() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// e2eParallel is how many tests of this package run at once unless
// -parallel is given. The tests mostly wait (on processes, arlocal,
// kill trials), so more of them than GOMAXPROCS keep the cores busy. Each
// test that calls t.Parallel has its own temp dirs, stores and, where it
// needs one, its own arlocal on a free port; a test that does not call
// t.Parallel runs alone, before the parallel ones, as before.
const e2eParallel = 6

func TestMain(m *testing.M) {
	// Children inherit it, however a test starts them (ucl, exec.Command
	// with os.Environ(), node clients that spawn ucl).
	raceExitEnv()
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(max(e2eParallel, runtime.GOMAXPROCS(0))))
	}
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
	if !raceEnabled {
		// As make build does (see the Makefile): no cgo, so no secp256k1
		// context built at every start, which the command benchmarks
		// would otherwise count. The race detector needs cgo.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
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
	// A race in the binary fails the test even where the command is
	// expected to fail (its exit code alone would not tell).
	if strings.Contains(e.String(), "WARNING: DATA RACE") {
		t.Errorf("ucl %s: the race detector reported:\n%s", strings.Join(args, " "), e.String())
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
