package ucl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
)

// shareStore is a store with testJSONL, its wallet wallet-a; the grantee
// is wallet-b (keys from arweave/testdata: no RSA key generation).
func shareStore(t *testing.T) (*Store, *arweave.Wallet, string) {
	t.Helper()
	wa, err := arweave.LoadWallet("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Init(filepath.Join(t.TempDir(), "store"), InitOptions{Wallet: wa})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Append(context.Background(), AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	wb, err := arweave.LoadWallet("arweave/testdata/wallet-b.json")
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := os.ReadFile("arweave/testdata/wallet-b.json")
	if err != nil {
		t.Fatal(err)
	}
	return s, wb, string(jwk)
}

// Bad grants are clear errors and write nothing.
func TestShareGrantBadInput(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	head, _ := s.Log().Head()
	keyA, err := os.ReadFile("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  ShareGrantRequest
		want error
	}{
		{"malformed address", ShareGrantRequest{To: "abc", Session: "s1", Key: keyB}, ErrBadAddress},
		{"address of 43 non-base64url", ShareGrantRequest{To: "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", Session: "s1", Key: keyB}, ErrBadAddress},
		{"empty scope", ShareGrantRequest{To: wb.Address(), Key: keyB}, ErrEmptyScope},
		{"scope matching nothing", ShareGrantRequest{To: wb.Address(), Session: "nope", Key: keyB}, ErrEmptyScope},
		{"unknown document", ShareGrantRequest{To: wb.Address(), Documents: []string{"nope"}, Key: keyB}, ErrEmptyScope},
		{"key of another address", ShareGrantRequest{To: wb.Address(), Session: "s1", Key: string(keyA)}, ErrNoGranteeKey},
		{"key that is no JWK", ShareGrantRequest{To: wb.Address(), Session: "s1", Key: "{}"}, ErrBadRequest},
		{"bad time", ShareGrantRequest{To: wb.Address(), Since: "yesterday-ish", Key: keyB}, ErrBadRequest},
	}
	for _, tc := range cases {
		if _, err := s.ShareGrant(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: "00112233445566778899aabbccddeeff"}); !errors.Is(err, ErrUnknownGrant) {
		t.Errorf("revoke of an unknown id: %v", err)
	}
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: "zz"}); !errors.Is(err, ErrUnknownGrant) {
		t.Errorf("revoke of a malformed id: %v", err)
	}
	_, err = s.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Since: "2030-01-01", Key: keyB})
	if !errors.Is(err, ErrEmptyScope) || !strings.Contains(err.Error(), "from 2030-01-01 on") || strings.Contains(err.Error(), "292277") {
		t.Errorf("since-only scope matching nothing: %v", err)
	}
	if h, _ := s.Log().Head(); h != head {
		t.Fatalf("bad input wrote events: head %d, was %d", h, head)
	}
	// A revoke of an event that is not a grant.
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: firstEventID(t, s)}); !errors.Is(err, ErrUnknownGrant) {
		t.Errorf("revoke of a store event: %v", err)
	}
}

func firstEventID(t *testing.T, s *Store) string {
	t.Helper()
	raw, err := s.Log().Raw(1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := log.DecodeHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	return h.ID.String()
}

// The grant event carries the granted DEKs under a share key only the
// grantee's wallet unwraps; another wallet fails cleanly.
func TestShareGrantWrapping(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	res, err := s.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "s1", Key: keyB, Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 2 || res.KeyFrom != "given" {
		t.Fatalf("grant: %+v", res)
	}
	raw, err := s.Log().Raw(res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.Log().Decrypt(raw)
	if err != nil {
		t.Fatal(err)
	}
	g := ev.Body.(*log.ShareGrant)
	if g.Grantee != wb.Address() || g.Note != "n" || len(g.Keys) != 0 || len(g.Seqs) != 2 || len(g.OwnKey) != log.ShareKeySize {
		t.Fatalf("grant body (v3: seqs, no keys): %+v", g)
	}
	gkeys := disclosedChunkKeys(t, s, g)
	sk, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), g.ShareKey, s.shareBinding(res.Grant))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sk, g.OwnKey) {
		t.Fatal("the grantee's share key is not the grantor's")
	}
	w, err := crypto.NewWrapper(sk)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range gkeys {
		raw, err := s.Log().Raw(k.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if err := openDisclosed(raw, w, k.Wrapped); err != nil {
			t.Fatalf("granted event %d does not open: %v", k.Seq, err)
		}
	}
	// An event outside the grant does not open under the share key.
	other, err := s.Log().Raw(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := openDisclosed(other, w, gkeys[0].Wrapped); err == nil {
		t.Fatal("a granted key opens an event outside the grant")
	}
	// Another wallet (wallet-a, the grantor's own) cannot unwrap.
	wa, err := arweave.LoadWallet("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crypto.UnwrapBoundShareKey(wa.PrivateKey(), g.ShareKey, s.shareBinding(res.Grant)); !errors.Is(err, crypto.ErrNotForThisWallet) {
		t.Fatalf("foreign wallet unwrap: %v", err)
	}
	// A tampered wrapped share key does not unwrap either.
	bad := append([]byte(nil), g.ShareKey...)
	bad[10] ^= 1
	if _, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), bad, s.shareBinding(res.Grant)); !errors.Is(err, crypto.ErrNotForThisWallet) {
		t.Fatalf("tampered share key unwrap: %v", err)
	}

	// The grantee's side: the grant opens with B's key and its chunks
	// decrypt; a grant disclosed with another share key, or read by
	// another wallet, is refused.
	rl := &receivedLog{raws: map[uint64][]byte{}}
	for seq := uint64(1); seq <= res.Seq; seq++ {
		r, err := s.Log().Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		rl.raws[seq] = r
	}
	dek, err := log.DEK(s.st.Keys, raw)
	if err != nil {
		t.Fatal(err)
	}
	var wk [40]byte
	if err := w.Wrap(wk[:], dek); err != nil {
		t.Fatal(err)
	}
	keys := map[uint64][][40]byte{res.Seq: {wk}}
	for _, k := range gkeys {
		keys[k.Seq] = [][40]byte{k.Wrapped}
	}
	rg, err := receiveGrant(rl, res.Grant, g.ShareKey, w, keys, wb.Address())
	if err != nil {
		t.Fatal(err)
	}
	if len(rg.Chunks) != 2 || rg.Status != "active" || rg.Note != "n" {
		t.Fatalf("received: %+v", rg)
	}
	// A granted chunk whose key was not disclosed (shredded before the
	// first push) is hidden, known by id only; a disclosed key for an
	// event the grant does not list is refused.
	part := map[uint64][][40]byte{res.Seq: {wk}, gkeys[1].Seq: {gkeys[1].Wrapped}}
	if rg, err := receiveGrant(rl, res.Grant, g.ShareKey, w, part, wb.Address()); err != nil || len(rg.Chunks) != 1 ||
		fmt.Sprint(rg.Hidden) != fmt.Sprint([]string{g.Chunks[0]}) {
		t.Fatalf("a chunk without a disclosed key: %+v %v", rg, err)
	}
	extra := map[uint64][][40]byte{res.Seq: {wk}, 3: {gkeys[0].Wrapped}}
	if _, err := receiveGrant(rl, res.Grant, g.ShareKey, w, extra, wb.Address()); err == nil || !strings.Contains(err.Error(), "not a granted chunk") {
		t.Fatalf("a disclosed key outside the grant: %v", err)
	}
	if _, err := receiveGrant(rl, res.Grant, bad, w, keys, wb.Address()); !errors.Is(err, mirror.ErrDisclosure) {
		t.Fatalf("grant disclosed with another share key: %v", err)
	}
	if _, err := receiveGrant(rl, res.Grant, g.ShareKey, w, keys, wa.Address()); err == nil {
		t.Fatal("a grant to B accepted for A")
	}
	flipped := map[uint64][][40]byte{res.Seq: {wk}, gkeys[0].Seq: {gkeys[0].Wrapped}}
	flipped[res.Seq][0][5] ^= 1
	if _, err := receiveGrant(rl, res.Grant, g.ShareKey, w, flipped, wb.Address()); err == nil {
		t.Fatal("a tampered grant key accepted")
	}
	// A byte of the grant event changed: AES-GCM refuses it.
	rl.raws[res.Seq] = append([]byte(nil), raw...)
	rl.raws[res.Seq][len(raw)-3] ^= 1
	if _, err := receiveGrant(rl, res.Grant, g.ShareKey, w, keys, wb.Address()); err == nil {
		t.Fatal("a tampered grant event accepted")
	}

	// Listed as given, active, not sent; revoked once.
	l, err := s.ShareList(ctx, ShareListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Given) != 1 || l.Given[0].Status != "active" || l.Given[0].Sent || len(l.Received) != 0 {
		t.Fatalf("list: %+v", l)
	}
	rv, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: res.Grant.String()})
	if err != nil || rv.Grantee != wb.Address() {
		t.Fatalf("revoke: %v %+v", err, rv)
	}
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: res.Grant.String()}); !errors.Is(err, ErrUnknownGrant) {
		t.Fatalf("second revoke: %v", err)
	}
	if l, err = s.ShareList(ctx, ShareListRequest{}); err != nil || l.Given[0].Status != "revoked" {
		t.Fatalf("list after revoke: %v %+v", err, l)
	}
}

// disclosedChunkKeys wraps the DEKs of a v3 grant's chunks under its share
// key, as the grantor's push discloses them.
func disclosedChunkKeys(t *testing.T, s *Store, g *log.ShareGrant) []log.WrappedKey {
	t.Helper()
	w, err := crypto.NewWrapper(g.OwnKey)
	if err != nil {
		t.Fatal(err)
	}
	var out []log.WrappedKey
	for _, seq := range g.Seqs {
		raw, err := s.Log().Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		dek, err := s.dekOf(raw)
		if err != nil {
			t.Fatal(err)
		}
		k := log.WrappedKey{Seq: seq}
		if err := w.Wrap(k.Wrapped[:], dek); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// The shared projection source is deterministic: the same area gives the
// same events and hashes; a hidden chunk changes them.
func TestSharedSourceDeterministic(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	res, err := s.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Since: "2023-05-01", Key: keyB})
	if err != nil {
		t.Fatal(err)
	}
	_, g, err := s.grantAt(res.Grant)
	if err != nil {
		t.Fatal(err)
	}
	// The share key is bound to the grantor, its log and the grant.
	rl := &receivedLog{Grantor: s.st.Meta.WalletAddress, LogID: s.st.Meta.LogID, raws: map[uint64][]byte{}}
	rg := receivedGrant{ReceivedShare: ReceivedShare{Grant: res.Grant}, ShareKey: g.ShareKey}
	for _, k := range disclosedChunkKeys(t, s, g) {
		raw, err := s.Log().Raw(k.Seq)
		if err != nil {
			t.Fatal(err)
		}
		rl.raws[k.Seq] = raw
		rg.Keys = append(rg.Keys, receivedKey{Seq: k.Seq, Wrapped: append([]byte(nil), k.Wrapped[:]...)})
		rg.Chunks = append(rg.Chunks, fmt.Sprint("chunk-", k.Seq))
	}
	rl.Grants = []receivedGrant{rg}
	dir := t.TempDir()
	if err := writeSharedArea(filepath.Join(dir, "shared"), []*receivedLog{rl}); err != nil {
		t.Fatal(err)
	}
	area, err := loadSharedArea(filepath.Join(dir, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	src1, err := buildSharedSource(area, wb)
	if err != nil {
		t.Fatal(err)
	}
	src2, err := buildSharedSource([]*receivedLog{rl}, wb)
	if err != nil {
		t.Fatal(err)
	}
	h1, hash1 := src1.Head()
	h2, hash2 := src2.Head()
	if h1 != 3 || h1 != h2 || hash1 != hash2 {
		t.Fatalf("heads %d %x / %d %x", h1, hash1, h2, hash2)
	}
	rl.Grants[0].Keys, rl.Grants[0].Chunks = rl.Grants[0].Keys[1:], rl.Grants[0].Chunks[1:]
	src3, err := buildSharedSource([]*receivedLog{rl}, wb)
	if err != nil {
		t.Fatal(err)
	}
	if h3, hash3 := src3.Head(); h3 != 2 || hash3 == hash1 {
		t.Fatalf("a hidden chunk left the source as it was: %d", h3)
	}
	if !src1.extends(src2) || src3.extends(src1) || src1.extends(src3) {
		t.Fatal("extends: a source must extend an equal one, and not one it hides chunks of")
	}
	short := &sharedSource{items: src1.items[:2]}
	if !src1.extends(short) || short.extends(src1) {
		t.Fatal("extends: a longer chain extends its prefix, not the reverse")
	}
	wa, err := arweave.LoadWallet("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	// Every event decrypts, to the same events either way.
	var evs1, evs2 []*log.Event
	if err := src1.Events(ctx, 1, 0, func(ev *log.Event) error { evs1 = append(evs1, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := src2.Events(ctx, 1, 0, func(ev *log.Event) error { evs2 = append(evs2, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range evs1 {
		if evs1[i].Seq != uint64(i+1) || evs1[i].Hash != evs2[i].Hash || evs1[i].Store().Content != evs2[i].Store().Content || evs1[i].Store().Content == "" {
			t.Fatalf("event %d differs", i+1)
		}
		if i > 0 && evs1[i].Prev != evs1[i-1].Hash {
			t.Fatalf("event %d is not chained", i+1)
		}
	}
	// Under another wallet the chain is the same but nothing decrypts.
	srcA, err := buildSharedSource(area, wa)
	if err != nil {
		t.Fatal(err)
	}
	if err := srcA.Events(ctx, 1, 0, func(*log.Event) error { return nil }); !errors.Is(err, crypto.ErrNotForThisWallet) {
		t.Fatalf("shared area under another wallet: %v", err)
	}
}

// Through the owner's socket: the same grant, list and errors (sentinels
// survive the socket).
func TestShareThroughClient(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	c := serve(t, s)
	res, err := c.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "s1", Key: keyB})
	if err != nil || len(res.Chunks) != 2 {
		t.Fatalf("grant via client: %+v %v", res, err)
	}
	a, e1 := s.ShareList(ctx, ShareListRequest{})
	b, e2 := c.ShareList(ctx, ShareListRequest{})
	if e1 != nil || e2 != nil || asJSON(t, a) != asJSON(t, b) || len(a.Given) != 1 {
		t.Fatalf("list: %v %v\n%s\n%s", e1, e2, asJSON(t, a), asJSON(t, b))
	}
	if _, err := c.ShareGrant(ctx, ShareGrantRequest{To: "nope", Session: "s1", Key: keyB}); !errors.Is(err, ErrBadAddress) {
		t.Fatalf("bad address via client: %v", err)
	}
	if _, err := c.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "none", Key: keyB}); !errors.Is(err, ErrEmptyScope) {
		t.Fatalf("empty scope via client: %v", err)
	}
	if _, err := c.ShareRevoke(ctx, ShareRevokeRequest{Grant: "00112233445566778899aabbccddeeff"}); !errors.Is(err, ErrUnknownGrant) {
		t.Fatalf("unknown grant via client: %v", err)
	}
	if _, err := c.ShareRevoke(ctx, ShareRevokeRequest{Grant: res.Grant.String()}); err != nil {
		t.Fatal(err)
	}
}
