package test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
)

// verifyProof runs `ucl audit verify-proof` the way a third party would:
// an empty HOME, no UCL_DIR, no store and no key anywhere, only the proof
// file and the gateway.
func verifyProof(t *testing.T, gw, proof string, extra ...string) result {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(uclBin, append([]string{"audit", "verify-proof", proof, "--gateway", gw}, extra...)...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = home
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Fatalf("verify-proof wrote into HOME: %v", ents)
	}
	return result{o.String(), e.String(), code}
}

func TestProofs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, _ := newDevice(t, gw, 30, "proof")
	head1 := headOf(t, a.dir)

	// A push anchors a checkpoint of what it mirrored, once.
	push := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	cp1, ok := push["checkpoint"].(map[string]any)
	if !ok || cp1["anchored"] != true || uint64(cp1["size"].(float64)) != head1 {
		t.Fatalf("push did not anchor a checkpoint of %d events: %v", head1, push)
	}
	again := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	if cp := again["checkpoint"].(map[string]any); cp["anchored"] == true || cp["tx"] != cp1["tx"] {
		t.Fatalf("second push anchored again: %v", again)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}

	// The proof of seq 5 against the first checkpoint.
	dir := t.TempDir()
	proof1 := filepath.Join(dir, "proof5.json")
	start := time.Now()
	must(t, a.dir, "", "audit", "prove", "5", "--gateway", gw.URL(), "--out", proof1)
	t.Logf("audit prove (30 events, arlocal): %v", time.Since(start))

	// More events, a second checkpoint chained to the first.
	in, _ := genEvents(10, "proof2")
	must(t, a.dir, in, "append", "-")
	head2 := headOf(t, a.dir)
	push2 := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	cp2 := push2["checkpoint"].(map[string]any)
	if cp2["anchored"] != true || uint64(cp2["size"].(float64)) != head2 || cp2["prev"] != cp1["tx"] {
		t.Fatalf("second checkpoint: %v (first %v)", cp2, cp1)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Checkpoints []struct {
			Size   uint64 `json:"size"`
			TxID   string `json:"tx"`
			Height int64  `json:"height"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal([]byte(must(t, a.dir, "", "audit", "checkpoints", "--gateway", gw.URL(), "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Checkpoints) != 2 || list.Checkpoints[0].Size != head1 || list.Checkpoints[1].Size != head2 || list.Checkpoints[1].Height == 0 {
		t.Fatalf("checkpoints: %+v", list)
	}
	if out := must(t, a.dir, "", "audit", "checkpoints", "--gateway", gw.URL()); !strings.Contains(out, cp2["tx"].(string)) {
		t.Fatalf("checkpoints table: %s", out)
	}

	// A third party verifies with nothing but the file and the gateway.
	start = time.Now()
	r := verifyProof(t, gw.URL(), proof1)
	t.Logf("audit verify-proof (2 checkpoints, arlocal): %v", time.Since(start))
	want := fmt.Sprintf("event 5 of log %s, a store by %s, is in the log as anchored in Arweave transaction %s, block height", a.logID, a.addr, cp1["tx"])
	if r.code != 0 || !strings.Contains(r.out, want) || !strings.Contains(r.out, fmt.Sprintf("consistent with 1 later checkpoint(s), up to %d events", head2)) {
		t.Fatalf("verify-proof: %s\nwant %q", r, want)
	}
	vj := jsonDoc(t, verifyProof(t, gw.URL(), proof1, "--json").out)
	if vj["ok"] != true || vj["seq"].(float64) != 5 || vj["checkpoint_tx"] != cp1["tx"] || vj["height"].(float64) <= 0 || vj["later_checkpoints"].(float64) != 1 {
		t.Fatalf("verify-proof --json: %v", vj)
	}
	// The newest checkpoint covering an event is the one proven against.
	proof2 := filepath.Join(dir, "proof35.json")
	must(t, a.dir, "", "audit", "prove", fmt.Sprint(head1+2), "--gateway", gw.URL(), "--out", proof2)
	if r := verifyProof(t, gw.URL(), proof2, "--json"); r.code != 0 || jsonDoc(t, r.out)["checkpoint_tx"] != cp2["tx"] {
		t.Fatalf("proof of 35: %s", r)
	}
	if r := ucl(t, a.dir, "", "audit", "prove", fmt.Sprint(head2+1), "--gateway", gw.URL()); r.code == 0 {
		t.Fatalf("proved an event that does not exist: %s", r)
	}

	// A rebuild checks the segments against the wallet-signed checkpoint.
	rb, rr := rebuild(t, gw.URL(), a, "--json")
	if rr.code != 0 {
		t.Fatalf("rebuild: %s", rr)
	}
	if cp := jsonDoc(t, rr.out)["checkpoint"].(map[string]any); cp["verified"] != true || cp["tx"] != cp2["tx"] || uint64(cp["size"].(float64)) != head2 {
		t.Fatalf("rebuild checkpoint: %v", cp)
	}
	// The rebuilt store continues the chain rather than starting another.
	if out := must(t, rb, "", "sync", "push", "--gateway", gw.URL(), "--json"); jsonDoc(t, out)["checkpoint"].(map[string]any)["tx"] != cp2["tx"] {
		t.Fatalf("push from the rebuilt store: %s", out)
	}

	raw, err := os.ReadFile(proof1)
	if err != nil {
		t.Fatal(err)
	}
	var p log.Proof
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	writeProof := func(name string, p log.Proof) string {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	reject := func(name string, path string, words ...string) {
		t.Helper()
		r := verifyProof(t, gw.URL(), path)
		if r.code == 0 {
			t.Fatalf("%s: accepted: %s", name, r)
		}
		t.Logf("%s: %s", name, strings.TrimSpace(r.err))
		for _, w := range words {
			if !strings.Contains(r.err, w) {
				t.Fatalf("%s: error does not say %q: %s", name, w, r)
			}
		}
	}

	// The proof's anchored_height changed: the gateway's block height for
	// its transaction is another (it was accepted, and the result named the
	// gateway's height without a word).
	if p.AnchoredAt <= 0 {
		t.Fatalf("proof of a mined checkpoint without a height: %+v", p)
	}
	moved := p
	moved.AnchoredAt = p.AnchoredAt + 7
	reject("anchored_height changed", writeProof("height.json", moved), "anchored_height", fmt.Sprint(p.AnchoredAt+7), fmt.Sprint(p.AnchoredAt))

	// A checkpoint anchored by another wallet: the same note and tags,
	// posted (and so signed) by B.
	b, _ := newDevice(t, gw, 0, "other")
	wa, err := arweave.LoadWallet(filepath.Join(a.dir, "wallet.json"))
	if err != nil {
		t.Fatal(err)
	}
	wb, err := arweave.LoadWallet(filepath.Join(b.dir, "wallet.json"))
	if err != nil {
		t.Fatal(err)
	}
	clB, err := arweave.NewClient(gw.URL(), wb, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root1, _ := hex.DecodeString(cp1["root"].(string))
	copied, err := mirror.PostCheckpoint(ctx, clB, mirror.CheckpointAnchor{LogID: a.id(), Size: head1, Root: root1,
		NoteKey: p.NoteKey, Data: log.Anchor{Note: []byte(p.Checkpoint)}.Encode()})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	other := p
	other.CheckpointTx = copied
	reject("another wallet's transaction", writeProof("other-tx.json", other), "signed by "+wb.Address(), "not by the proof's owner "+wa.Address())
	other.Owner = wb.Address()
	reject("another wallet claimed as owner", writeProof("other-owner.json", other), "note key is not named after the owner")
	// A byte of the proof changed.
	bad := p
	bad.EventHash = strings.Replace(bad.EventHash, bad.EventHash[:1], fmt.Sprintf("%x", (int(bad.EventHash[0])+1)%16), 1)
	reject("changed event hash", writeProof("bad-hash.json", bad), "proof rejected")

	// A rewritten history: a second log with A's id whose seq 5 differs,
	// anchored by A's own wallet after checkpoint 2 and claiming to extend it.
	var hashes []log.Hash
	for _, e := range jsonLines(t, must(t, a.dir, "", "audit", "log", "--json")) {
		h, err := hex.DecodeString(e["hash"].(string))
		if err != nil || len(h) != 32 {
			t.Fatalf("audit log hash %v", e["hash"])
		}
		hashes = append(hashes, log.Hash(h))
	}
	if uint64(len(hashes)) != head2 {
		t.Fatalf("audit log listed %d events, head %d", len(hashes), head2)
	}
	fork := append([]log.Hash{}, hashes[:4]...)
	for i := 5; i <= int(head2)+5; i++ {
		fork = append(fork, log.Hash(sha256.Sum256([]byte(fmt.Sprintf("forged event %d", i)))))
	}
	tree, err := log.OpenTree(filepath.Join(dir, "fork-tree"))
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if err := tree.Append(fork); err != nil {
		t.Fatal(err)
	}
	size := uint64(len(fork))
	froot, err := tree.Root(size)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := tree.ConsistencyProof(head2, size)
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := crypto.NoteKey(wa.PrivateKey(), wa.Address())
	if err != nil {
		t.Fatal(err)
	}
	if vkey != p.NoteKey {
		t.Fatalf("note key %q, the proof's %q", vkey, p.NoteKey)
	}
	note, err := log.SignCheckpoint(log.Checkpoint{Origin: log.CheckpointOrigin(a.logID), Size: size, Root: froot}, skey)
	if err != nil {
		t.Fatal(err)
	}
	clA, err := arweave.NewClient(gw.URL(), wa, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forged, err := mirror.PostCheckpoint(ctx, clA, mirror.CheckpointAnchor{LogID: a.id(), Size: size, Root: froot, Prev: cp2["tx"].(string),
		NoteKey: vkey, Data: log.Anchor{Note: note, PrevSize: head2, Consistency: cons}.Encode()})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	reject("rewritten history", proof1, "history rewritten", "checkpoint "+forged, fmt.Sprintf("(%d events, root %x) is not consistent with checkpoint %s (%d events, root %s)", size, froot, cp2["tx"], head2, cp2["root"]))
	rj := verifyProof(t, gw.URL(), proof1, "--json")
	if rj.code == 0 || !strings.Contains(rj.out, `"history_rewritten"`) {
		t.Fatalf("--json rejection: %s", rj)
	}
	// Proofs against later checkpoints are rejected alike.
	reject("rewritten history, later proof", proof2, "history rewritten")

	// The original store, once its log grows past the forged checkpoint,
	// mirrors its segments but refuses to anchor on top of a checkpoint its
	// log does not match.
	in, _ = genEvents(10, "proof3")
	must(t, a.dir, in, "append", "-")
	if headOf(t, a.dir) <= size {
		t.Fatalf("head %d not past the forged checkpoint %d", headOf(t, a.dir), size)
	}
	pr := ucl(t, a.dir, "", "sync", "push", "--gateway", gw.URL())
	if pr.code == 0 || !strings.Contains(pr.err, "does not match an anchored checkpoint") || !strings.Contains(pr.err, forged) {
		t.Fatalf("push over a forged checkpoint: %s", pr)
	}
	checkOnce(t, remoteRanges(t, gw, a), headOf(t, a.dir))
	// And a rebuild refuses segments that do not add up to the newest
	// checkpoint the wallet signed.
	if _, rr := rebuild(t, gw.URL(), a); rr.code == 0 || !strings.Contains(rr.err, "does not match an anchored checkpoint") || !strings.Contains(rr.err, forged) {
		t.Fatalf("rebuild under a forged checkpoint: %s", rr)
	}
}
