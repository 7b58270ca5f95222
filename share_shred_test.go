package ucl

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/share"
)

// Issue 29, left over from item 1: a grant made, then one of its chunks
// tombstoned and shredded by a key rotation before the first push. The
// grant event carried that chunk's DEK under the share key, and its own
// DEK is disclosed to the grantee: the grantee hid the chunk but held a
// key to its ciphertext, which every segment on Arweave carries. Here the
// grantee does all it can with what was pushed (every disclosure to it,
// the share key, every event a disclosed key opens and every key those
// carry) and must not open the shredded event.
func TestGrantedChunkShreddedBeforePushKeyNotDisclosed(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping arlocal tests in -short mode")
	}
	gw := arlocaltest.Start(t)
	ctx := context.Background()
	a, wb, keyB := shareStore(t)
	if err := gw.Mint(a.st.Meta.WalletAddress, 1e15); err != nil {
		t.Fatal(err)
	}
	b, err := Init(filepath.Join(t.TempDir(), "b"), InitOptions{Wallet: wb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	g, err := a.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "s1", Key: keyB})
	if err != nil || len(g.Chunks) != 2 {
		t.Fatalf("grant: %+v %v", g, err)
	}
	// A grant as versions before v3 wrote it (the DEKs of its chunks in
	// its body), over the same chunks.
	old := appendV2Grant(t, a, wb, []uint64{1, 2})
	// The chunk holding "the cello every morning" (seq 1) is tombstoned and
	// shredded before anything is pushed.
	shredded := uint64(1)
	raw1, err := a.Log().Raw(shredded)
	if err != nil {
		t.Fatal(err)
	}
	ev1, err := a.Log().Decrypt(raw1)
	if err != nil || ev1.Store() == nil {
		t.Fatalf("seq 1: %v", err)
	}
	if _, err := a.Tombstone(ctx, TombstoneRequest{Chunks: []string{ev1.Store().ChunkID}}); err != nil {
		t.Fatal(err)
	}
	rot, err := a.RotateKeys(ctx, RotateKeysRequest{})
	if err != nil || len(rot.Shredded) != 1 || rot.Shredded[0].Seq != shredded {
		t.Fatalf("rotate: %+v %v", rot, err)
	}
	if _, err := a.Push(ctx, PushRequest{Gateway: gw.URL()}); err != nil {
		t.Fatal(err)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	pull, err := b.SharePull(ctx, SharePullRequest{Gateway: gw.URL()})
	if err != nil || pull.Chunks != 1 || len(pull.Grants) != 1 {
		t.Fatalf("pull: %+v %v", pull, err)
	}
	if got := pull.Grants[0].Chunks; len(got) != 1 || got[0] == ev1.Store().ChunkID {
		t.Fatalf("the grantee holds %v, want only the live chunk", got)
	}

	// The old-format grant is withheld, and says so.
	l, err := a.ShareList(ctx, ShareListRequest{})
	if err != nil || len(l.Given) != 2 {
		t.Fatalf("share list: %+v %v", l, err)
	}
	for _, gs := range l.Given {
		if want := map[bool]string{true: "withheld", false: "active"}[gs.Grant == old]; gs.Status != want || gs.Sent == (want == "withheld") {
			t.Fatalf("grant %s: status %s sent %v, want %s", gs.Grant, gs.Status, gs.Sent, want)
		}
	}

	// The grantee as an attacker: everything pushed, every key it yields.
	cl, err := arweave.NewClient(gw.URL(), wb, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found, _, err := mirror.FetchDisclosures(ctx, cl, wb.Address())
	if err != nil || len(found) == 0 {
		t.Fatalf("disclosures: %d %v", len(found), err)
	}
	raws := map[uint64][]byte{}
	if _, err := mirror.Rebuild(ctx, mirror.RebuildOptions{Gateway: cl, Owner: a.st.Meta.WalletAddress, LogID: a.st.Meta.LogIDBytes()},
		func(r mirror.Record) error { raws[r.Seq] = r.Raw; return nil }); err != nil {
		t.Fatal(err)
	}
	target := raws[shredded]
	if target == nil {
		t.Fatal("the shredded event is not on Arweave (it should be, as ciphertext)")
	}
	var candidates [][40]byte // DEKs under the share key
	var w *crypto.Wrapper
	for _, d := range found {
		sk, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), d.D.ShareKey, crypto.ShareBinding{Grantor: d.Grantor, LogID: d.Meta.LogID, Grant: d.D.Grant})
		if err != nil {
			t.Fatal(err)
		}
		if w, err = crypto.NewWrapper(sk); err != nil {
			t.Fatal(err)
		}
		for _, k := range d.D.Keys {
			candidates = append(candidates, k.Wrapped)
			if ev := openWith(raws[k.Seq], w, k.Wrapped); ev != nil {
				if gb, ok := ev.Body.(*log.ShareGrant); ok {
					for _, gk := range gb.Keys {
						candidates = append(candidates, gk.Wrapped)
					}
				}
			}
		}
	}
	for _, c := range candidates {
		if ev := openWith(target, w, c); ev != nil {
			t.Fatalf("the grantee opens the shredded event %d with a pushed key: %q", shredded, ev.Store().Content)
		}
	}
}

// appendV2Grant appends a grant of seqs to wb in the v2 format (DEKs in
// the body), as versions before v3 wrote it.
func appendV2Grant(t *testing.T, s *Store, wb *arweave.Wallet, seqs []uint64) log.ID {
	t.Helper()
	var gid log.ID
	if _, err := rand.Read(gid[:]); err != nil {
		t.Fatal(err)
	}
	sk, err := crypto.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := crypto.WrapBoundShareKey(&wb.PrivateKey().PublicKey, sk, share.Binding(s.shareEnv(), gid))
	if err != nil {
		t.Fatal(err)
	}
	w, err := crypto.NewWrapper(sk)
	if err != nil {
		t.Fatal(err)
	}
	g := &log.ShareGrant{Grantee: wb.Address(), ShareKey: wrapped, Sessions: []string{"s1"}, OwnKey: sk}
	for _, seq := range seqs {
		raw, err := s.Log().Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := s.Log().Decrypt(raw)
		if err != nil {
			t.Fatal(err)
		}
		dek, err := s.st.Log.DEK(raw)
		if err != nil {
			t.Fatal(err)
		}
		k := log.WrappedKey{Seq: seq}
		if err := w.Wrap(k.Wrapped[:], dek); err != nil {
			t.Fatal(err)
		}
		g.Chunks, g.Keys = append(g.Chunks, ev.Store().ChunkID), append(g.Keys, k)
	}
	if _, err := s.Log().Append(context.Background(), log.Entry{ID: gid, Body: g}); err != nil {
		t.Fatal(err)
	}
	return gid
}

// openWith decrypts raw with a DEK wrapped under w, or returns nil.
func openWith(raw []byte, w *crypto.Wrapper, wk [40]byte) *log.Event {
	if raw == nil {
		return nil
	}
	dek := make([]byte, crypto.KeySize)
	defer clear(dek)
	if err := w.Unwrap(dek, wk[:]); err != nil {
		return nil
	}
	ev, err := log.DecryptWithDEK(raw, dek)
	if err != nil {
		return nil
	}
	return ev
}
