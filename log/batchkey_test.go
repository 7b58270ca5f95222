package log

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
)

// testdata/store-v1 was written by the binary before format 2 (913346b):
// a batch of storeEntry(1..3), then a tombstone, under the vault key
// 0x5a×32 at epoch 1. It opens and reads unchanged, takes appends in the
// current format, and the mixed log verifies and reads after a reopen.
func TestFormat1StoreReadsAndTakesTheCurrentFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	copyDir(t, filepath.Join("testdata", "store-v1"), dir)
	kr, err := crypto.KeyringFrom(map[uint32][]byte{1: bytes.Repeat([]byte{0x5a}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, kr, Options{})
	evs := collect(t, l)
	if len(evs) != 4 {
		t.Fatalf("%d events in the format-1 store, want 4", len(evs))
	}
	for i, e := range evs {
		if e.Version != FormatVersion1 {
			t.Fatalf("seq %d: version %d", e.Seq, e.Version)
		}
		if i < 3 && !strings.Contains(e.Body.(*Store).Content, "about the weather") {
			t.Fatalf("seq %d: %+v", e.Seq, e.Body)
		}
	}
	if _, err := l.AppendBatch(ctx, []Entry{storeEntry(4), storeEntry(5)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rep, err := VerifyDir(ctx, dir, kr, nil); err != nil || rep.Events != 6 {
		t.Fatalf("verify of the mixed log: %+v %v", rep, err)
	}
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	evs = collect(t, l)
	if len(evs) != 6 || evs[4].Version != FormatVersion || evs[5].Version != FormatVersion {
		t.Fatalf("after appending: %d events", len(evs))
	}
	if evs[4].WrappedDEK != evs[5].WrappedDEK || evs[4].WrappedDEK == evs[3].WrappedDEK {
		t.Fatal("one request's events do not share one wrapped batch key")
	}
	if c := evs[5].Body.(*Store).Content; c != storeEntry(5).Body.(*Store).Content {
		t.Fatalf("format-%d event reads %q", FormatVersion, c)
	}
}

// Shredding one event of a format-2 batch erases exactly it: a rotation
// rewraps the live siblings' derived DEKs, never the batch key, so
// nothing the new epoch unlocks opens the shredded event, read as a DEK or
// as a batch key.
func TestShredOneEventOfBatch(t *testing.T) {
	kr := testKeys(t)
	l := openT(t, t.TempDir(), kr, Options{})
	defer l.Close()
	if _, err := l.AppendBatch(ctx, []Entry{storeEntry(1), storeEntry(2), storeEntry(3), storeEntry(4)}); err != nil {
		t.Fatal(err)
	}
	rawOf := func(seq uint64) []byte {
		raw, err := l.Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	h2, _ := DecodeHeader(rawOf(2))
	h3, _ := DecodeHeader(rawOf(3))
	if h2.Version != FormatVersion || h2.WrappedDEK != h3.WrappedDEK {
		t.Fatal("the batch was not written under one batch key")
	}
	rotate(t, l, kr, []uint64{1, 3, 4}) // shred 2
	shredded := rawOf(2)
	if _, err := l.Decrypt(shredded); !errors.Is(err, ErrShredded) {
		t.Fatalf("decrypt of the shredded event: %v", err)
	}
	for _, e := range collect(t, l) {
		if e.IsShredded() != (e.Seq == 2) {
			t.Fatalf("seq %d: shredded %v", e.Seq, e.IsShredded())
		}
	}
	rk, err := l.Rekeys()
	if err != nil {
		t.Fatal(err)
	}
	w, err := kr.Wrapper(kr.Current())
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for seq, k := range rk.m {
		var key [crypto.KeySize]byte
		if err := w.Unwrap(key[:], k.wrapped[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := crypto.OpenWith(h2.Cipher(), nil, key[:], shredded[:HeaderSize], shredded[HeaderSize:]); err == nil {
			t.Fatalf("the rekeyed key of seq %d opens the shredded event", seq)
		}
		bk, err := crypto.NewBatchKey(key[:])
		if err != nil {
			t.Fatal(err)
		}
		var dek [crypto.KeySize]byte
		bk.EventKey(dek[:], h2.ID[:])
		if _, err := crypto.OpenWith(h2.Cipher(), nil, dek[:], shredded[:HeaderSize], shredded[HeaderSize:]); err == nil {
			t.Fatalf("the rekeyed key of seq %d, taken as the batch key, opens the shredded event", seq)
		}
		tried++
	}
	if tried != 3 {
		t.Fatalf("%d rekeyed keys", tried)
	}
}

// bodySizeHint is at least the encoded size of store and edit bodies, so
// encoding them allocates once.
func TestBodySizeHintCovers(t *testing.T) {
	for _, g := range goldenBodies {
		h := goldenHeader(g.body.Type())
		b, err := EncodeBody(g.body, &h)
		if err != nil {
			t.Fatal(err)
		}
		if ty := g.body.Type(); (ty == TypeStore || ty == TypeEdit) && cap(b) != bodySizeHint(g.body) {
			t.Fatalf("%s: encoded %d bytes into a buffer of %d, hint %d", g.name, len(b), cap(b), bodySizeHint(g.body))
		}
	}
	e := storeEntry(3)
	h := Header{ID: ID{1}, Time: 5}
	if n := testing.AllocsPerRun(20, func() { _, _ = EncodeBody(e.Body, &h) }); n > 2 {
		t.Fatalf("encoding a store body: %.0f allocations", n)
	}
}

// testdata/store-v2 was written by the binary before format 3 (1e0ca34),
// testdata/store-v3 by the binary before format 4 (012ee10), each the same
// way: storeEntry(1..3) in one batch, storeEntry(4, 5) in another, a
// tombstone of seq 2's chunk, then a rotation to epoch 2 that rewrapped
// every DEK but seq 2's (the rekey event, seq 7) and wiped epoch 1. Their
// keyrings are epoch 2 alone. Each verifies and reads unchanged (seq 2
// shredded), takes appends of the current format chained to its last
// event and hashed by the current rule, and a second rotation over the
// mixed log shreds one event of each format and keeps the others
// readable.
func TestOldStoresReadAndTakeTheCurrentFormat(t *testing.T) {
	for _, c := range []struct {
		store, key string
		version    uint8
	}{
		{"store-v2", "c7f38e6f776263aba7e8ea795b397dc31201e76bddfd2a4fbe5ae59e86e5f1d5", FormatVersion2},
		{"store-v3", "e3a1268626414cc698e9f088f1ac886ea717f3df2a42dabecc86e507d77a339d", FormatVersion3},
	} {
		t.Run(c.store, func(t *testing.T) { testOldStore(t, c.store, c.key, c.version) })
	}
}

func testOldStore(t *testing.T, store, keyHex string, version uint8) {
	key, _ := hex.DecodeString(keyHex)
	dir := filepath.Join(t.TempDir(), "log")
	copyDir(t, filepath.Join("testdata", store), dir)
	kr, err := crypto.KeyringFrom(map[uint32][]byte{2: key})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := VerifyDir(ctx, dir, kr, nil); err != nil || rep.Events != 7 || rep.Shredded != 1 {
		t.Fatalf("verify of the format-%d store: %+v %v", version, rep, err)
	}
	l := openT(t, dir, kr, Options{})
	evs := collect(t, l)
	if len(evs) != 7 {
		t.Fatalf("%d events in the format-%d store, want 7", len(evs), version)
	}
	for i, e := range evs {
		if e.Version != version || e.IsShredded() != (e.Seq == 2) {
			t.Fatalf("seq %d: version %d, shredded %v", e.Seq, e.Version, e.IsShredded())
		}
		if i < 5 && e.Seq != 2 && e.Body.(*Store).Content != storeEntry(i+1).Body.(*Store).Content {
			t.Fatalf("seq %d: %+v", e.Seq, e.Body)
		}
	}
	if _, err := l.AppendBatch(ctx, []Entry{storeEntry(8), storeEntry(9), storeEntry(10)}); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, l)
	if len(evs) != 10 || evs[7].Version != FormatVersion || evs[7].Cipher() != crypto.ChaCha20Poly1305 ||
		evs[7].Prev != evs[6].Hash || evs[7].WrappedDEK != evs[9].WrappedDEK {
		t.Fatalf("after appending: %d events, seq 8 version %d", len(evs), evs[7].Version)
	}
	for _, e := range evs[7:] {
		raw, err := l.Raw(e.Seq)
		if err != nil {
			t.Fatal(err)
		}
		// The current format's rule (format 4: body ‖ header), not the old one.
		if e.Hash != HashRaw(raw) || e.Hash == sha256.Sum256(raw) {
			t.Fatalf("seq %d: hash %s", e.Seq, short(e.Hash))
		}
	}
	if c := evs[8].Body.(*Store).Content; c != storeEntry(9).Body.(*Store).Content {
		t.Fatalf("format-%d event reads %q", FormatVersion, c)
	}
	// Shred seq 4 (old format) and seq 9 (current): the rekey events carry
	// the derived DEKs of the others, under either cipher.
	rotate(t, l, kr, []uint64{1, 3, 5, 6, 7, 8, 10})
	l.Close()
	if rep, err := VerifyDir(ctx, dir, kr, nil); err != nil || rep.Events != 11 || rep.Shredded != 3 {
		t.Fatalf("verify of the mixed log: %+v %v", rep, err)
	}
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	for _, e := range collect(t, l) {
		if shred := e.Seq == 2 || e.Seq == 4 || e.Seq == 9; e.IsShredded() != shred {
			t.Fatalf("seq %d (version %d): shredded %v", e.Seq, e.Version, e.IsShredded())
		}
		if s, ok := e.Body.(*Store); ok && !strings.Contains(s.Content, "about the weather") {
			t.Fatalf("seq %d: %q", e.Seq, s.Content)
		}
	}
	for _, seq := range []uint64{4, 9} {
		raw, err := l.Raw(seq)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Decrypt(raw); !errors.Is(err, ErrShredded) {
			t.Fatalf("decrypt of shredded seq %d: %v", seq, err)
		}
	}
}
