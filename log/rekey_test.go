package log

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
)

// rotate switches l's keyring to a new epoch, rewraps the DEKs of the
// events in keep under it (one rekey event), and wipes the old epoch.
func rotate(t *testing.T, l *Log, kr *crypto.Keyring, keep []uint64) {
	t.Helper()
	next, err := kr.WithNewEpoch()
	if err != nil {
		t.Fatal(err)
	}
	var heads []Header
	if err := l.ForEachHeader(ctx, 0, 0, func(h *Header) error { heads = append(heads, *h); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := l.SwapKeys(func() error { kr.Adopt(next); return nil }); err != nil {
		t.Fatal(err)
	}
	w, err := kr.Wrapper(kr.Current())
	if err != nil {
		t.Fatal(err)
	}
	rk := &Rekey{Epoch: kr.Current()}
	for _, seq := range keep {
		dek, err := l.DataKey(&heads[seq-1])
		if err != nil {
			t.Fatal(err)
		}
		wk := WrappedKey{Seq: seq}
		if err := w.Wrap(wk.Wrapped[:], dek[:]); err != nil {
			t.Fatal(err)
		}
		rk.Keys = append(rk.Keys, wk)
	}
	if _, err := l.Append(ctx, Entry{Body: rk}); err != nil {
		t.Fatal(err)
	}
	final, err := kr.Without(kr.Current() - 1)
	if err != nil {
		t.Fatal(err)
	}
	kr.Adopt(final)
	l.KeysChanged()
}

// After rotations, events named by the newest rekey events decrypt; the
// others are shredded (ErrShredded, a *Shredded body in Events, counted by
// VerifyDir), never reported as damage; an event of a wiped epoch in a log
// with no rotation is an unknown epoch, not shredded.
func TestRekeyResolution(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	appendN(t, l, 6)
	rotate(t, l, kr, []uint64{1, 3, 4, 5, 6})       // shred 2
	appendN(t, l, 2)                                // seqs 8, 9 under epoch 2
	rotate(t, l, kr, []uint64{1, 3, 4, 6, 7, 8, 9}) // shred 5
	var shredded []uint64
	for _, e := range collect(t, l) {
		if e.IsShredded() {
			shredded = append(shredded, e.Seq)
			if e.Type != TypeStore {
				t.Fatalf("seq %d: shredded body of type %s", e.Seq, e.Type)
			}
		}
	}
	if len(shredded) != 2 || shredded[0] != 2 || shredded[1] != 5 {
		t.Fatalf("shredded %v, want [2 5]", shredded)
	}
	raw, err := l.Raw(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Decrypt(raw); !errors.Is(err, ErrShredded) {
		t.Fatalf("decrypt of a shredded event: %v", err)
	}
	if ok, err := l.Shredded(5); !ok || err != nil {
		t.Fatalf("Shredded(5): %v %v", ok, err)
	}
	if n, err := l.CountShredded(ctx); n != 2 || err != nil {
		t.Fatalf("CountShredded: %d %v", n, err)
	}
	l.Close()
	// A fresh process (no cached map) reads the same, with only epoch 3.
	if kr.Current() != 3 || len(kr.Epochs()) != 1 {
		t.Fatalf("keyring epochs %v", kr.Epochs())
	}
	l = openT(t, dir, kr, Options{})
	if got := len(collect(t, l)); got != 10 {
		t.Fatalf("%d events", got)
	}
	l.Close()
	rep, err := VerifyDir(ctx, dir, kr, nil)
	if err != nil || rep.Shredded != 2 || rep.Events != 10 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// Import into a new log, as a rebuild does: old-epoch events are
	// accepted (checked when read), the result reads the same.
	dir2 := filepath.Join(t.TempDir(), "copy")
	var raws [][]byte
	l = openT(t, dir, nil, Options{})
	if err := l.Records(ctx, 0, 0, func(r *Record) error { raws = append(raws, append([]byte(nil), r.Raw...)); return nil }); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2 := openT(t, dir2, kr, Options{})
	defer l2.Close()
	if err := l2.Import(ctx, raws); err != nil {
		t.Fatal(err)
	}
	if n, err := l2.CountShredded(ctx); n != 2 || err != nil {
		t.Fatalf("imported copy: %d shredded, %v", n, err)
	}
	// Without any rekey event, a wiped epoch is an unknown key, not a shred.
	dir3 := t.TempDir()
	kr3 := testKeys(t)
	l3 := openT(t, dir3, kr3, Options{})
	appendN(t, l3, 2)
	l3.Close()
	other, _ := kr3.WithNewEpoch()
	only, _ := other.Without(1)
	if _, err := VerifyDir(ctx, dir3, only, nil); !errors.Is(err, crypto.ErrUnknownEpoch) || errors.Is(err, ErrShredded) {
		t.Fatalf("verify with an unrelated epoch: %v", err)
	}
}

// An entry prepared under the old epoch and committed after a rotation
// switched epochs is wrapped under the new one (nothing after the switch
// depends on the epoch being wiped).
func TestPreparedBeforeSwitchCommitsUnderNewEpoch(t *testing.T) {
	kr := testKeys(t)
	l := openT(t, t.TempDir(), kr, Options{})
	defer l.Close()
	e := storeEntry(1)
	ps, _, err := l.prepareAll([]Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	next, err := kr.WithNewEpoch()
	if err != nil {
		t.Fatal(err)
	}
	kr.Adopt(next)
	_, p, _, err := l.build(e, &ps[0], 0, Hash{}, nil, map[ID]int{})
	if err != nil {
		t.Fatal(err)
	}
	raw := p.data[:len(p.data)-crcSize]
	h, err := DecodeHeader(raw)
	if err != nil || h.KeyEpoch != 2 {
		t.Fatalf("committed under epoch %d (%v), want 2", h.KeyEpoch, err)
	}
	only, err := kr.Without(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecryptWith(only, raw); err != nil {
		t.Fatalf("the event needs the old epoch: %v", err)
	}
}
