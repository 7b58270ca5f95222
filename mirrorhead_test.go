package ucl

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// Options.MirrorHead bounds a push: with events after it in the local log
// (a cluster owner's tail the stream has not acknowledged), the push
// uploads only the prefix up to it, and the rest once it moves on.
func TestPushStopsAtMirrorHead(t *testing.T) {
	gw := arlocaltest.Start(t)
	ctx := context.Background()
	wa, err := arweave.LoadWallet("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Mint(wa.Address(), 1e15); err != nil {
		t.Fatal(err)
	}
	var acked atomic.Uint64
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, InitOptions{Wallet: wa, Options: Options{MirrorHead: acked.Load, Warn: func(string) {}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, AppendRequest{JSONL: repairEvents(1, 10, "mirror head")}); err != nil {
		t.Fatal(err)
	}
	acked.Store(6)
	r, err := s.Push(ctx, PushRequest{Gateway: gw.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if r.HeadSeq != 6 || r.CoveredSeq != 6 {
		t.Fatalf("push with mirror head 6 of 10: head %d covered %d, want 6 6", r.HeadSeq, r.CoveredSeq)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	st, err := s.SyncStatus(ctx, SyncStatusRequest{Gateway: gw.URL(), Refresh: true})
	if err != nil || st.CoveredSeq != 6 || st.HeadSeq != 10 || st.Unmirrored != 4 {
		t.Fatalf("sync status after the bounded push: %+v %v, want covered 6 of head 10", st, err)
	}
	acked.Store(10)
	if r, err := s.Push(ctx, PushRequest{Gateway: gw.URL()}); err != nil || r.CoveredSeq != 10 {
		t.Fatalf("push once the mirror head reached 10: %+v %v", r, err)
	}
}
