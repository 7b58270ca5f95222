package test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// daemon starts `ucl daemon` on dir and waits until it answers (a status
// through the socket). The returned func stops it with SIGTERM.
func startDaemon(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(uclBin, "daemon")
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sock := filepath.Join(dir, "ucl.sock")
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if cmd.ProcessState != nil || i > 3000 {
			t.Fatalf("daemon did not come up: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

// copyDir copies a store directory (no process may hold it).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dst
}

var timeField = regexp.MustCompile(`"(time|hash|prev|id|append_ms|created|now_ms)":"?[^",]*"?`)

// A daemon owns a store; commands from other processes attach to it and
// print exactly what they print on an unowned copy of the same store.
func TestDaemonAttachedOutputs(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	must(t, dir, "", "store", "--session", "s3", "--kind", "document", "--chunk-tokens", "40", "--time", "2023-05-10T08:00:00Z",
		strings.Repeat("The cutover plan moves the orders database on Friday night. Rollback takes ten minutes. ", 12))
	cp := copyDir(t, dir)
	startDaemon(t, dir)
	if r := ucl(t, cp, "", "status"); r.code != 0 {
		t.Fatalf("copy: %s", r)
	}

	same := func(norm func(string) string, args ...string) {
		t.Helper()
		a, b := ucl(t, dir, "", args...), ucl(t, cp, "", args...)
		ao, bo := a.out, b.out
		if norm != nil {
			ao, bo = norm(ao), norm(bo)
		}
		if a.code != b.code || ao != bo || a.err != b.err {
			t.Fatalf("ucl %v differs attached vs unowned:\nattached %s\nunowned  %s", args, a, b)
		}
	}
	dirs := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, dir, "DIR"), cp, "DIR") }
	noTimes := func(s string) string { return timeField.ReplaceAllString(s, `"$1":_`) }
	for _, args := range [][]string{
		{"query", "cello teacher", "--now", "2023-06-01T00:00:00Z"},
		{"query", "cello teacher", "--now", "2023-06-01T00:00:00Z", "--json", "--explain"},
		{"query", "database rollback", "--now", "2023-06-01T00:00:00Z", "--mode", "bm25", "--json"},
		// Session-filtered: the daemon's index is loaded by now (the
		// subset search in memory), the unowned process scans in place.
		{"query", "teacher cello", "--session", "s2", "--session", "s1", "--now", "2023-06-01T00:00:00Z", "--json", "--explain"},
		{"query", "rollback", "--session", "s2", "--mode", "vector", "--now", "2023-06-01T00:00:00Z"},
		{"context", "what about the cutover", "--now", "2023-06-01T00:00:00Z", "--budget", "300"},
		{"context", "cello", "--session", "s1", "--format", "json", "--json", "--now", "2023-06-01T00:00:00Z"},
		{"session", "list"},
		{"session", "list", "--json"},
		{"session", "show", "s1", "--json"},
		{"session", "show", "s1", "--last", "2"},
		{"replay"},
		{"replay", "--raw", "--from", "2"},
		{"audit", "log"},
		{"snapshot", "list"},
		// Errors: same message, same hint, same exit code.
		{"session", "show", "nope"},
		{"query", "x", "--mode", "vector", "--budget", "1"},
		{"context", "", "--session", "s1", "--recent", "0"},
		{"tombstone", "--document", "no-such-doc"},
		{"replay", "--type", "bogus"},
		// The error's class crosses the socket: same exit status, same
		// JSON error.
		{"get", "nosuch"},
		{"get", "nosuch", "--json"},
		{"edit", "nosuch", "new text", "--json"},
		{"session", "show", "nope", "--json"},
		{"query", "x", "--mode", "vector", "--budget", "1", "--json"},
	} {
		same(nil, args...)
	}
	same(dirs, "status")
	// Writes: same seqs and removals; hashes and ids depend on the append time.
	same(noTimes, "store", "--id", "k1", "--session", "s1", "--time", "2023-05-11T09:00:00Z", "Practise scales slowly.")
	same(noTimes, "append", "--", filepath.Join(t.TempDir(), "missing.jsonl"))
	sess := jsonDoc(t, must(t, dir, "", "session", "show", "s3", "--json"))
	parent := sess["chunks"].([]any)[0].(map[string]any)["chunk_parent"].(string)
	same(noTimes, "tombstone", "--document", parent, "--json")
	same(nil, "query", "cutover rollback", "--now", "2023-06-01T00:00:00Z", "--mode", "bm25")
	same(noTimes, "replay")
	same(nil, "session", "list")
	if out := must(t, dir, "", "snapshot", "create", "--json"); !strings.Contains(out, `"manifest"`) {
		t.Fatalf("snapshot create via the daemon: %s", out)
	}
	if l := jsonDoc(t, must(t, dir, "", "snapshot", "list", "--json"))["snapshots"].([]any); len(l) != 1 {
		t.Fatalf("snapshots: %v", l)
	}
}

// Many processes at once against one owner: no "store is in use", every
// write lands once.
func TestDaemonConcurrentClients(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	d := startDaemon(t, dir)
	before := headOf(t, dir)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	run := func(stdin string, args ...string) {
		defer wg.Done()
		if r := ucl(t, dir, stdin, args...); r.code != 0 {
			errs <- fmt.Sprintf("ucl %v: %s", args, r)
		}
	}
	const writers = 4
	for i := 0; i < writers; i++ {
		wg.Add(6)
		var evs strings.Builder
		for j := 0; j < 5; j++ { // five different texts: the same text twice would be one duplicate
			fmt.Fprintf(&evs, `{"type":"store","session":"c%d","role":"user","content":"parallel append %d.%d"}`+"\n", i, i, j)
		}
		go run(evs.String(), "append")
		go run("", "store", "--session", fmt.Sprintf("c%d", i), fmt.Sprintf("parallel store %d", i))
		go run("", "query", "parallel", "--json")
		go run("", "context", "parallel append", "--budget", "500")
		go run("", "session", "list")
		go run("", "replay")
	}
	wg.Add(3)
	go run("", "status")
	go run("", "tombstone", "--session", "s2", "--reason", "parallel")
	go run("", "project", "status")
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got, want := headOf(t, dir), before+writers*6+1; got != want {
		t.Fatalf("head %d after the parallel writes, want %d", got, want)
	}
	if out := must(t, dir, "", "session", "list", "--json"); strings.Count(out, `"id":"c`) != writers {
		t.Fatalf("sessions: %s", out)
	}
	// SIGTERM: the daemon stops serving, removes its socket and releases
	// the store; the next command opens it itself.
	d.Process.Signal(syscall.SIGTERM)
	if err := d.Wait(); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ucl.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left after SIGTERM: %v", err)
	}
	must(t, dir, "", "store", "after the daemon")
}

// kill -9 of the owner while clients append: every acknowledged seq is in
// the log with its id, and the next command takes the store over.
func TestDaemonKilledMidAppend(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	d := startDaemon(t, dir)
	type ack struct {
		seq uint64
		id  string
	}
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := ucl(t, dir, "", "store", "--id", fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("writer %d note %d", w, i))
				if r.code != 0 {
					continue // not acknowledged: may or may not be in the log
				}
				for _, l := range jsonLines(t, r.out) {
					mu.Lock()
					acks = append(acks, ack{uint64(l["seq"].(float64)), l["id"].(string)})
					mu.Unlock()
				}
			}
		}(w)
	}
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 20 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.Process.Kill()
	d.Wait()
	// The writers keep going: the next command removes the stale socket
	// and opens the store itself.
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 30 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	ids := map[uint64]string{}
	for _, l := range jsonLines(t, must(t, dir, "", "replay", "--raw")) {
		ids[uint64(l["seq"].(float64))] = l["id"].(string)
	}
	for _, a := range acks {
		if ids[a.seq] != a.id {
			t.Fatalf("acknowledged seq %d (id %s) is not in the log (found %q)", a.seq, a.id, ids[a.seq])
		}
	}
	if out := must(t, dir, "", "audit", "verify"); !strings.Contains(out, "ok:") {
		t.Fatalf("audit verify after kill -9: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ucl.sock")); !os.IsNotExist(err) {
		t.Fatalf("stale socket still there: %v", err)
	}
}

// sync push from a client is run by the owner and gives the same result
// as on an unowned copy.
func TestDaemonSyncPush(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	d, _ := newDevice(t, gw, 30, "dm")
	head := float64(headOf(t, d.dir))
	startDaemon(t, d.dir)
	out := must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--json")
	res := jsonDoc(t, out)
	if res["covered_seq"].(float64) != head || res["uploaded"].(float64) < 1 {
		t.Fatalf("push via the daemon: %s", out)
	}
	st := jsonDoc(t, must(t, d.dir, "", "sync", "status", "--json"))
	if st["covered_seq"].(float64) != head || st["unmirrored"].(float64) != 0 {
		t.Fatalf("sync status via the daemon: %v", st)
	}
	again := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	if again["uploaded"].(float64) != 0 {
		t.Fatalf("second push uploaded again: %v", again)
	}
}

// `sync push --watch` attached to a daemon keeps mirroring what other
// clients append through the same owner.
func TestDaemonAttachedWatch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	d, _ := newDevice(t, gw, 10, "dw")
	startDaemon(t, d.dir)
	cmd := exec.Command(uclBin, "sync", "push", "--watch", "--gateway", gw.URL(), "--every-events", "5", "--every", "1s", "--json")
	cmd.Env = append(os.Environ(), "UCL_DIR="+d.dir, "UCL_VAULT_KEY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitCovered := func(head uint64) {
		t.Helper()
		for i := 0; i < 300; i++ {
			if st := jsonDoc(t, must(t, d.dir, "", "sync", "status", "--json")); uint64(st["covered_seq"].(float64)) == head {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("attached watch did not mirror up to %d; stderr: %s", head, errb.String())
	}
	waitCovered(headOf(t, d.dir))
	for i := 0; i < 3; i++ {
		in, _ := genEvents(6, fmt.Sprintf("dw%d", i))
		must(t, d.dir, in, "append")
	}
	waitCovered(headOf(t, d.dir))
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch exit: %v; stderr: %s", err, errb.String())
	}
	if strings.Contains(errb.String(), "in use") {
		t.Fatalf("watch saw a busy store: %s", errb.String())
	}
}
