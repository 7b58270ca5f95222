package share

import (
	"bytes"
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
)

// grantor is a grantor's log (wallet-a's, from arweave/testdata: no RSA
// key generation) of three chunks, c1 and c2 in session s1, c3 in s2,
// and the grantee wallet-b.
func grantor(t testing.TB) (Env, *arweave.Wallet, *arweave.Wallet) {
	t.Helper()
	wa, err := arweave.LoadWallet("../arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	wb, err := arweave.LoadWallet("../arweave/testdata/wallet-b.json")
	if err != nil {
		t.Fatal(err)
	}
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, err := log.Open(filepath.Join(dir, "log"), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	at := time.Date(2023, 5, 8, 10, 0, 0, 0, time.UTC).UnixMilli()
	for i, c := range []struct{ session, content string }{
		{"s1", "I practise the cello every morning."},
		{"s1", "Scales first, then the Bach suite."},
		{"s2", "The database cutover is planned for Friday."},
	} {
		b := &log.Store{ChunkID: fmt.Sprint("c", i+1), Kind: log.KindConversation, Session: c.session, Role: "user",
			Content: c.content, Time: at + int64(i)*60_000}
		if _, err := l.Append(context.Background(), log.Entry{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{Dir: dir, Log: l, Address: wa.Address(), LogID: [16]byte{7, 7, 7}}
	return env, wa, wb
}

// grantS1 appends a grant of s1's chunks (seqs 1 and 2) to wb and returns
// its event and body.
func grantS1(t testing.TB, env Env, wb *arweave.Wallet) (log.Result, *log.ShareGrant) {
	t.Helper()
	e, err := NewGrant(env, Grant{To: wb.Address(), Key: &wb.PrivateKey().PublicKey, Session: "s1", Note: "n",
		Chunks: []Chunk{{"c2", 2}, {"c1", 1}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := env.Log.Append(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return r, e.Body.(*log.ShareGrant)
}

// disclosedKeys wraps the DEKs of the events seqs under a grant's share
// key, as the grantor's push discloses them.
func disclosedKeys(t testing.TB, env Env, g *log.ShareGrant, seqs ...uint64) []log.WrappedKey {
	t.Helper()
	w, err := crypto.NewWrapper(g.OwnKey)
	if err != nil {
		t.Fatal(err)
	}
	var out []log.WrappedKey
	for _, seq := range seqs {
		raw, err := env.Log.Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		dek, err := env.Log.DEK(raw)
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

// A new grant is v3: its chunks' events in log order, no DEKs, and a
// share key only the grantee's wallet unwraps, bound to the grantor.
func TestNewGrant(t *testing.T) {
	env, wa, wb := grantor(t)
	r, g := grantS1(t, env, wb)
	if g.Grantee != wb.Address() || g.Note != "n" || len(g.Keys) != 0 || fmt.Sprint(g.Seqs) != "[1 2]" ||
		fmt.Sprint(g.Chunks) != "[c1 c2]" || fmt.Sprint(g.Sessions) != "[s1]" || len(g.OwnKey) != log.ShareKeySize {
		t.Fatalf("grant body (v3: seqs in log order, no keys): %+v", g)
	}
	sk, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), g.ShareKey, Binding(env, r.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sk, g.OwnKey) {
		t.Fatal("the grantee's share key is not the grantor's")
	}
	// Another wallet (the grantor's own) cannot unwrap, nor can the grantee
	// under another binding (a copy of the grant re-signed by another
	// wallet) or a tampered key.
	if _, err := crypto.UnwrapBoundShareKey(wa.PrivateKey(), g.ShareKey, Binding(env, r.ID)); !errors.Is(err, crypto.ErrNotForThisWallet) {
		t.Fatalf("foreign wallet unwrap: %v", err)
	}
	other := Binding(env, r.ID)
	other.Grantor = wb.Address()
	if _, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), g.ShareKey, other); err == nil {
		t.Fatal("a share key unwrapped under another grantor's binding")
	}
	bad := append([]byte(nil), g.ShareKey...)
	bad[10] ^= 1
	if _, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), bad, Binding(env, r.ID)); !errors.Is(err, crypto.ErrNotForThisWallet) {
		t.Fatalf("tampered share key unwrap: %v", err)
	}
}

// The grantee's side: the grant opens with B's key and its chunks
// decrypt; a grant disclosed with another share key, or read by another
// wallet, or tampered with, is refused.
func TestReceiveGrant(t *testing.T) {
	env, wa, wb := grantor(t)
	r, g := grantS1(t, env, wb)
	gkeys := disclosedKeys(t, env, g, g.Seqs...)
	w, err := crypto.NewWrapper(g.OwnKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range gkeys {
		raw, err := env.Log.Raw(k.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if err := openDisclosed(raw, w, k.Wrapped); err != nil {
			t.Fatalf("granted event %d does not open: %v", k.Seq, err)
		}
	}
	// An event outside the grant does not open under the share key.
	other, err := env.Log.Raw(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := openDisclosed(other, w, gkeys[0].Wrapped); err == nil {
		t.Fatal("a granted key opens an event outside the grant")
	}
	rl := &receivedLog{raws: map[uint64][]byte{}}
	for seq := uint64(1); seq <= r.Seq; seq++ {
		raw, err := env.Log.Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		rl.raws[seq] = raw
	}
	wk := disclosedKeys(t, env, g, r.Seq)[0].Wrapped
	keys := map[uint64][][40]byte{r.Seq: {wk}}
	for _, k := range gkeys {
		keys[k.Seq] = [][40]byte{k.Wrapped}
	}
	rg, err := receiveGrant(rl, r.ID, g.ShareKey, w, keys, wb.Address())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rg.Chunks) != "[c1 c2]" || rg.Status != "active" || rg.Note != "n" || len(rg.Keys) != 2 {
		t.Fatalf("received: %+v", rg)
	}
	// A granted chunk whose key was not disclosed (shredded before the
	// first push) is hidden, known by id only; a disclosed key for an
	// event the grant does not list is refused.
	part := map[uint64][][40]byte{r.Seq: {wk}, gkeys[1].Seq: {gkeys[1].Wrapped}}
	if rg, err := receiveGrant(rl, r.ID, g.ShareKey, w, part, wb.Address()); err != nil || fmt.Sprint(rg.Chunks) != "[c2]" ||
		fmt.Sprint(rg.Hidden) != "[c1]" {
		t.Fatalf("a chunk without a disclosed key: %+v %v", rg, err)
	}
	extra := map[uint64][][40]byte{r.Seq: {wk}, 3: {gkeys[0].Wrapped}}
	if _, err := receiveGrant(rl, r.ID, g.ShareKey, w, extra, wb.Address()); err == nil || !strings.Contains(err.Error(), "not a granted chunk") {
		t.Fatalf("a disclosed key outside the grant: %v", err)
	}
	bad := append([]byte(nil), g.ShareKey...)
	bad[10] ^= 1
	if _, err := receiveGrant(rl, r.ID, bad, w, keys, wb.Address()); !errors.Is(err, mirror.ErrDisclosure) {
		t.Fatalf("grant disclosed with another share key: %v", err)
	}
	if _, err := receiveGrant(rl, r.ID, g.ShareKey, w, keys, wa.Address()); err == nil {
		t.Fatal("a grant to B accepted for A")
	}
	flipped := map[uint64][][40]byte{r.Seq: {wk}, gkeys[0].Seq: {gkeys[0].Wrapped}}
	flipped[r.Seq][0][5] ^= 1
	if _, err := receiveGrant(rl, r.ID, g.ShareKey, w, flipped, wb.Address()); err == nil {
		t.Fatal("a tampered grant key accepted")
	}
	// A byte of the grant event changed: AES-GCM refuses it.
	raw := rl.raws[r.Seq]
	rl.raws[r.Seq] = append([]byte(nil), raw...)
	rl.raws[r.Seq][len(raw)-3] ^= 1
	if _, err := receiveGrant(rl, r.ID, g.ShareKey, w, keys, wb.Address()); err == nil {
		t.Fatal("a tampered grant event accepted")
	}
}

// The shared projection source is deterministic: the same area gives the
// same events and hashes, written and read back or not; a hidden chunk
// changes them.
func TestSourceDeterministic(t *testing.T) {
	env, wa, wb := grantor(t)
	ctx := context.Background()
	r, g := grantS1(t, env, wb)
	// The share key is bound to the grantor, its log and the grant.
	rl := &receivedLog{Grantor: env.Address, LogID: fmt.Sprintf("%x", env.LogID), raws: map[uint64][]byte{}}
	rg := receivedGrant{Received: Received{Grant: r.ID}, ShareKey: g.ShareKey}
	for _, k := range disclosedKeys(t, env, g, 1, 2, 3) {
		raw, err := env.Log.Raw(k.Seq)
		if err != nil {
			t.Fatal(err)
		}
		rl.raws[k.Seq] = raw
		rg.Keys = append(rg.Keys, receivedKey{Seq: k.Seq, Wrapped: append([]byte(nil), k.Wrapped[:]...)})
		rg.Chunks = append(rg.Chunks, fmt.Sprint("chunk-", k.Seq))
	}
	rl.Grants = []receivedGrant{rg}
	benv := Env{Dir: t.TempDir()}
	if err := writeArea(benv.path(areaDir), []*receivedLog{rl}); err != nil {
		t.Fatal(err)
	}
	src1, err := LoadSource(benv, func() (*rsa.PrivateKey, error) { return wb.PrivateKey(), nil })
	if err != nil {
		t.Fatal(err)
	}
	src2, err := buildSource([]*receivedLog{rl}, wb.PrivateKey())
	if err != nil {
		t.Fatal(err)
	}
	h1, hash1 := src1.Head()
	h2, hash2 := src2.Head()
	if h1 != 3 || h1 != h2 || hash1 != hash2 || src1.Len() != 3 || src1.Owner("chunk-2") != env.Address {
		t.Fatalf("heads %d %x / %d %x", h1, hash1, h2, hash2)
	}
	rl.Grants[0].Keys, rl.Grants[0].Chunks = rl.Grants[0].Keys[1:], rl.Grants[0].Chunks[1:]
	src3, err := buildSource([]*receivedLog{rl}, wb.PrivateKey())
	if err != nil {
		t.Fatal(err)
	}
	if h3, hash3 := src3.Head(); h3 != 2 || hash3 == hash1 {
		t.Fatalf("a hidden chunk left the source as it was: %d", h3)
	}
	if !src1.extends(src2) || src3.extends(src1) || src1.extends(src3) {
		t.Fatal("extends: a source must extend an equal one, and not one it hides chunks of")
	}
	short := &Source{items: src1.items[:2]}
	if !src1.extends(short) || short.extends(src1) {
		t.Fatal("extends: a longer chain extends its prefix, not the reverse")
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
	srcA, err := LoadSource(benv, func() (*rsa.PrivateKey, error) { return wa.PrivateKey(), nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := srcA.Events(ctx, 1, 0, func(*log.Event) error { return nil }); !errors.Is(err, crypto.ErrNotForThisWallet) {
		t.Fatalf("shared area under another wallet: %v", err)
	}
	// An empty area is no source, and asks for no key.
	if src, err := LoadSource(Env{Dir: t.TempDir()}, func() (*rsa.PrivateKey, error) { return nil, errors.New("asked") }); src != nil || err != nil {
		t.Fatalf("empty area: %v %v", src, err)
	}
}
