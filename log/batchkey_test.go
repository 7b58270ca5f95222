package log

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
)

// testdata/store-v1 was written by the binary before format 2 (913346b):
// a batch of storeEntry(1..3), then a tombstone, under the vault key
// 0x5a×32 at epoch 1. It opens and reads unchanged, takes format-2
// appends, and the mixed log verifies and reads after a reopen.
func TestFormat1StoreReadsAndTakesFormat2(t *testing.T) {
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
		t.Fatalf("format-2 event reads %q", c)
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
		if _, err := crypto.Open(nil, key[:], shredded[:HeaderSize], shredded[HeaderSize:]); err == nil {
			t.Fatalf("the rekeyed key of seq %d opens the shredded event", seq)
		}
		bk, err := crypto.NewBatchKey(key[:])
		if err != nil {
			t.Fatal(err)
		}
		var dek [crypto.KeySize]byte
		bk.EventKey(dek[:], h2.ID[:])
		if _, err := crypto.Open(nil, dek[:], shredded[:HeaderSize], shredded[HeaderSize:]); err == nil {
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
