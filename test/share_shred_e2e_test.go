package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// Issue 29.1: grant a session, push, tombstone one of its chunks, `ucl
// keys rotate`, push: "disclose shares: decrypt seq 3 (epoch 1): log:
// content shredded by a vault-key rotation … run `ucl sync push` again to
// resume", and every retry failed the same way. Shredded content is gone:
// the grantee must learn the tombstone (the chunk leaves its shared
// projections), never the content; a followed chunk stored and shredded
// before any push is simply never sent.
func TestSharedStorePushesAfterTombstoneAndRotate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	url := gw.URL()
	a, _ := newDevice(t, gw, 0, "")
	b, _ := newDevice(t, gw, 0, "")
	must(t, a.dir, shareEvents(), "append", "-")
	must(t, b.dir, "", "store", "--session", "mine", "B publishes once")
	must(t, b.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)

	must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "alpha", "--follow", "--gateway", url)
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)
	if pull := jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json")); pull["chunks"] != float64(3) {
		t.Fatalf("first pull: %v", pull)
	}

	// A followed chunk B will get, a granted chunk tombstoned, and a
	// followed chunk stored and tombstoned before any push; then the
	// rotation shreds both tombstoned ones.
	must(t, a.dir, "", "store", "--session", "alpha", "--chunk-id", "alpha-3", "the cello lesson moved to Tuesday")
	must(t, a.dir, "", "tombstone", "--chunk", "alpha-1")
	must(t, a.dir, "", "store", "--session", "alpha", "--chunk-id", "alpha-4", "a cello secret stored by mistake")
	must(t, a.dir, "", "tombstone", "--chunk", "alpha-4")
	// A second grant, never pushed before its chunk is tombstoned and
	// shredded: the grantor knows the chunk only by the grant's id list.
	must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "gamma", "--gateway", url)
	must(t, a.dir, "", "tombstone", "--chunk", "gamma-0")
	must(t, a.dir, "", "keys", "rotate", "--yes")
	for i := 0; i < 2; i++ {
		if r := ucl(t, a.dir, "", "sync", "push", "--gateway", url, "--json"); r.code != 0 {
			t.Fatalf("push %d after tombstone + rotate: %s", i+1, r)
		}
	}
	mine(t, gw)
	pull := jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json"))
	if pull["chunks"] != float64(3) || len(pull["grants"].([]any)) != 2 {
		t.Fatalf("pull after the rotation: %v", pull)
	}
	if ids, _ := queryIDs(t, b.dir, "shared"); fmt.Sprint(ids) != "[alpha-0 alpha-2 alpha-3]" {
		t.Fatalf("after A's tombstone and rotation B sees %v, want alpha-0, alpha-2 and the followed alpha-3", ids)
	}
	assertNotInDir(t, b.dir, "practise cello scales", "stored by mistake", "cello bridge")
	if out := must(t, a.dir, "", "share", "list", "--json"); !strings.Contains(out, `"status":"active"`) {
		t.Fatalf("A's grant: %s", out)
	}
}
