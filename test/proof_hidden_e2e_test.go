package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// TestProofHiddenCheckpoint: a gateway that leaves a checkpoint out of its
// GraphQL answers. verify-proof reports the gateway's newest checkpoint;
// one hidden between the proof's and a later one is caught through the
// later one's signed UC-Prev-Checkpoint link and named; hiding the newest
// cannot be caught, and the output shows the view it was given.
func TestProofHiddenCheckpoint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	a, _ := newDevice(t, gw, 20, "hidden")
	var cps []map[string]any
	push := func() {
		t.Helper()
		cp := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))["checkpoint"].(map[string]any)
		if cp["anchored"] != true {
			t.Fatalf("push did not anchor: %v", cp)
		}
		if len(cps) > 0 && cp["prev"] != cps[len(cps)-1]["tx"] {
			t.Fatalf("checkpoint %v does not link to %v", cp, cps[len(cps)-1])
		}
		cps = append(cps, cp)
		if err := gw.Mine(1); err != nil {
			t.Fatal(err)
		}
	}
	push()
	proof := filepath.Join(t.TempDir(), "proof5.json")
	must(t, a.dir, "", "audit", "prove", "5", "--gateway", gw.URL(), "--out", proof)
	for i := 0; i < 2; i++ {
		in, _ := genEvents(5, fmt.Sprintf("hidden%d", i))
		must(t, a.dir, in, "append", "-")
		push()
	}
	cp2, cp3 := cps[1]["tx"].(string), cps[2]["tx"].(string)
	size3 := uint64(cps[2]["size"].(float64))

	// The honest gateway: the sentence and the JSON carry its view.
	r := verifyProof(t, gw.URL(), proof)
	if want := fmt.Sprintf("The gateway's newest checkpoint is %s (%d events, block height", cp3, size3); r.code != 0 || !strings.Contains(r.out, want) {
		t.Fatalf("honest gateway: %s\nwant %q", r, want)
	}
	vj := jsonDoc(t, verifyProof(t, gw.URL(), proof, "--json").out)
	if vj["ok"] != true || vj["gateway_newest_tx"] != cp3 || uint64(vj["gateway_newest_size"].(float64)) != size3 || vj["gateway_newest_height"].(float64) <= 0 || vj["later_checkpoints"].(float64) != 2 {
		t.Fatalf("verify-proof --json: %v", vj)
	}

	// The middle checkpoint hidden: caught and named.
	p := newProxy(t, gw.URL())
	p.set(func(p *proxy) { p.hideID = cp2 })
	r = verifyProof(t, p.URL(), proof)
	t.Logf("middle checkpoint hidden: %s", strings.TrimSpace(r.err))
	for _, w := range []string{"hides an anchored checkpoint", "checkpoint " + cp3, "names " + cp2 + " as the previous checkpoint"} {
		if r.code == 0 || !strings.Contains(r.err, w) {
			t.Fatalf("hidden %s: error does not say %q: %s", cp2, w, r)
		}
	}
	if rj := verifyProof(t, p.URL(), proof, "--json"); rj.code == 0 || !strings.Contains(rj.out, `"checkpoint_hidden"`) {
		t.Fatalf("hidden checkpoint --json: %s", rj)
	}

	// The newest hidden: nothing names it, so it cannot be caught; the
	// output says which checkpoint the gateway showed as its newest.
	p.set(func(p *proxy) { p.hideID = cp3 })
	r = verifyProof(t, p.URL(), proof)
	if want := fmt.Sprintf("The gateway's newest checkpoint is %s (%d events,", cp2, uint64(cps[1]["size"].(float64))); r.code != 0 || !strings.Contains(r.out, want) {
		t.Fatalf("newest hidden: %s\nwant %q", r, want)
	}
}
