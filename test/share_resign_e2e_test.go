package test

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
)

// Issue 29.5: wallet C re-posted A's segments, checkpoints and grant
// disclosure under its own signature, using no secret; B's `share pull`
// then listed a grant "from C", attributed A's chunks to C, and C's copy
// stayed active after A revoked. The share key is now bound to the
// grantor's address, log id and grant id (the RSA-OAEP label), so C's
// copy does not unwrap: B receives A's grant from A only and reports C's.
func TestReSignedShareIsRejected(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	url := gw.URL()
	a, _ := newDevice(t, gw, 0, "")
	b, _ := newDevice(t, gw, 0, "")
	c, _ := newDevice(t, gw, 0, "")
	must(t, a.dir, shareEvents(), "append", "-")
	must(t, b.dir, "", "store", "--session", "mine", "B publishes once")
	must(t, b.dir, "", "sync", "push", "--gateway", url)
	must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "alpha", "--gateway", url)
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)

	// C copies A's segments and the grant disclosure, data and tags, and
	// signs each as its own. (Not A's checkpoint: its note is signed by A's
	// note key, which the grantee's checkpoint check already ties to A; a
	// log without a checkpoint is what let the copy through.)
	ctx := context.Background()
	cl, err := arweave.NewClient(url, nil, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := arweave.LoadWallet(filepath.Join(c.dir, "wallet.json"))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := arweave.NewClient(url, w, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logID [16]byte
	lb, err := hex.DecodeString(a.logID)
	if err != nil || len(lb) != 16 {
		t.Fatalf("log id %q: %v", a.logID, err)
	}
	copy(logID[:], lb)
	var txs []arweave.TxInfo
	for _, k := range []mirror.Kind{mirror.KindSegment} {
		found, err := mirror.FindSegments(ctx, cl, a.addr, logID, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, found...)
	}
	grants, err := mirror.FindGrants(ctx, cl, b.addr)
	if err != nil {
		t.Fatal(err)
	}
	txs = append(txs, grants...)
	copied := 0
	for _, tx := range txs {
		if tx.Owner != a.addr {
			continue
		}
		data, err := cl.FetchData(ctx, tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wc.Upload(ctx, data, tx.Tags); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if copied < 2 {
		t.Fatalf("copied %d of A's transactions, want its segment(s) and disclosure", copied)
	}
	mine(t, gw)

	r := ucl(t, b.dir, "", "share", "pull", "--gateway", url, "--json")
	doc := jsonDoc(t, r.out)
	for _, g := range doc["grants"].([]any) {
		if gr := g.(map[string]any)["grantor"]; gr != a.addr {
			t.Fatalf("B received a grant from %v (C is %s): a re-signed copy verified:\n%s", gr, c.addr, r)
		}
	}
	if n := len(doc["grants"].([]any)); n != 1 || doc["chunks"] != float64(3) {
		t.Fatalf("B's pull: %d grants, %v chunks; want A's one grant of 3 chunks:\n%s", n, doc["chunks"], r)
	}
	rejectedC := false
	for _, rj := range doc["rejected"].([]any) {
		m := rj.(map[string]any)
		if m["grantor"] == c.addr && strings.Contains(m["reason"].(string), "re-signed") {
			rejectedC = true
		}
	}
	if !rejectedC || r.code == 0 {
		t.Fatalf("C's copy is not reported as rejected (re-signed):\n%s", r)
	}
	if out := must(t, b.dir, "", "query", "cello", "--origin", "shared", "--json"); strings.Contains(out, c.addr) {
		t.Fatalf("B's queries attribute A's chunks to C: %s", out)
	}
}
