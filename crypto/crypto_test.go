package crypto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 3394 §4.6: 256 bits of key data with a 256-bit KEK.
func TestKeyWrapRFC3394Vector(t *testing.T) {
	kek := unhex(t, "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
	key := unhex(t, "00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F")
	want := unhex(t, "28C9F404C4B810F4 CBCCB35CFB87F826 3F5786E2D80ED326 CBC7F0E71A99F43B FB988B9B7A02DD21")
	w, err := NewWrapper(kek)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, WrappedKeySize)
	if err := w.Wrap(got, key); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("wrap = %x, want %x", got, want)
	}
	back := make([]byte, KeySize)
	if err := w.Unwrap(back, got); err != nil || !bytes.Equal(back, key) {
		t.Fatalf("unwrap = %x, %v", back, err)
	}
	other, _ := NewWrapper(make([]byte, KeySize))
	if err := other.Unwrap(back, got); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("unwrap under wrong key: %v", err)
	}
	got[3] ^= 1
	if err := w.Unwrap(back, got); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("unwrap of tampered bytes: %v", err)
	}
}

func TestSealOpen(t *testing.T) {
	dek, _ := NewKey()
	ct, err := Seal(nil, dek, []byte("header"), []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ct) != len("secret")+TagSize {
		t.Fatalf("len %d", len(ct))
	}
	pt, err := Open(nil, dek, []byte("header"), ct)
	if err != nil || string(pt) != "secret" {
		t.Fatalf("open: %q %v", pt, err)
	}
	if _, err := Open(nil, dek, []byte("headeR"), ct); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("changed aad: %v", err)
	}
	other, _ := NewKey()
	if _, err := Open(nil, other, []byte("header"), ct); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := Seal(nil, dek[:5], nil, nil); err == nil {
		t.Fatal("short key accepted")
	}
}

func TestKeyringSaveLoadAndRecovery(t *testing.T) {
	kr, err := NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "vault.key")
	if err := kr.Save(p); err != nil {
		t.Fatal(err)
	}
	kr2, err := LoadKeyring(p)
	if err != nil {
		t.Fatal(err)
	}
	if kr2.Fingerprint() != kr.Fingerprint() {
		t.Fatal("fingerprint changed across save/load")
	}
	code := kr.RecoveryCode()
	kr3, err := ParseRecoveryCode(strings.ToLower(code))
	if err != nil {
		t.Fatal(err)
	}
	if kr3.Fingerprint() != kr.Fingerprint() {
		t.Fatal("recovery code does not round-trip")
	}
	// One typo is caught by the checksum.
	bad := []byte(code)
	i := len(recoveryPrefix) + 3
	if bad[i] == 'A' {
		bad[i] = 'B'
	} else {
		bad[i] = 'A'
	}
	if _, err := ParseRecoveryCode(string(bad)); !errors.Is(err, ErrBadKeyFile) {
		t.Fatalf("typo accepted: %v", err)
	}
	for _, in := range []string{"", "UCL1-", "nope", "UCL1-AAAA"} {
		if _, err := ParseRecoveryCode(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// A mistyped recovery code is almost the key: no error may repeat it.
func TestLoadKeyArgNeverEchoesKeyMaterial(t *testing.T) {
	kr, err := NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	code := kr.RecoveryCode()
	typo := []byte(code)
	i := len(typo) / 2
	if typo[i] == 'A' {
		typo[i] = 'B'
	} else {
		typo[i] = 'A'
	}
	for _, arg := range []string{string(typo), strings.ToLower(string(typo)), string(typo)[len(recoveryPrefix):]} {
		_, err := LoadKeyArg(arg)
		if err == nil {
			t.Fatalf("a mistyped code was accepted")
		}
		msg := strings.ToUpper(strings.ReplaceAll(err.Error(), "-", ""))
		bare := strings.ToUpper(strings.ReplaceAll(arg[strings.Index(strings.ToUpper(arg), "UCL1-")+1:], "-", ""))
		for j := 0; j+8 <= len(bare); j++ {
			if strings.Contains(msg, bare[j:j+8]) {
				t.Fatalf("error repeats key material: %v", err)
			}
		}
	}
	got, err := LoadKeyArg(code)
	if err != nil || got.Fingerprint() != kr.Fingerprint() {
		t.Fatalf("good code: %v", err)
	}
}

// Each AEAD opens what it sealed, refuses a changed byte of the body or
// of the AAD, and does not open the other's output: the log's version
// byte must pick the cipher.
func TestSealWithOpenWith(t *testing.T) {
	dek := bytes.Repeat([]byte{3}, KeySize)
	aad := []byte("header")
	for _, a := range []AEAD{AESGCM, ChaCha20Poly1305} {
		sealed, err := SealWith(a, nil, dek, aad, []byte("the body"))
		if err != nil || len(sealed) != len("the body")+TagSize {
			t.Fatalf("%s: seal: %d bytes, %v", a, len(sealed), err)
		}
		s, err := NewSealerWith(a, dek)
		if err != nil {
			t.Fatal(err)
		}
		if again := s.Seal(nil, aad, []byte("the body")); !bytes.Equal(again, sealed) {
			t.Fatalf("%s: Sealer and SealWith differ", a)
		}
		if plain, err := OpenWith(a, nil, dek, aad, sealed); err != nil || string(plain) != "the body" {
			t.Fatalf("%s: open: %q %v", a, plain, err)
		}
		other := AESGCM
		if a == AESGCM {
			other = ChaCha20Poly1305
		}
		if _, err := OpenWith(other, nil, dek, aad, sealed); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%s output opened under %s: %v", a, other, err)
		}
		bad := bytes.Clone(sealed)
		bad[0] ^= 1
		if _, err := OpenWith(a, nil, dek, aad, bad); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%s: changed body: %v", a, err)
		}
		if _, err := OpenWith(a, nil, dek, []byte("Header"), sealed); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%s: changed aad: %v", a, err)
		}
	}
	if _, err := OpenWith(AEAD(9), nil, dek, aad, make([]byte, 20)); err == nil {
		t.Fatal("an unknown cipher opened")
	}
}

// eachKeyedBody calls fn for each cipher with four keys (i = 0..3), each
// with a body of its own, one Opener's sequence of bodies.
func eachKeyedBody(fn func(a AEAD, i int, dek, body []byte)) {
	for _, a := range []AEAD{AESGCM, ChaCha20Poly1305} {
		for i := 0; i < 4; i++ {
			fn(a, i, bytes.Repeat([]byte{byte(i + 1)}, KeySize), bytes.Repeat([]byte{byte('a' + i)}, 100+i))
		}
	}
}

// TestOpenerOpensAsOpenWith: an Opener opening bodies under a new key each
// gives what OpenWith gives (and refuses what it refuses), and for
// ChaCha20-Poly1305 allocates nothing: the cipher value is reused.
func TestOpenerOpensAsOpenWith(t *testing.T) {
	aad := []byte("header")
	var o Opener
	eachKeyedBody(func(a AEAD, i int, dek, body []byte) {
		sealed, err := SealWith(a, nil, dek, aad, body)
		if err != nil {
			t.Fatal(err)
		}
		if plain, err := o.Open(a, nil, dek, aad, sealed); err != nil || !bytes.Equal(plain, body) {
			t.Fatalf("%s key %d: open: %q %v", a, i, plain, err)
		}
		other := bytes.Repeat([]byte{byte(i + 2)}, KeySize)
		if _, err := o.Open(a, nil, other, aad, sealed); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%s key %d: opened under another key: %v", a, i, err)
		}
		bad := bytes.Clone(sealed)
		bad[len(bad)-1] ^= 1
		if _, err := o.Open(a, nil, dek, aad, bad); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%s key %d: changed tag: %v", a, i, err)
		}
		// The key put in place last is not the next body's.
		if plain, err := o.Open(a, nil, dek, aad, sealed); err != nil || !bytes.Equal(plain, body) {
			t.Fatalf("%s key %d: open after a refusal: %q %v", a, i, plain, err)
		}
	})
	if !chachaReuse() {
		t.Fatal("golang.org/x/crypto's ChaCha20-Poly1305 value is not one 32-byte key: Opener allocates a cipher a body")
	}
	dek := bytes.Repeat([]byte{7}, KeySize)
	sealed, _ := SealWith(ChaCha20Poly1305, nil, dek, aad, make([]byte, 512))
	dst := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := o.Open(ChaCha20Poly1305, dst, dek, aad, sealed); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations a ChaCha20-Poly1305 body, want 0", n)
	}
}

// TestOpenerSealsAsSealWith: an Opener's Seal (an appender's loop, one
// cipher value for every key) seals what SealWith does, in place too,
// leaves no key in the value, and allocates nothing for ChaCha20-Poly1305.
func TestOpenerSealsAsSealWith(t *testing.T) {
	aad := []byte("header")
	var o Opener
	eachKeyedBody(func(a AEAD, i int, dek, body []byte) {
		want, err := SealWith(a, nil, dek, aad, body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := o.Seal(a, []byte("x"), dek, aad, body)
		if err != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("%s key %d: sealed %x %v, want x ‖ %x", a, i, got, err, want)
		}
		buf := append(bytes.Clone(body), make([]byte, TagSize)...)[:len(body)]
		if inPlace, err := o.Seal(a, buf[:0], dek, aad, buf); err != nil || !bytes.Equal(inPlace, want) {
			t.Fatalf("%s key %d: sealed in place %x %v, want %x", a, i, inPlace, err, want)
		}
	})
	if o.key == nil || *o.key != [KeySize]byte{} {
		t.Fatal("a key was left in the Opener's cipher value (or it has none)")
	}
	dek := bytes.Repeat([]byte{7}, KeySize)
	body := make([]byte, 512)
	dst := make([]byte, 0, 512+TagSize)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := o.Seal(ChaCha20Poly1305, dst, dek, aad, body); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations a ChaCha20-Poly1305 seal, want 0", n)
	}
}
