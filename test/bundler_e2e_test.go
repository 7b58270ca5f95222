package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// bundler is test/bundler/bundler.mjs: a local bundler with the Turbo
// upload API in front of one arlocal. It verifies every data item with the
// arbundles reference library, posts the items to arlocal as a bundle and
// mines, and records every upload it received.
type bundler struct {
	t   *testing.T
	url string
}

func startBundler(t *testing.T, gw *arlocaltest.Gateway) *bundler {
	t.Helper()
	root, err := arlocaltest.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "bundler")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "arbundles", "package.json")); err != nil {
		t.Fatalf("the local bundler's npm packages are missing: run `make bundler` (%v)", err)
	}
	cmd := exec.Command("node", "bundler.mjs", "--gateway", gw.URL())
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("bundler stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	var port int
	if _, serr := fmt.Sscanf(line, "listening %d", &port); err != nil || serr != nil {
		t.Fatalf("bundler did not start: %q %v\n%s", line, err, stderr.String())
	}
	return &bundler{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

func (b *bundler) post(path, body string) []byte {
	b.t.Helper()
	resp, err := http.Post(b.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	if resp.StatusCode != 200 {
		b.t.Fatalf("bundler %s: %d %s", path, resp.StatusCode, buf.String())
	}
	return buf.Bytes()
}

// fault sets how the bundler answers the next uploads (see bundler.mjs).
func (b *bundler) fault(mode string) { b.post("/_fault", `{"mode":"`+mode+`"}`) }

// flush waits until every item the bundler accepted is bundled and mined.
func (b *bundler) flush() { b.post("/_flush", "{}") }

type upload struct {
	ID          string `json:"id"`
	Size        int    `json:"size"`
	Verified    bool   `json:"verified"`
	Fault       string `json:"fault"`
	ContentType string `json:"contentType"`
}

// uploads is every upload the bundler received.
func (b *bundler) uploads() []upload {
	b.t.Helper()
	resp, err := http.Get(b.url + "/_log")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []upload
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// uclEnv is ucl with extra environment.
func uclEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(uclBin, args...)
	cmd.Env = append(append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY="), env...)
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

// unfundedDevice is a store whose wallet holds no AR, with events.
func unfundedDevice(t *testing.T, events int, tag string) device {
	t.Helper()
	dir := newStore(t)
	st := jsonDoc(t, must(t, dir, "", "status", "--json"))
	d := device{dir: dir, addr: st["wallet_address"].(string), logID: st["log_id"].(string)}
	if events > 0 {
		in, _ := genEvents(events, tag)
		must(t, dir, in, "append", "-")
	}
	return d
}

// syncStatus is `sync status --refresh --json`.
func syncStatus(t *testing.T, d device) map[string]any {
	t.Helper()
	return jsonDoc(t, must(t, d.dir, "", "sync", "status", "--refresh", "--json"))
}

func TestBundler(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed")
	}
	for _, st := range []struct {
		name string
		fn   func(*testing.T, *arlocaltest.Gateway)
	}{
		{"PushRebuildProveShare", testBundlerRoundTrip},
		{"KilledDuringPush", testBundlerKilled},
		{"Faults", testBundlerFaults},
		{"NeverBundled", testBundlerDrops},
		{"ForkRefused", testBundlerFork},
		{"CannotPay", testCannotPay},
		{"TwoGateways", testTwoGateways},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			st.fn(t, arlocaltest.Start(t))
		})
	}
}

// A wallet with no AR pushes through the bundler; every item reached the
// bundler as application/octet-stream and verified under arbundles; the
// mirror state records the item ids, confirmed once their bundle is mined;
// the gateway and bundler are remembered; a second device rebuilds the
// same store from the items; a proof verifies against a checkpoint posted
// as an item; a grantee pulls a share disclosed through the bundler.
func testBundlerRoundTrip(t *testing.T, gw *arlocaltest.Gateway) {
	b := startBundler(t, gw)
	a := unfundedDevice(t, 0, "")
	must(t, a.dir, shareEvents(), "append", "-")
	in, _ := genEvents(400, "br")
	must(t, a.dir, in, "append", "-")
	head := headOf(t, a.dir)

	est := jsonDoc(t, must(t, a.dir, "", "sync", "estimate", "--via", "bundler", "--bundler", b.url, "--gateway", gw.URL(), "--json"))
	if est["paid_items"] != 0.0 || est["items"].(float64) < 3 || est["largest_item_bytes"].(float64) > 100<<10 || !strings.Contains(est["sentence"].(string), "free") {
		t.Fatalf("estimate: %v", est)
	}

	push := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--via", "bundler", "--bundler", b.url, "--gateway", gw.URL(), "--json"))
	if push["mode"] != "bundler" || push["bundler"] != b.url || uint64(push["covered_seq"].(float64)) != head || push["uploaded"].(float64) < 2 {
		t.Fatalf("push: %v", push)
	}
	if cp, _ := push["checkpoint"].(map[string]any); cp == nil || cp["anchored"] != true {
		t.Fatalf("no checkpoint anchored: %v", push)
	}
	if float64(len(b.uploads())) != push["uploaded"].(float64)+1 {
		t.Fatalf("bundler got %d uploads, push made %v segments and a checkpoint", len(b.uploads()), push["uploaded"])
	}
	got := map[string]upload{}
	for _, u := range b.uploads() {
		if !u.Verified || u.ContentType != "application/octet-stream" || u.Size > 100<<10 {
			t.Fatalf("upload not accepted by arbundles as a free item: %+v", u)
		}
		got[u.ID] = u
	}
	b.flush()
	st := syncStatus(t, a)
	if uint64(st["safe_seq"].(float64)) != head || st["submitted"].(float64) != 0 {
		t.Fatalf("sync status after bundling: %v", st)
	}
	for _, s := range st["segments"].([]any) {
		m := s.(map[string]any)
		if _, ok := got[m["tx"].(string)]; !ok || m["status"] != "confirmed" {
			t.Fatalf("segment %v: not an item the bundler got, or not confirmed", m)
		}
	}
	checkOnce(t, remoteRanges(t, gw, a), head)
	if st["payer"] != "bundler" || st["bundler"] != b.url {
		t.Fatalf("sync status: payer %v %v", st["payer"], st["bundler"])
	}

	// Remembered: no --gateway, no --via, no --bundler from here on.
	rem, err := os.ReadFile(filepath.Join(a.dir, "arweave.json"))
	if err != nil || !strings.Contains(string(rem), b.url) || !strings.Contains(string(rem), gw.URL()) {
		t.Fatalf("arweave.json: %s %v", rem, err)
	}
	more, _ := genEvents(30, "br2")
	must(t, a.dir, more, "append", "-")
	again := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--json"))
	if again["mode"] != "bundler" || again["uploaded"].(float64) < 1 || again["gateway"] != gw.URL() {
		t.Fatalf("second push (remembered): %v", again)
	}
	b.flush()
	head = headOf(t, a.dir)
	// A snapshot goes through the remembered bundler too (the wallet has
	// no AR for L1 transactions).
	must(t, a.dir, "", "snapshot", "create")
	before := len(b.uploads())
	must(t, a.dir, "", "snapshot", "push")
	if len(b.uploads()) == before {
		t.Fatal("snapshot push did not go through the bundler")
	}
	b.flush()

	// A second device, from the items alone.
	dst, r := rebuild(t, gw.URL(), a, "--json")
	if r.code != 0 {
		t.Fatalf("rebuild: %s", r)
	}
	rb := jsonDoc(t, r.out)
	if uint64(rb["events"].(float64)) != head || rb["checkpoint"].(map[string]any)["verified"] != true || rb["snapshot"].(map[string]any)["used"] != true {
		t.Fatalf("rebuild: %v", rb)
	}
	must(t, a.dir, "", "project")
	if da, db := digests(t, a.dir), digests(t, dst); fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("digests differ:\nA %v\nB %v", da, db)
	}

	// A proof against a checkpoint that is a data item.
	proof := filepath.Join(t.TempDir(), "proof.json")
	must(t, a.dir, "", "audit", "prove", "7", "--out", proof)
	vp := jsonDoc(t, must(t, a.dir, "", "audit", "verify-proof", proof, "--json"))
	if vp["ok"] != true || vp["seq"] != 7.0 || vp["owner"] != a.addr || vp["height"].(float64) < 1 {
		t.Fatalf("verify-proof: %v", vp)
	}

	// Sharing through the bundler: B publishes once (its key), A grants.
	bdev := unfundedDevice(t, 3, "bb")
	must(t, bdev.dir, "", "sync", "push", "--via", "bundler", "--bundler", b.url, "--gateway", gw.URL())
	b.flush()
	must(t, a.dir, "", "share", "grant", "--to", bdev.addr, "--session", "alpha")
	if p := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--json")); p["disclosures"] != 1.0 {
		t.Fatalf("push disclosed %v", p["disclosures"])
	}
	b.flush()
	pull := jsonDoc(t, must(t, bdev.dir, "", "share", "pull", "--json"))
	if pull["chunks"] != 3.0 || len(pull["grants"].([]any)) != 1 {
		t.Fatalf("pull: %v", pull)
	}
}

// kill -9 while items are being posted: the next push settles the
// postings through the bundler and the gateway and uploads the rest; every
// range is on the gateway once.
func testBundlerKilled(t *testing.T, gw *arlocaltest.Gateway) {
	b := startBundler(t, gw)
	d := unfundedDevice(t, 200, "bk")
	head := headOf(t, d.dir)
	p := newProxy(t, b.url)
	cmd := exec.Command(uclBin, "sync", "push", "--gateway", gw.URL(), "--via", "bundler", "--bundler", p.URL(), "--segment-bytes", "2048")
	cmd.Env = append(os.Environ(), "UCL_DIR="+d.dir, "UCL_VAULT_KEY=")
	started := make(chan *os.Process, 1)
	var once sync.Once
	p.set(func(p *proxy) {
		p.onPosted = func(posts int) {
			if posts >= 5 {
				once.Do(func() { (<-started).Signal(syscall.SIGKILL) })
			}
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started <- cmd.Process
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("push was not killed: %v", err)
	}
	b.flush()
	killedAt := len(remoteRanges(t, gw, d))
	push := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--via", "bundler", "--bundler", b.url, "--segment-bytes", "2048", "--json"))
	if uint64(push["covered_seq"].(float64)) != head || push["resolved"].(float64) < 1 {
		t.Fatalf("push after kill: %v", push)
	}
	b.flush()
	segs := remoteRanges(t, gw, d)
	if killedAt == 0 || killedAt >= len(segs) {
		t.Fatalf("kill after %d of %d segments: not mid-push", killedAt, len(segs))
	}
	checkOnce(t, segs, head)
	dst, r := rebuild(t, gw.URL(), d)
	if r.code != 0 || must(t, dst, "", "replay") != must(t, d.dir, "", "replay") {
		t.Fatalf("rebuild after kill: %s", r)
	}
}

// A bundler that wants payment (402), refuses the size (413), fails (5xx)
// or never answers: a clear error, nothing confirmed, and the push
// resumes once the bundler works.
func testBundlerFaults(t *testing.T, gw *arlocaltest.Gateway) {
	b := startBundler(t, gw)
	d := unfundedDevice(t, 60, "bf")
	head := headOf(t, d.dir)
	args := []string{"sync", "push", "--gateway", gw.URL(), "--via", "bundler", "--bundler", b.url}
	env := []string{"UCL_ARWEAVE_TIMEOUT=1s"}
	for _, tc := range []struct{ mode, want string }{
		{"402", "bundler charges for items over its free size"},
		{"413", "HTTP 413"},
		{"500", "unavailable"},
		{"hang", "timed out"},
	} {
		b.fault(tc.mode)
		r := uclEnv(t, d.dir, env, args...)
		if r.code == 0 || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "hint:") {
			t.Fatalf("bundler %s: want an error with %q and a hint: %s", tc.mode, tc.want, r)
		}
		st := jsonDoc(t, must(t, d.dir, "", "sync", "status", "--json"))
		if st["confirmed"] != 0.0 || st["submitted"] != 0.0 || st["safe_seq"] != 0.0 {
			t.Fatalf("bundler %s: state claims uploads: %v", tc.mode, st)
		}
	}
	if n := len(remoteRanges(t, gw, d)); n != 0 {
		t.Fatalf("%d segments reached the gateway through a failing bundler", n)
	}
	b.fault("ok")
	push := jsonDoc(t, must(t, d.dir, "", append(args, "--json")...))
	if uint64(push["covered_seq"].(float64)) != head {
		t.Fatalf("push after the faults: %v", push)
	}
	b.flush()
	checkOnce(t, remoteRanges(t, gw, d), head)
	if st := syncStatus(t, d); uint64(st["safe_seq"].(float64)) != head {
		t.Fatalf("not confirmed after bundling: %v", st)
	}
}

// A bundler that acknowledges items and never bundles them: the segments
// stay submitted, never confirmed; the next push finds them lost (neither
// the gateway nor the bundler holds them) and uploads them again.
func testBundlerDrops(t *testing.T, gw *arlocaltest.Gateway) {
	b := startBundler(t, gw)
	d := unfundedDevice(t, 60, "bd")
	head := headOf(t, d.dir)
	args := []string{"sync", "push", "--gateway", gw.URL(), "--via", "bundler", "--bundler", b.url, "--segment-bytes", "2048", "--json"}
	b.fault("drop")
	first := jsonDoc(t, must(t, d.dir, "", args...))
	if first["uploaded"].(float64) < 2 {
		t.Fatalf("push to a dropping bundler: %v", first)
	}
	b.flush()
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	st := syncStatus(t, d)
	if st["confirmed"] != 0.0 || st["safe_seq"] != 0.0 {
		t.Fatalf("items never bundled are marked confirmed: %v", st)
	}
	b.fault("ok")
	second := jsonDoc(t, must(t, d.dir, "", args...))
	if second["resolved"].(float64) < first["uploaded"].(float64) || uint64(second["covered_seq"].(float64)) != head || second["uploaded"].(float64) < 2 {
		t.Fatalf("push after the lost items: %v", second)
	}
	b.flush()
	checkOnce(t, remoteRanges(t, gw, d), head)
	if st := syncStatus(t, d); uint64(st["safe_seq"].(float64)) != head {
		t.Fatalf("not confirmed after re-upload: %v", st)
	}
}

// An L1 push from a wallet without AR is refused before anything is
// signed, naming both ways out; sync estimate says the cost and balance.
func testCannotPay(t *testing.T, gw *arlocaltest.Gateway) {
	d := unfundedDevice(t, 50, "cp")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--via", "pigeon"}, "--via takes l1, bundle or bundler"},
		{[]string{"--via", "l1", "--bundler", "http://127.0.0.1:9"}, "--bundler goes with --via bundler"},
		{[]string{"--via", "bundler", "--bundler", "upload.example"}, "bundler's http(s) URL"},
		{[]string{"--gateway", gw.URL() + ",graphql=nope"}, "http(s) URL"},
	} {
		r := ucl(t, d.dir, "", append([]string{"sync", "push"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.err, c.want) {
			t.Errorf("sync push %v: want exit 2 and %q: %s", c.args, c.want, r)
		}
	}
	est := jsonDoc(t, must(t, d.dir, "", "sync", "estimate", "--via", "l1", "--gateway", gw.URL(), "--json"))
	if est["cost_known"] != true || est["cost_winston"].(float64) <= 0 || est["balance_known"] != true || est["balance_winston"] != 0.0 || est["enough"] != false {
		t.Fatalf("estimate: %v", est)
	}
	r := ucl(t, d.dir, "", "sync", "push", "--via", "l1", "--gateway", gw.URL())
	if r.code == 0 || !strings.Contains(r.err, "cannot pay") || !strings.Contains(r.err, "fund the wallet") || !strings.Contains(r.err, "--via bundler") {
		t.Fatalf("push without AR: %s", r)
	}
	if n := len(remoteRanges(t, gw, d)); n != 0 {
		t.Fatalf("%d segments posted by a wallet that cannot pay", n)
	}
	if st := jsonDoc(t, must(t, d.dir, "", "sync", "status", "--json")); st["segment_count"] != 0.0 {
		t.Fatalf("state after a refused push: %v", st)
	}
	if st := jsonDoc(t, must(t, d.dir, "", "sync", "status", "--refresh", "--gateway", gw.URL(), "--json")); st["payer"] != "wallet" || st["balance_winston"] != 0.0 {
		t.Fatalf("sync status of an unfunded wallet: %v", st)
	}
	if err := gw.Mint(d.addr, 1e15); err != nil {
		t.Fatal(err)
	}
	if out := must(t, d.dir, "", "sync", "status", "--refresh", "--gateway", gw.URL()); !strings.Contains(out, "the wallet, which holds 1000 AR") {
		t.Fatalf("sync status of a funded wallet: %s", out)
	}
	if est := jsonDoc(t, must(t, d.dir, "", "sync", "estimate", "--via", "l1", "--gateway", gw.URL(), "--json")); est["enough"] != true {
		t.Fatalf("estimate after funding: %v", est)
	}
	must(t, d.dir, "", "sync", "push", "--via", "l1", "--gateway", gw.URL())
}

// Two gateways: the first down, reads fall over to the second and say
// which one answered; two that disagree on the newest checkpoint (one
// hides it) are reported by verify-proof and rebuild.
func testTwoGateways(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 100, "tg")
	must(t, d.dir, "", "sync", "push", "--gateway", gw.URL())
	mine(t, gw)
	proof := filepath.Join(t.TempDir(), "proof.json")
	must(t, d.dir, "", "audit", "prove", "5", "--out", proof)
	more, _ := genEvents(20, "tg2")
	must(t, d.dir, more, "append", "-")
	push := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--json"))
	newest := push["checkpoint"].(map[string]any)["tx"].(string)
	mine(t, gw)

	down := newProxy(t, gw.URL())
	down.set(func(p *proxy) { p.down = true })
	dead := "http://127.0.0.1:1"
	vp := jsonDoc(t, must(t, d.dir, "", "audit", "verify-proof", proof, "--gateway", dead+","+gw.URL(), "--json"))
	if vp["ok"] != true || fmt.Sprint(vp["answered"]) != fmt.Sprint([]any{gw.URL()}) || vp["gateways_disagree"] == true ||
		!strings.Contains(vp["sentence"].(string), "Answered by "+gw.URL()) {
		t.Fatalf("verify-proof through a dead gateway and a live one: %v", vp)
	}
	// The same through ucl.toml, with a separate GraphQL endpoint.
	toml := fmt.Sprintf("[arweave]\ngateways = [%q, %q]\ngraphql = %q\n", dead, gw.URL(), gw.URL()+"/graphql")
	if err := os.WriteFile(filepath.Join(d.dir, "ucl.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	vp = jsonDoc(t, must(t, d.dir, "", "audit", "verify-proof", proof, "--json"))
	if vp["ok"] != true || fmt.Sprint(vp["answered"]) != fmt.Sprint([]any{gw.URL() + "/graphql", gw.URL()}) {
		t.Fatalf("verify-proof through ucl.toml's gateways: %v", vp)
	}
	if err := os.Remove(filepath.Join(d.dir, "ucl.toml")); err != nil {
		t.Fatal(err)
	}
	dst, r := rebuild(t, down.URL()+","+gw.URL(), d, "--json")
	if r.code != 0 {
		t.Fatalf("rebuild through a failing gateway and a live one: %s", r)
	}
	rb := jsonDoc(t, r.out)
	if fmt.Sprint(rb["answered"]) != fmt.Sprint([]any{gw.URL()}) || uint64(rb["events"].(float64)) != headOf(t, d.dir) {
		t.Fatalf("rebuild: %v", rb)
	}
	_ = dst

	// The second gateway hides the newest checkpoint.
	hider := newProxy(t, gw.URL())
	hider.set(func(p *proxy) { p.hideID = newest })
	vp = jsonDoc(t, must(t, d.dir, "", "audit", "verify-proof", proof, "--gateway", gw.URL()+","+hider.URL(), "--json"))
	if vp["ok"] != true || vp["gateways_disagree"] != true || !strings.Contains(vp["sentence"].(string), "disagree on the newest checkpoint") {
		t.Fatalf("verify-proof with disagreeing gateways: %v", vp)
	}
	_, r = rebuild(t, gw.URL()+","+hider.URL(), d, "--json")
	if r.code != 0 || jsonDoc(t, r.out)["gateways_disagree"] != true || !strings.Contains(r.err, "disagree") {
		t.Fatalf("rebuild with disagreeing gateways: %s", r)
	}
	// One gateway alone cannot tell.
	if vp := jsonDoc(t, must(t, d.dir, "", "audit", "verify-proof", proof, "--gateway", hider.URL(), "--json")); vp["gateways_disagree"] == true {
		t.Fatalf("one gateway: %v", vp)
	}
}

// A device restored from a backup older than the mirror, which then
// appended other events, is refused through the bundler as through L1: the
// items already bundled are another history for those seqs.
func testBundlerFork(t *testing.T, gw *arlocaltest.Gateway) {
	b := startBundler(t, gw)
	a := unfundedDevice(t, 40, "fa")
	backup := copyDir(t, a.dir)
	args := []string{"sync", "push", "--gateway", gw.URL(), "--via", "bundler", "--bundler", b.url, "--segment-bytes", "2048"}
	more, _ := genEvents(20, "fa2")
	must(t, a.dir, more, "append", "-")
	must(t, a.dir, "", args...)
	b.flush()
	before := len(b.uploads())
	other, _ := genEvents(30, "fb")
	must(t, backup, other, "append", "-")
	r := ucl(t, backup, "", args...)
	if r.code == 0 || !strings.Contains(r.err, "diverged") || !strings.Contains(r.err, "hint:") {
		t.Fatalf("push of a forked history through the bundler: %s", r)
	}
	if n := len(b.uploads()); n != before {
		t.Fatalf("the refused push still sent %d items", n-before)
	}
	checkOnce(t, remoteRanges(t, gw, a), headOf(t, a.dir))
}
