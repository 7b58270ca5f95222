package crypto

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testScrypt is a cheap cost for tests (the format carries it).
var testScrypt = ScryptParams{LogN: 10, R: 8, P: 1}

// sealedForTest builds a sealed file with a fixed salt and nonce (goldens).
func sealedForTest(t testing.TB, plain, pass []byte, params ScryptParams, salt [sealSaltSize]byte, nonce [sealNonceSize]byte) []byte {
	s, err := deriveSeal(pass, params, salt)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := newAEAD(AESGCM, s.key)
	if err != nil {
		t.Fatal(err)
	}
	h := s.header(nonce)
	return aead.Seal(h, nonce[:], plain, h)
}

func goldenPlain() []byte {
	return []byte("{\n  \"version\": 1,\n  \"current\": 1,\n  \"keys\": {\n    \"1\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"\n  }\n}\n")
}

// TestSealedGolden freezes the sealed key file format: header fields,
// KDF, AEAD and AAD. Regenerate only on a format change:
// UCL_UPDATE_GOLDEN=1 go test ./crypto -run SealedGolden
func TestSealedGolden(t *testing.T) {
	var salt [sealSaltSize]byte
	var nonce [sealNonceSize]byte
	for i := range salt {
		salt[i] = byte(0x10 + i)
	}
	for i := range nonce {
		nonce[i] = byte(0x40 + i)
	}
	got := sealedForTest(t, goldenPlain(), []byte("correct horse"), testScrypt, salt, nonce)
	path := filepath.Join("testdata", "vault.sealed.golden")
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sealed format changed:\n got %x\nwant %x", got, want)
	}
	kr, err := LoadKeyringPassphrase(path, []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	if kr.Current() != 1 || !kr.Sealed() {
		t.Fatalf("golden opened to epoch %d, sealed %v", kr.Current(), kr.Sealed())
	}
	if _, err := LoadKeyring(path); !errors.Is(err, ErrSealed) {
		t.Fatalf("without a passphrase: %v", err)
	}
	if _, err := LoadKeyringPassphrase(path, []byte("wrong horse")); !errors.Is(err, ErrBadPassphrase) {
		t.Fatalf("wrong passphrase: %v", err)
	}
}

// TestSealRoundTrip: a sealed keyring saves sealed (fresh nonce, same
// passphrase), Reload opens its own file without the passphrase, Unseal
// writes plain JSON again, and every changed byte of a sealed file is
// refused.
func TestSealRoundTrip(t *testing.T) {
	kr, err := NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vault.key")
	if err := kr.SealWith(nil, testScrypt); !errors.Is(err, ErrEmptyPassphrase) {
		t.Fatalf("empty passphrase: %v", err)
	}
	if err := kr.SealWith([]byte("pw"), testScrypt); err != nil {
		t.Fatal(err)
	}
	if err := kr.Save(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !IsSealed(b) || bytes.Contains(b, []byte(encodeB64(kr.keys[1]))) {
		t.Fatal("the saved file is not sealed")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	again, err := kr.Reload(path)
	if err != nil || again.Fingerprint() != kr.Fingerprint() || !again.Sealed() {
		t.Fatalf("reload: %v", err)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		p := filepath.Join(t.TempDir(), "flip")
		os.WriteFile(p, c, 0o600)
		if _, err := LoadKeyringPassphrase(p, []byte("pw")); err == nil {
			t.Fatalf("byte %d flipped: opened", i)
		}
	}
	kr.Unseal()
	if err := kr.Save(path); err != nil {
		t.Fatal(err)
	}
	plain, err := LoadKeyring(path)
	if err != nil || plain.Sealed() || plain.Fingerprint() != kr.Fingerprint() {
		t.Fatalf("unsealed: %v", err)
	}
}

// TestSealedHeaderBounds: a header may not ask the KDF for more than
// maxScryptMemory (a crafted file must not exhaust memory).
func TestSealedHeaderBounds(t *testing.T) {
	b := sealedForTest(t, goldenPlain(), []byte("x"), testScrypt, [16]byte{}, [12]byte{})
	b[9] = 24 // 2^24 · 128 · 8 = 16 GiB
	if _, err := decodeSealedHeader(b); !errors.Is(err, ErrBadKeyFile) {
		t.Fatalf("logN 24: %v", err)
	}
}

// FuzzOpenSealed: the sealed file decoder never panics, and never opens
// bytes other than a file sealed under the passphrase.
func FuzzOpenSealed(f *testing.F) {
	good := sealedForTest(f, goldenPlain(), []byte("pw"), testScrypt, [16]byte{1}, [12]byte{2})
	f.Add(good)
	f.Add(good[:sealHeaderSize])
	f.Add([]byte(sealMagic))
	f.Add([]byte{})
	bad := bytes.Clone(good)
	bad[9] = 30
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeSealedHeader(b)
		if err != nil {
			return
		}
		if h.params.LogN > testScrypt.LogN+2 {
			return // a valid but costly header: deriving is slow, not wrong
		}
		plain, _, err := openSealed(b, []byte("pw"), nil)
		if err == nil && !bytes.Equal(b, good) && !bytes.Equal(plain, goldenPlain()) {
			t.Fatalf("opened foreign bytes: %q", plain)
		}
	})
}
