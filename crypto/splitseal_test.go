package crypto

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

// splitSeal seals plain under dek and aad in two steps, as the log does:
// Encrypt in place, then Tag, reusing p and t.
func splitSeal(t testing.TB, p *PreSealer, tg *Tagger, dek, aad, plain []byte) []byte {
	t.Helper()
	buf := append(append([]byte(nil), plain...), make([]byte, TagSize)...)
	var pk PolyKey
	if err := p.Encrypt(&pk, dek, buf); err != nil {
		t.Fatal(err)
	}
	tg.Tag(&pk, aad, buf)
	if pk != (PolyKey{}) {
		t.Fatal("Tag left the one-time key behind")
	}
	return buf
}

// checkSplit compares the two-step seal with chacha20poly1305's Seal.
func checkSplit(t testing.TB, p *PreSealer, tg *Tagger, dek, aad, plain []byte) {
	t.Helper()
	g, err := chacha20poly1305.New(dek)
	if err != nil {
		t.Fatal(err)
	}
	want := g.Seal(nil, zeroNonce[:], plain, aad)
	if got := splitSeal(t, p, tg, dek, aad, plain); !bytes.Equal(got, want) {
		t.Fatalf("aad %d bytes, plaintext %d: split seal\n%x\nwant\n%x", len(aad), len(plain), got, want)
	}
}

// TestSplitSealIsSeal: Encrypt then Tag writes the bytes of
// chacha20poly1305's Seal (zero nonce) for random keys, associated data
// and plaintexts of every length around the 16-byte padding and 64-byte
// block boundaries, and the event sizes of the log (110-byte header), with
// one PreSealer and one Tagger reused throughout, as a preparing
// goroutine and a commit reuse theirs.
func TestSplitSealIsSeal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var p PreSealer
	var tg Tagger
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for _, an := range []int{0, 1, 15, 16, 17, 110, 111, 112, 300} {
		for pn := 0; pn <= 200; pn++ {
			checkSplit(t, &p, &tg, rnd(KeySize), rnd(an), rnd(pn))
		}
	}
	for i := 0; i < 500; i++ {
		checkSplit(t, &p, &tg, rnd(KeySize), rnd(110), rnd(r.IntN(5000)))
	}
	// A body that does not fit the kept buffer of the Tagger.
	checkSplit(t, &p, &tg, rnd(KeySize), rnd(110), rnd(maxKeptMsg+1000))
	checkSplit(t, &p, &tg, rnd(KeySize), rnd(110), rnd(560))
}

// TestSplitSealOpens: a two-step seal opens with OpenWith (the reader's
// path), and a changed byte of the associated data fails it.
func TestSplitSealOpens(t *testing.T) {
	var p PreSealer
	var tg Tagger
	dek := bytes.Repeat([]byte{7}, KeySize)
	aad := []byte("header of the event, prev hash inside")
	plain := []byte("the body of the event")
	sealed := splitSeal(t, &p, &tg, dek, aad, plain)
	got, err := OpenWith(ChaCha20Poly1305, nil, dek, aad, sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open = %q, %v", got, err)
	}
	aad[0] ^= 1
	if _, err := OpenWith(ChaCha20Poly1305, nil, dek, aad, sealed); err == nil {
		t.Fatal("opened under changed associated data")
	}
}

// TestSplitSealBadSizes: a short key or a body without room for the tag
// is an error, not a panic.
func TestSplitSealBadSizes(t *testing.T) {
	var p PreSealer
	var pk PolyKey
	if err := p.Encrypt(&pk, make([]byte, 16), make([]byte, 40)); err == nil {
		t.Fatal("16-byte key accepted")
	}
	if err := p.Encrypt(&pk, make([]byte, KeySize), make([]byte, TagSize-1)); err == nil {
		t.Fatal("body without room for the tag accepted")
	}
}

// FuzzSplitSeal: the two-step seal equals Seal on any key, associated
// data and plaintext.
func FuzzSplitSeal(f *testing.F) {
	f.Add(make([]byte, KeySize), []byte{}, []byte{})
	f.Add(bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, 110), bytes.Repeat([]byte{3}, 560))
	f.Add(bytes.Repeat([]byte{0xff}, KeySize), []byte("a"), bytes.Repeat([]byte{4}, 65))
	f.Add(bytes.Repeat([]byte{9}, KeySize), bytes.Repeat([]byte{5}, 16), bytes.Repeat([]byte{6}, 15))
	var p PreSealer
	var tg Tagger
	f.Fuzz(func(t *testing.T, dek, aad, plain []byte) {
		if len(dek) != KeySize {
			return
		}
		checkSplit(t, &p, &tg, dek, aad, plain)
	})
}
