package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
		t.Logf("after %v: killed %v; checkpoints %+v", delay, killed, st.Projections)
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
