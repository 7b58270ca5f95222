package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// vaultKeys reads a store's vault.key: epoch -> key bytes.
func vaultKeys(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "vault.key"))
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Keys map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for e, k := range vf.Keys {
		raw, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			t.Fatal(err)
		}
		out[e] = raw
	}
	return out
}

// filesHolding walks every file under dir (hidden ones, databases, logs,
// everything) and names those that contain a needle.
func filesHolding(t *testing.T, dir string, needles [][]byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				rel, _ := filepath.Rel(dir, p)
				hits = append(hits, fmt.Sprintf("%s holds %q", rel, n[:min(len(n), 24)]))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// keyNeedles is a key's raw bytes and its base64 forms (vault.key holds it
// in std base64).
func keyNeedles(k []byte) [][]byte {
	return [][]byte{k, []byte(base64.StdEncoding.EncodeToString(k)), []byte(base64.RawURLEncoding.EncodeToString(k))}
}

// contents maps chunk id -> content of the store events a replay shows.
func contents(t *testing.T, dir string, args ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range jsonLines(t, must(t, dir, "", append([]string{"replay"}, args...)...)) {
		if c, ok := m["content"].(string); ok && m["type"] == "store" {
			out[m["chunk_id"].(string)] = c
		}
	}
	return out
}

// tombstonedContents returns the contents the store's tombstones withhold.
func tombstonedContents(t *testing.T, dir string) []string {
	t.Helper()
	live := contents(t, dir)
	var dead []string
	for id, c := range contents(t, dir, "--include-tombstoned") {
		if _, ok := live[id]; !ok {
			dead = append(dead, c)
		}
	}
	sort.Strings(dead)
	return dead
}

func countShredded(t *testing.T, dir string) (events, tombstones int) {
	t.Helper()
	for _, m := range jsonLines(t, must(t, dir, "", "audit", "log", "--json")) {
		if m["shredded"] == true {
			events++
		}
		if m["type"] == "tombstone" && m["erasure"] == "shredded" {
			tombstones++
		}
	}
	return events, tombstones
}

// Shred end to end: A stores, tombstones, snapshots, syncs, rotates and
// syncs; the old key and the tombstoned text are in no file of A's store;
// a device rebuilt from Arweave with A's current key has every live chunk,
// the same digests, and reports the tombstoned ones shredded; the key and
// recovery code from before the rotation open nothing.
func TestShredArweave(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	a, secrets := newDevice(t, gw, 300, "sh")
	must(t, a.dir, "", "tombstone", "--chunk", "c-sh-7", "--reason", "shred me")
	must(t, a.dir, "", "project")
	must(t, a.dir, "", "snapshot", "create")
	must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "16384")
	// A published snapshot sealed under the epoch the rotation wipes.
	must(t, a.dir, "", "snapshot", "push", "--gateway", gw.URL())
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}

	dead := tombstonedContents(t, a.dir)
	live := contents(t, a.dir)
	if len(dead) < 10 || len(live) < 200 {
		t.Fatalf("%d tombstoned, %d live chunks", len(dead), len(live))
	}
	oldKeys := vaultKeys(t, a.dir)
	old := oldKeys["1"]
	oldCode := strings.TrimSpace(must(t, a.dir, "", "keys", "export"))
	pending := 0
	for _, m := range jsonLines(t, must(t, a.dir, "", "audit", "log", "--json")) {
		if m["type"] == "tombstone" && m["erasure"] == "pending" {
			pending++
		}
	}
	var needles [][]byte
	needles = append(needles, keyNeedles(old)...)
	for _, c := range dead {
		needles = append(needles, []byte(c))
	}
	// Not blind: before the rotation the old key is found (vault.key), and
	// the live text is found in the projections by the same walk.
	if hits := filesHolding(t, a.dir, keyNeedles(old)); len(hits) == 0 {
		t.Fatal("the old key is in no file before the rotation: the walk is blind")
	}
	// Projections keep no copy of chunk text any more (it is read from the
	// sealed log by seq); session summaries still quote some live turns, so
	// the walk must find at least one of them in plaintext.
	var liveNeedles [][]byte
	for _, c := range live {
		liveNeedles = append(liveNeedles, []byte(c))
	}
	if hits := filesHolding(t, a.dir, liveNeedles); len(hits) == 0 {
		t.Fatalf("none of %d live texts is in any file: the walk is blind", len(live))
	}

	r := jsonDoc(t, must(t, a.dir, "", "keys", "rotate", "--yes", "--json"))
	if r["from_epoch"] != 1.0 || r["to_epoch"] != 2.0 || len(r["shredded"].([]any)) != len(dead) ||
		len(r["snapshots_deleted"].([]any)) != 1 || r["projections_rebuilt"] != true {
		t.Fatalf("rotate: %v", r)
	}
	if hits := filesHolding(t, a.dir, needles); len(hits) > 0 {
		t.Fatalf("after the rotation: %v", hits)
	}
	if k := vaultKeys(t, a.dir); len(k) != 1 || k["2"] == nil {
		t.Fatalf("vault.key epochs after rotation: %v", k)
	}
	if got := contents(t, a.dir); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Fatalf("live content changed by the rotation: %d chunks, had %d", len(got), len(live))
	}
	if ev, tb := countShredded(t, a.dir); ev != len(dead) || tb != pending || tb == 0 {
		t.Fatalf("audit log: %d shredded events (want %d), %d shredded tombstones (want %d)", ev, len(dead), tb, pending)
	}
	if out := must(t, a.dir, "", "audit", "log"); !strings.Contains(out, "erasure shredded") || strings.Contains(out, "erasure pending") {
		t.Fatalf("audit log text:\n%s", out)
	}
	must(t, a.dir, "", "audit", "verify")
	must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "16384")

	// A new device, rebuilt from Arweave with A's current key.
	b, rr := rebuild(t, gw.URL(), a, "--json")
	if rr.code != 0 {
		t.Fatalf("rebuild after rotation: %s", rr)
	}
	if got := contents(t, b); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Fatalf("rebuilt device: %d live chunks, A has %d", len(got), len(live))
	}
	if snap := jsonDoc(t, rr.out)["snapshot"].(map[string]any); snap["used"] != false {
		t.Fatalf("the rebuild used a snapshot sealed under the wiped epoch: %v", snap)
	}
	if got := contents(t, b, "--include-tombstoned"); len(got) != len(live) {
		t.Fatalf("rebuilt device decrypts %d chunks, only %d are live", len(got), len(live))
	}
	if got, want := must(t, b, "", "replay"), must(t, a.dir, "", "replay"); got != want {
		t.Fatal("replay differs between A and the rebuilt device")
	}
	if da, db := digests(t, a.dir), digests(t, b); len(da) < 4 || fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("digests differ:\nA %v\nB %v", da, db)
	}
	if ev, _ := countShredded(t, b); ev != len(dead) {
		t.Fatalf("rebuilt device reports %d shredded events, want %d", ev, len(dead))
	}
	if !strings.Contains(rr.out, `"shredded":`+fmt.Sprint(len(dead))) {
		t.Fatalf("rebuild result does not count the shredded events: %s", rr.out)
	}
	if out := must(t, b, "", "audit", "verify"); !strings.Contains(out, "shredded") {
		t.Fatalf("audit verify on the rebuilt device does not mention shredded events: %s", out)
	}
	if hits := filesHolding(t, b, needles); len(hits) > 0 {
		t.Fatalf("rebuilt device: %v", hits)
	}
	for _, s := range secrets {
		if strings.Contains(s, "secret 000007 ") { // c-sh-7's content
			if hits := filesHolding(t, b, [][]byte{[]byte(s)}); len(hits) > 0 {
				t.Fatalf("tombstoned chunk on the rebuilt device: %v", hits)
			}
		}
	}

	// The key from before the rotation opens nothing.
	oldFile := filepath.Join(t.TempDir(), "old.key")
	if err := os.WriteFile(oldFile, []byte(oldCode+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := ucl(t, a.dir, "", "--vault-key", oldCode, "status"); res.code == 0 || !strings.Contains(res.err, "epoch 1") || !strings.Contains(res.err, "rotation") {
		t.Fatalf("open with the pre-rotation code: %s", res)
	}
	dst, rr := rebuild(t, gw.URL(), a, "--vault-key", oldFile)
	if rr.code == 0 || !strings.Contains(rr.err, "newer vault-key epoch") {
		t.Fatalf("rebuild with the pre-rotation key worked: %s", rr)
	}
	assertNoDir(t, dst)
	if res := ucl(t, a.dir, "", "keys", "import", oldCode); res.code == 0 || !strings.Contains(res.err, "rotation") {
		t.Fatalf("import of the pre-rotation code: %s", res)
	}
	if res := ucl(t, a.dir, "", "keys", "export"); res.code != 0 || !strings.Contains(res.err, "rotate") || res.out == oldCode+"\n" {
		t.Fatalf("export after rotation: %s", res)
	}
}

// Bad input: a wrong key changes nothing; no terminal and no --yes is
// refused; rotation through a daemon that owns the store works and the
// daemon keeps serving.
func TestShredBadInput(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	in, _ := genEvents(60, "bi")
	must(t, dir, in, "append", "-")
	before, _ := os.ReadFile(filepath.Join(dir, "vault.key"))
	head := headOf(t, dir)
	other := newStore(t)
	r := ucl(t, dir, "", "--vault-key", filepath.Join(other, "vault.key"), "keys", "rotate", "--yes")
	if r.code == 0 || !strings.Contains(r.err, "vault key does not belong") {
		t.Fatalf("rotate with a wrong key: %s", r)
	}
	// The store's own key, given as a recovery code: refused, because the
	// rotation could not update the code's copies.
	code := strings.TrimSpace(must(t, dir, "", "keys", "export"))
	r = ucl(t, dir, "", "--vault-key", code, "keys", "rotate", "--yes")
	if r.code == 0 || !strings.Contains(r.err, "outside the store") || !strings.Contains(r.err, "without --vault-key") {
		t.Fatalf("rotate with the key given as a code: %s", r)
	}
	r = ucl(t, dir, "", "keys", "rotate")
	if r.code != 2 || !strings.Contains(r.err, "--yes") {
		t.Fatalf("rotate without --yes off a terminal: %s", r)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "vault.key"))
	if !bytes.Equal(before, after) || headOf(t, dir) != head {
		t.Fatal("a refused rotation changed the store")
	}
	if _, err := os.Stat(filepath.Join(dir, "rotate.journal")); !os.IsNotExist(err) {
		t.Fatalf("journal after a refused rotation: %v", err)
	}

	// Attached: the daemon owns the store; rotate goes through its socket.
	live := contents(t, dir)
	startDaemon(t, dir)
	res := jsonDoc(t, must(t, dir, "", "keys", "rotate", "--yes", "--json"))
	if res["to_epoch"] != 2.0 || len(res["shredded"].([]any)) == 0 {
		t.Fatalf("attached rotate: %v", res)
	}
	if got := contents(t, dir); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Fatal("live content changed by an attached rotation")
	}
	q := jsonDoc(t, must(t, dir, "", "query", "cello scales", "--json"))
	if len(q["results"].([]any)) == 0 {
		t.Fatalf("query through the daemon after rotation: %v", q)
	}
	if k := vaultKeys(t, dir); len(k) != 1 || k["2"] == nil {
		t.Fatalf("vault.key after attached rotation: %v", k)
	}
}

// kill -9 inside `ucl keys rotate` at every step boundary (a test hook
// makes the process SIGKILL itself there) and at random ones: the store
// always reopens, nothing live is lost, and the rotation is either rolled
// back (epoch 1 only, nothing shredded) or finished (epoch 2 only, the
// tombstoned events shredded).
func TestShredCrash(t *testing.T) {
	t.Parallel()
	tmpl := newStore(t)
	in, _ := genEvents(120, "cr")
	must(t, tmpl, in, "append", "-")
	must(t, tmpl, "", "snapshot", "create")
	live := contents(t, tmpl)
	dead := len(tombstonedContents(t, tmpl))
	if dead == 0 {
		t.Fatal("nothing tombstoned")
	}
	// The step boundaries of a run: 12 fixed plus one per rekey event
	// (keys-per-event 10; every event but the tombstoned chunks: the live
	// chunks and the two tombstones genEvents writes).
	const per = "10"
	points := 12 + (len(live)+2+9)/10
	var ks []int
	for k := 1; k <= points; k++ {
		ks = append(ks, k)
	}
	rng := rand.New(rand.NewSource(13))
	for len(ks) < 24 {
		ks = append(ks, 1+rng.Intn(points))
	}
	// Then kills from outside after a random delay within one run's
	// duration (measured here), landing inside steps too: mid-write of a
	// file or of a rekey batch. k < 0 marks them; any outcome is fine as
	// long as the checks below hold.
	full := copyDir(t, tmpl)
	t0 := time.Now()
	must(t, full, "", "keys", "rotate", "--yes", "--keys-per-event", per)
	span := time.Since(t0)
	for i := 0; i < 8; i++ {
		ks = append(ks, -1-i)
	}
	// The kill delays are drawn here, in order, so the trials can run in
	// parallel (each on its own copy of the store).
	delays := make([]time.Duration, len(ks))
	for i, k := range ks {
		if k < 0 {
			delays[i] = time.Duration(rng.Int63n(int64(span) + 1))
		}
	}
	var mu sync.Mutex
	finished, rolledBack := 0, 0
	t.Run("trials", func(t *testing.T) {
		for i, k := range ks {
			t.Run(fmt.Sprintf("%02d-at-%d", i, k), func(t *testing.T) {
				t.Parallel()
				done := shredCrashTrial(t, tmpl, per, k, delays[i], live, dead)
				mu.Lock()
				defer mu.Unlock()
				if done {
					finished++
				} else {
					rolledBack++
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	if finished == 0 || rolledBack == 0 {
		t.Fatalf("%d finished, %d rolled back: the kills missed a side", finished, rolledBack)
	}
	t.Logf("%d kills: %d rotations finished on reopen, %d rolled back", len(ks), finished, rolledBack)
}

// shredCrashTrial runs one kill of TestShredCrash on a copy of tmpl: at
// step boundary k (k > 0, the process kills itself there) or, for k < 0,
// by SIGKILL from outside after delay. It checks the store reopens whole
// and reports whether the rotation finished (else it was rolled back).
func shredCrashTrial(t *testing.T, tmpl, per string, k int, delay time.Duration, live map[string]string, dead int) (finished bool) {
	dir := copyDir(t, tmpl)
	cmd := exec.Command(uclBin, "keys", "rotate", "--yes", "--keys-per-event", per)
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=", fmt.Sprintf("UCL_TEST_ROTATE_CRASH_AT=%d", max(k, 0)))
	if k < 0 {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait() // killed, or done before the signal: both are fine
	} else {
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("crash point %d: rotate was not killed (%v): %s", k, err, out)
		}
	}
	// Reopening finishes or rolls back.
	st := ucl(t, dir, "", "status", "--json")
	if st.code != 0 {
		t.Fatalf("crash point %d: the store does not reopen: %s", k, st)
	}
	if _, err := os.Stat(filepath.Join(dir, "rotate.journal")); !os.IsNotExist(err) {
		t.Fatalf("crash point %d: journal left after reopening (%v): %s", k, err, st)
	}
	if got := contents(t, dir); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Fatalf("crash point %d: live content lost: %d of %d chunks", k, len(got), len(live))
	}
	keys := vaultKeys(t, dir)
	ev, _ := countShredded(t, dir)
	switch {
	case len(keys) == 1 && keys["1"] != nil && ev == 0:
		if !strings.Contains(st.err, "rolled back") && k > 1 {
			t.Fatalf("crash point %d: rolled back silently: %s", k, st)
		}
	case len(keys) == 1 && keys["2"] != nil && ev == dead:
		finished = true
	default:
		t.Fatalf("crash point %d: epochs %d, %d shredded events (want 0 or %d): %s", k, len(keys), ev, dead, st)
	}
	must(t, dir, "", "audit", "verify")
	// The store works on: a later rotation completes.
	if r := jsonDoc(t, must(t, dir, "", "keys", "rotate", "--yes", "--json")); r["resumed"] == true {
		t.Fatalf("crash point %d: a journal survived: %v", k, r)
	}
	return finished
}
