package crypto

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// testBinding is the binding of the golden share key.
var testBinding = ShareBinding{Grantor: "IKgWeq8o9QQeWoN-DfDpvzMseVdXK-SmaJ1vXOsnolw",
	LogID: [16]byte{0x55, 0x47, 0xe8, 0xec, 0xec, 0x7d, 0xb1, 0xf0, 0x6c, 0x93, 0x02, 0x21, 0x91, 0x57, 0xd0, 0x42},
	Grant: [16]byte{0xfc, 0x14, 0x99, 0x6b, 0x89, 0xc4, 0xa9, 0x53, 0x77, 0xc0, 0x2d, 0xb5, 0x51, 0x82, 0x52, 0x60}}

// testShareRSA is a fixed RSA key (testdata) for the golden: OAEP is
// randomised, so the golden is a wrapped key that must keep unwrapping.
func testShareRSA(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	path := "testdata/share-test-key.pem"
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if _, err := os.Stat(path); err != nil {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				t.Fatal(err)
			}
			b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block in " + path)
	}
	k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The bound share key format (v2) is frozen: its label, and a key wrapped
// under it, keep their meaning. Regenerate only with UCL_UPDATE_GOLDEN=1.
func TestBoundShareKeyGolden(t *testing.T) {
	priv := testShareRSA(t)
	key := make([]byte, KeySize)
	for i := range key {
		key[i] = byte(i)
	}
	path := "testdata/share-key-v2.golden"
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		w, err := WrapBoundShareKey(&priv.PublicKey, key, testBinding)
		if err != nil {
			t.Fatal(err)
		}
		g := fmt.Sprintf("label %s\nwrapped %s\n", hex.EncodeToString(testBinding.Label()), hex.EncodeToString(w))
		if err := os.WriteFile(path, []byte(g), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var label, wrapped string
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(ln, " ")
		switch k {
		case "label":
			label = v
		case "wrapped":
			wrapped = v
		}
	}
	if got := hex.EncodeToString(testBinding.Label()); got != label {
		t.Fatalf("label changed:\n got %s\nwant %s", got, label)
	}
	w, err := hex.DecodeString(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnwrapBoundShareKey(priv, w, testBinding)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("golden wrapped key: %x, %v", got, err)
	}
}

// Issue 29.5: a share key bound to grantor A, log L, grant G unwraps only
// under that binding: a copy re-signed by wallet C (the grantee checks
// against C), moved to another log or grant, does not. A v1 key (bound to
// nothing) is refused with ErrUnboundShareKey.
func TestBoundShareKeyRefusesAnotherGrantor(t *testing.T) {
	priv := testShareRSA(t)
	key := make([]byte, KeySize)
	rand.Read(key)
	w, err := WrapBoundShareKey(&priv.PublicKey, key, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := UnwrapBoundShareKey(priv, w, testBinding); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("own binding: %v", err)
	}
	other := testBinding
	other.Grantor = "ww7mp66g5CQollh-Hr9AbaLdKEFLoWW0mxutZv_h3W8"
	lg := testBinding
	lg.LogID[0] ^= 1
	grant := testBinding
	grant.Grant[15] ^= 1
	for name, b := range map[string]ShareBinding{"grantor": other, "log": lg, "grant": grant} {
		if _, err := UnwrapBoundShareKey(priv, w, b); !errors.Is(err, ErrNotForThisWallet) || !strings.Contains(err.Error(), "re-signed") {
			t.Fatalf("another %s: %v", name, err)
		}
	}
	v1, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, &priv.PublicKey, key, shareLabel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnwrapBoundShareKey(priv, v1, testBinding); !errors.Is(err, ErrUnboundShareKey) {
		t.Fatalf("v1 key: %v", err)
	}
}
