package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
)

// The Arweave mirror after a takeover, against arlocal: an owner pushes
// only what the stream acknowledged (an event left in its WAL when it was
// cut off from NATS stays local, since the next owner writes another
// event at that seq), and the next owner's push continues the same chain
// on Arweave: a rebuild from Arweave verifies and holds every
// acknowledged event.
func TestClusterMirrorTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three JetStream servers and arlocal")
	}
	ctx := context.Background()
	gw := arlocaltest.Start(t)
	srvs := startCluster(t)
	const ttl = 2 * time.Second
	na, nb := connect(t, srvs[0].ClientURL(), "a", ttl), connect(t, srvs[1].ClientURL(), "b", ttl)
	defer nb.Close()

	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a", "alice"), filepath.Join(root, "b", "alice")}
	s, err := ucl.Init(dirs[0], ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Mint(status(t, s).WalletAddress, 1e15); err != nil {
		t.Fatal(err)
	}
	s.Close()
	copyDir(t, dirs[0], dirs[1])
	push := func(api ucl.API) *ucl.PushResult {
		t.Helper()
		res, err := api.Push(ctx, ucl.PushRequest{Gateway: gw.URL()})
		if err != nil {
			t.Fatalf("push: %v", err)
		}
		if err := gw.Mine(1); err != nil {
			t.Fatal(err)
		}
		return res
	}

	oa, err := na.Own(ctx, "alice", dirs[0], quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: fmt.Sprintf("acked fact %d about kiwis", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if r := push(oa.Store); r.CoveredSeq != 5 {
		t.Fatalf("owner a's push covers %d, want 5", r.CoveredSeq)
	}

	// Cut off from NATS: event 6 stays in a's WAL, never acknowledged.
	na.Close()
	if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: "never acknowledged"}); !errors.Is(err, log.ErrNotReplicated) {
		t.Fatalf("a write cut off from NATS: %v, want ErrNotReplicated", err)
	}
	if h := status(t, oa.Store).HeadSeq; h != 6 {
		t.Fatalf("owner a's local head %d, want 6 (the unacknowledged event in its WAL)", h)
	}
	if r := push(oa.Store); r.HeadSeq != 5 || r.CoveredSeq != 5 || r.Uploaded != 0 {
		t.Fatalf("owner a's push with an unacknowledged tail: head %d covered %d uploaded %d, want 5 5 0",
			r.HeadSeq, r.CoveredSeq, r.Uploaded)
	}
	// Node a is gone for the cluster (its JetStream server stays up: a
	// leader election there would only make the takeover slower).
	oa.Abandon()

	// Node b takes over, appends event 6 (another one) and 7, and pushes
	// from its own mirror state (empty: it adopts a's segment).
	var ob *Owned
	for t0 := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		ob, err = nb.Own(ctx, "alice", dirs[1], quiet)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrLeaseHeld) || time.Since(t0) > 60*time.Second {
			t.Fatalf("takeover: %v", err)
		}
	}
	defer ob.Close()
	for i := 0; i < 2; i++ {
		if _, err := ob.Store.Remember(ctx, ucl.RememberRequest{Content: fmt.Sprintf("after takeover %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	r := push(ob.Store)
	if r.CoveredSeq != 7 || r.Adopted == 0 {
		t.Fatalf("owner b's push: covered %d adopted %d, want 7 and a's segment adopted", r.CoveredSeq, r.Adopted)
	}
	want := status(t, ob.Store)

	w, err := arweave.LoadWallet(filepath.Join(dirs[1], store.WalletFile))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := crypto.LoadKeyring(store.VaultKeyFile(dirs[1]))
	if err != nil {
		t.Fatal(err)
	}
	rdir := filepath.Join(root, "rebuilt")
	if _, err := ucl.Rebuild(ctx, ucl.RebuildOptions{Dir: rdir, Gateway: gw.URL(), Wallet: w, Keys: keys, NoSnapshot: true, Warn: func(string) {}}); err != nil {
		t.Fatalf("rebuild from Arweave: %v", err)
	}
	rs, err := ucl.Open(rdir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	got := status(t, rs)
	if got.HeadSeq != 7 || got.HeadHash != want.HeadHash {
		t.Fatalf("rebuilt from Arweave: head %d %s, want 7 %s", got.HeadSeq, got.HeadHash, want.HeadHash)
	}
}
