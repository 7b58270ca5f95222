package test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startKillDaemon starts `ucl daemon` on dir with the owner's kill seam
// (UCL_TEST_OWNER_KILL, sockperm.go) set to mode, and waits for its socket.
func startKillDaemon(t *testing.T, dir, mode string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(uclBin, "daemon")
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=", "UCL_TEST_OWNER_KILL="+mode)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "ucl.sock")); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("daemon did not come up: %s", errb.String())
		default:
		}
		if i > 3000 {
			t.Fatalf("daemon did not come up in time: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Release() // waited for by the goroutine above
	return cmd, &errb
}

// logIDs returns the log's event ids by seq.
func logIDs(t *testing.T, dir string) map[uint64]string {
	t.Helper()
	ids := map[uint64]string{}
	for _, l := range jsonLines(t, must(t, dir, "", "replay", "--raw")) {
		ids[uint64(l["seq"].(float64))] = l["id"].(string)
	}
	return ids
}

// Issue 29.3, as a crash suite: the owner is killed (SIGKILL) right after
// an attached client's write is durable and before it answers, or right
// before it applies the write. The client's message must be true every
// time: "written" with the events (all in the log, once), or "not
// written" with the log unchanged; never "nothing was written" when
// something was. Before the fix the client printed "append: Post …: EOF |
// hint: nothing was written" with every event in the log.
func TestOwnerKilledAfterWriteClientSaysWhatHappened(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	const afterTrials, beforeTrials = 20, 6
	// The log's length before a trial: nothing writes between the end of
	// one trial (whose whole log is replayed below) and the next, so the
	// log is replayed once a trial, not twice (each replay of the 20,000+
	// events costs about a second of CPU under -race).
	before := len(logIDs(t, dir))
	for trial := 0; trial < afterTrials+beforeTrials; trial++ {
		mode := "after-write"
		if trial >= afterTrials {
			mode = "before-write"
		}
		_, _ = startKillDaemon(t, dir, mode)
		var r result
		n := 1
		switch {
		case trial%2 == 0:
			// An append of events without ids (the first trial as big as
			// the issue's: 20,000 events).
			n = 200
			if trial == 0 {
				n = 20000
			}
			var in strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&in, `{"session":"t%d","content":"trial %d event %d"}`+"\n", trial, trial, i)
			}
			r = ucl(t, dir, in.String(), "append", "-")
		default:
			r = ucl(t, dir, "", "store", "--session", fmt.Sprintf("t%d", trial), fmt.Sprintf("trial %d: a note stored while the owner dies", trial))
		}
		// The owner is dead (killed by its seam), whatever the client did.
		deadline := time.Now().Add(time.Minute)
		for {
			if _, err := os.Stat(filepath.Join(dir, "ucl.sock")); os.IsNotExist(err) {
				break // the client took the store over and removed the stale socket
			}
			if conn, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); err == nil {
				cerr := syscall.Connect(conn, &syscall.SockaddrUnix{Name: filepath.Join(dir, "ucl.sock")})
				syscall.Close(conn)
				if cerr != nil {
					break // refused: nobody serves
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("trial %d: the owner still serves after the client's write: the seam did not fire", trial)
			}
			time.Sleep(10 * time.Millisecond)
		}
		ids := logIDs(t, dir)
		added := len(ids) - before
		before = len(ids)
		if strings.Contains(r.err, "nothing was written") && added != 0 {
			t.Fatalf("trial %d (%s): the client said nothing was written, but %d events were:\n%s", trial, mode, added, r)
		}
		switch mode {
		case "after-write":
			if r.code != 0 || !strings.Contains(r.err, "written") {
				t.Fatalf("trial %d (%s): want success with a note that the events were written:\n%.2000s", trial, mode, r)
			}
			lines := jsonLines(t, r.out)
			if len(lines) != n || added != n {
				t.Fatalf("trial %d (%s): %d events printed, %d added to the log, want %d", trial, mode, len(lines), added, n)
			}
			for _, l := range lines {
				if seq := uint64(l["seq"].(float64)); ids[seq] != l["id"].(string) {
					t.Fatalf("trial %d: printed seq %d id %s, the log has %q", trial, seq, l["id"], ids[seq])
				}
			}
		case "before-write":
			if r.code == 0 || !strings.Contains(r.err, "not written") || added != 0 {
				t.Fatalf("trial %d (%s): want a failure saying not written and no new event (%d added):\n%.2000s", trial, mode, added, r)
			}
		}
	}
	if out := must(t, dir, "", "audit", "verify"); !strings.Contains(out, "ok:") {
		t.Fatalf("audit verify after the kills: %s", out)
	}
}
