package log

import (
	"bytes"
	"errors"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
)

// A v2 grant body is written only with v2 fields, and read back only in
// its one canonical form.
func TestGrantV2Canonical(t *testing.T) {
	h := goldenHeader(TypeShareGrant)
	v1, err := EncodeBody(&ShareGrant{Grantee: "g", ShareKey: []byte{1}, Chunks: []string{"c"}}, &h)
	if err != nil || v1[0] != 1 {
		t.Fatalf("a grant without v2 fields encodes as v%d (%v)", v1[0], err)
	}
	v2 := func(tail ...byte) []byte {
		b := append([]byte{2}, v1[1:]...)
		return append(b, tail...)
	}
	for name, b := range map[string][]byte{
		"v2 without v2 fields": v2(0, 0, 0),
		"unknown flag":         v2(2, 0, 0),
		"own key of 3 bytes":   v2(0, 0, 3, 1, 2, 3),
		"truncated":            v2(0),
	} {
		if _, err := DecodeBody(TypeShareGrant, b, &h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeBody(TypeShareGrant, append([]byte{4}, v1[1:]...), &h); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("v4: %v", err)
	}
	g := &ShareGrant{Grantee: "g", ShareKey: []byte{1}, Follow: true, OwnKey: bytes.Repeat([]byte{4}, ShareKeySize)}
	b, err := EncodeBody(g, &h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeBody(TypeShareGrant, b, &h)
	if err != nil {
		t.Fatal(err)
	}
	if bg := back.(*ShareGrant); !bg.Follow || !bytes.Equal(bg.OwnKey, g.OwnKey) {
		t.Fatalf("round trip: %+v", bg)
	}
	if _, err := EncodeBody(&ShareGrant{Grantee: "g", OwnKey: []byte{1}}, &h); !errors.Is(err, ErrMalformed) {
		t.Fatalf("own key of 1 byte: %v", err)
	}
}

// A v3 grant lists seqs and carries no keys; it is written only with its
// share key and read back only in its one canonical form.
func TestGrantV3Canonical(t *testing.T) {
	h := goldenHeader(TypeShareGrant)
	own := bytes.Repeat([]byte{4}, ShareKeySize)
	g := &ShareGrant{Grantee: "g", ShareKey: []byte{1}, Chunks: []string{"a", "b"}, Seqs: []uint64{3, 9}, OwnKey: own}
	b, err := EncodeBody(g, &h)
	if err != nil || b[0] != 3 {
		t.Fatalf("a grant with seqs: %v", err)
	}
	back, err := DecodeBody(TypeShareGrant, b, &h)
	if err != nil {
		t.Fatal(err)
	}
	if bg := back.(*ShareGrant); len(bg.Seqs) != 2 || bg.Seqs[1] != 9 || len(bg.Keys) != 0 || !bytes.Equal(bg.OwnKey, own) {
		t.Fatalf("round trip: %+v", bg)
	}
	for name, bad := range map[string]*ShareGrant{
		"seqs and keys":        {Grantee: "g", Chunks: []string{"a"}, Seqs: []uint64{1}, Keys: []WrappedKey{{Seq: 1}}, OwnKey: own},
		"seqs without own key": {Grantee: "g", Chunks: []string{"a"}, Seqs: []uint64{1}},
		"seqs not ascending":   {Grantee: "g", Chunks: []string{"a", "b"}, Seqs: []uint64{2, 2}, OwnKey: own},
		"seq 0":                {Grantee: "g", Chunks: []string{"a"}, Seqs: []uint64{0}, OwnKey: own},
		"fewer seqs":           {Grantee: "g", Chunks: []string{"a", "b"}, Seqs: []uint64{1}, OwnKey: own},
	} {
		if _, err := EncodeBody(bad, &h); !errors.Is(err, ErrMalformed) {
			t.Errorf("encode %s: %v", name, err)
		}
	}
	// Hand-made bodies: the prefix up to the seqs, then variants.
	pre := []byte{3, 1, 'g', 1, 1, 0, 1, 1, 'c'} // one chunk, "c"
	tail := append([]byte{0, 0, 32}, own...)
	seq := func(q byte) []byte { return []byte{q, 0, 0, 0, 0, 0, 0, 0} }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	if _, err := DecodeBody(TypeShareGrant, cat(pre, []byte{1}, seq(5), tail), &h); err != nil {
		t.Fatalf("hand-made v3: %v", err)
	}
	for name, b := range map[string][]byte{
		"no seqs":            cat(pre, []byte{0}, tail),
		"more seqs":          cat(pre, []byte{2}, seq(5), seq(6), tail),
		"seqs descending":    cat([]byte{3, 1, 'g', 1, 1, 0, 2, 1, 'c', 1, 'd'}, []byte{2}, seq(5), seq(4), tail),
		"without share key":  cat(pre, []byte{1}, seq(5), []byte{0, 0, 0}),
		"count past the end": cat(pre, []byte{9}, seq(5)),
	} {
		if _, err := DecodeBody(TypeShareGrant, b, &h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// DecryptWithDEK opens an event with the DEK DEK returns, and nothing
// else.
func TestDecryptWithDEK(t *testing.T) {
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(t.TempDir(), Options{Keys: kr})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.Append(t.Context(), Entry{Body: &Store{Kind: KindConversation, Content: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := l.Raw(r.Seq)
	if err != nil {
		t.Fatal(err)
	}
	dek, err := DEK(kr, raw)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := DecryptWithDEK(raw, dek)
	if err != nil || ev.Store().Content != "hello" || ev.Hash != r.Hash {
		t.Fatalf("decrypt with its DEK: %v", err)
	}
	dek[0] ^= 1
	if _, err := DecryptWithDEK(raw, dek); !errors.Is(err, crypto.ErrWrongKey) {
		t.Fatalf("decrypt with a wrong DEK: %v", err)
	}
}
