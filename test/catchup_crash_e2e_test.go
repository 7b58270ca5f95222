package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// projectDigests runs `ucl project --json` on dir and returns name →
// digest (and fails on a non-zero exit).
func projectDigests(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command(uclBin, "project", "--json", "--digests")
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("ucl project: %v\n%s", err, e.String())
	}
	var res struct {
		Projections []struct {
			Name   string `json:"name"`
			Digest string `json:"digest"`
			Behind uint64 `json:"behind"`
		} `json:"projections"`
	}
	if err := json.Unmarshal(o.Bytes(), &res); err != nil {
		t.Fatalf("decode ucl project --json: %v\n%s", err, o.String())
	}
	out := map[string]string{}
	for _, p := range res.Projections {
		if p.Behind != 0 {
			t.Fatalf("projection %s is %d behind after ucl project", p.Name, p.Behind)
		}
		if p.Digest == "" {
			t.Fatalf("ucl project --digests gave no digest of %s", p.Name)
		}
		out[p.Name] = p.Digest
	}
	return out
}

// kill -9 of `ucl project` during a bulk catch-up (12K turns: more than one
// commit and than the compaction threshold), again and again with doubling
// delays until one run finishes first, wherever the kills land (a commit,
// a compaction, between; each run resumes from the last commit): the
// digests are then those of an uninterrupted catch-up of the same log, and
// `ucl project verify` agrees with a fresh rebuild.
func TestCatchUpKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 12K-turn store")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	must(t, dir, "", "init", "--durability", "none")
	must(t, dir, string(benchTurns(12_000, 0)), "append", "-")
	clean := copyDir(t, dir)
	want := projectDigests(t, clean)

	kills := 0
	for delay := 500 * time.Millisecond; ; delay *= 2 {
		cmd := exec.Command(uclBin, "project")
		cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=")
		var e bytes.Buffer
		cmd.Stderr = &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		killed := ok && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		if err != nil && !killed {
			t.Fatalf("ucl project: %v\n%s", err, e.String())
		}
		// The projections a kill left written without fsyncs (the
		// next open, in this boot, makes them durable and resumes).
		marks, _ := filepath.Glob(filepath.Join(dir, "projections", "*", "UNSYNCED"))
		for i, m := range marks {
			marks[i] = filepath.Base(filepath.Dir(m))
		}
		// Where it landed (checkpoints as the next open finds them).
		var st struct {
			Projections []struct {
				Name       string `json:"name"`
				Checkpoint struct {
					Seq uint64 `json:"seq"`
				} `json:"checkpoint"`
			} `json:"projections"`
		}
		if err := json.Unmarshal([]byte(must(t, dir, "", "project", "status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		t.Logf("after %v: killed %v; checkpoints %+v; unsynced marks %v", delay, killed, st.Projections, marks)
		if !killed {
			break // it finished first: every later kill would land after the end
		}
		kills++
	}
	if kills == 0 {
		t.Fatal("ucl project finished before the first kill")
	}
	got := projectDigests(t, dir)
	for name, d := range want {
		if got[name] != d {
			t.Errorf("%s: digest %s after kills, %s uninterrupted", name, got[name], d)
		}
	}
	must(t, dir, "", "project", "verify")
}

// A bulk catch-up commits its bbolt files without fsyncs, under an
// UNSYNCED mark holding the boot id, which it removes once the files are
// durable. A mark left by another boot (the machine crashed mid-build:
// the files may be torn) resets that projection on the next open, which
// rebuilds it from the log to the same digests; a finished build leaves
// no mark.
func TestUnsyncedMarkOfAnotherBoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 6K-turn store")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	must(t, dir, "", "init", "--durability", "none")
	must(t, dir, string(benchTurns(6_000, 0)), "append", "-")
	want := projectDigests(t, dir)
	marks, _ := filepath.Glob(filepath.Join(dir, "projections", "*", "UNSYNCED"))
	if len(marks) != 0 {
		t.Fatalf("a finished build left unsynced marks: %v", marks)
	}
	mark := filepath.Join(dir, "projections", "summary", "UNSYNCED")
	if err := os.WriteFile(mark, []byte("00000000-0000-4000-8000-000000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := ucl(t, dir, "", "project", "--json", "--digests")
	if r.code != 0 {
		t.Fatalf("ucl project: %s", r)
	}
	if !strings.Contains(r.err, "projection summary was damaged") || !strings.Contains(r.err, "without fsync") {
		t.Fatalf("no reset of summary reported for another boot's mark: %s", r)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("the mark is still there after the rebuild: %v", err)
	}
	got := projectDigests(t, dir)
	for name, d := range want {
		if got[name] != d {
			t.Errorf("%s: digest %s after the reset, %s before", name, got[name], d)
		}
	}
}
