package arweave

import (
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
)

func TestWalletRoundTripAndOwner(t *testing.T) {
	w := testWallet(t, "wallet-a.json")
	b, err := w.MarshalJWK()
	if err != nil {
		t.Fatal(err)
	}
	w2, err := ParseWallet(b)
	if err != nil {
		t.Fatal(err)
	}
	if w2.Address() != w.Address() || len(w.Address()) != 43 || w.PublicKey().N.BitLen() != WalletBits {
		t.Fatalf("address %q vs %q, %d bits", w2.Address(), w.Address(), w.PublicKey().N.BitLen())
	}
	if err := VerifyOwner(w.Owner(), w.Address()); err != nil {
		t.Fatal(err)
	}
	other := testWallet(t, "wallet-b.json")
	if err := VerifyOwner(other.Owner(), w.Address()); !errors.Is(err, ErrOwnerMismatch) {
		t.Fatalf("other key accepted for address: %v", err)
	}
	if _, err := PublicKeyFromOwner("!!", w.Address()); !errors.Is(err, ErrOwnerMismatch) {
		t.Fatalf("garbage owner: %v", err)
	}
	pk, err := PublicKeyFromOwner(w.Owner(), w.Address())
	if err != nil || pk.N.Cmp(w.PublicKey().N) != 0 || pk.E != 65537 {
		t.Fatalf("public key from owner: %v", err)
	}
}

// The JWK a store writes is complete (the CRT parameters too), as Arweave
// tools expect, and a small RSA key is refused.
func TestWalletJWKCompleteAndSmallKeyRefused(t *testing.T) {
	b, err := testWallet(t, "wallet-a.json").MarshalJWK()
	if err != nil {
		t.Fatal(err)
	}
	var jwk map[string]string
	if err := json.Unmarshal(b, &jwk); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kty", "n", "e", "d", "p", "q", "dp", "dq", "qi"} {
		if jwk[f] == "" {
			t.Fatalf("JWK lacks %q", f)
		}
	}
	_, small, err := generateWallet(1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseWallet(small); !errors.Is(err, ErrBadWallet) {
		t.Fatalf("1024-bit key: err = %v, want ErrBadWallet", err)
	}
}

func TestParseWalletRejects(t *testing.T) {
	good, err := os.ReadFile("testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, jwk string }{
		{"not json", "nope"},
		{"empty", "{}"},
		{"public only", `{"kty":"RSA","n":"AQAB","e":"AQAB"}`},
		{"ec", `{"kty":"EC","n":"AQAB","e":"AQAB","d":"AQAB","p":"AQAB","q":"AQAB"}`},
		{"wrong primes", strings.Replace(string(good), `"p":"`, `"p":"AB`, 1)},
		{"one prime", string(dropJWK(t, good, "p"))},
		{"no primes, wrong d", strings.Replace(string(dropJWK(t, good, "p", "q")), `"d":"`, `"d":"AB`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseWallet([]byte(tc.jwk)); !errors.Is(err, ErrBadWallet) {
				t.Fatalf("err = %v, want ErrBadWallet", err)
			}
		})
	}
}

// dropJWK removes fields from a JWK.
func dropJWK(t *testing.T, jwk []byte, names ...string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(jwk, &m); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		delete(m, n)
	}
	b, _ := json.Marshal(m)
	return b
}

// A JWK with only n, e, d (as gojwk writes them) parses to the same key:
// the primes are recovered.
func TestParseWalletWithoutPrimes(t *testing.T) {
	for _, name := range []string{"wallet-a.json", "wallet-b.json"} {
		good, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		full, err := ParseWallet(good)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ParseWallet(dropJWK(t, good, "p", "q", "dp", "dq", "qi"))
		if err != nil {
			t.Fatalf("%s without primes: %v", name, err)
		}
		if w.Address() != full.Address() || w.PrivateKey().D.Cmp(full.PrivateKey().D) != 0 {
			t.Fatalf("%s: recovered key differs", name)
		}
		ps := w.PrivateKey().Primes
		if len(ps) != 2 || new(big.Int).Mul(ps[0], ps[1]).Cmp(w.PublicKey().N) != 0 {
			t.Fatalf("%s: recovered primes do not multiply to n", name)
		}
	}
}

func FuzzParseWallet(f *testing.F) {
	if b, err := os.ReadFile("testdata/wallet-b.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"kty":"RSA","n":"AQAB","e":"AQAB","d":"AQAB","p":"Aw","q":"BQ"}`))
	f.Add([]byte(`{"kty":"RSA","e":"//////////8"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseWallet(b)
		if err != nil {
			if !errors.Is(err, ErrBadWallet) {
				t.Fatalf("error %v is not ErrBadWallet", err)
			}
			return
		}
		if VerifyOwner(w.Owner(), w.Address()) != nil {
			t.Fatal("parsed wallet's owner does not match its address")
		}
	})
}
