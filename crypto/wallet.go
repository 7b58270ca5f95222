package crypto

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"

	"github.com/everFinance/goar"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// WalletBits is the RSA modulus size of Arweave wallets.
const WalletBits = 4096

// Wallet is an Arweave wallet: goar's Signer plus the JWK it came from.
type Wallet struct {
	*goar.Signer
	JWK []byte
}

// NewWallet generates a fresh RSA-4096 Arweave wallet (takes a second or two).
func NewWallet() (*Wallet, error) {
	k, err := rsa.GenerateKey(rand.Reader, WalletBits)
	if err != nil {
		return nil, fmt.Errorf("generate wallet: %w", err)
	}
	return ParseWallet(MarshalJWK(k))
}

// MarshalJWK encodes an RSA private key as a complete Arweave JWK: n, e, d
// and the CRT parameters p, q, dp, dq, qi, which Arweave tools (and goar's
// signer) expect.
func MarshalJWK(k *rsa.PrivateKey) []byte {
	k.Precompute()
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	e := big.NewInt(int64(k.E)).Bytes()
	m := map[string]string{
		"kty": "RSA", "e": b64(e), "n": b64(k.N.Bytes()), "d": b64(k.D.Bytes()),
		"p": b64(k.Primes[0].Bytes()), "q": b64(k.Primes[1].Bytes()),
		"dp": b64(k.Precomputed.Dp.Bytes()), "dq": b64(k.Precomputed.Dq.Bytes()), "qi": b64(k.Precomputed.Qinv.Bytes()),
	}
	out, _ := json.Marshal(m)
	return out
}

// ParseWallet reads an Arweave JWK.
func ParseWallet(jwk []byte) (*Wallet, error) {
	s, err := goar.NewSigner(jwk)
	if err != nil {
		return nil, fmt.Errorf("parse wallet: %w: %v", ErrBadKeyFile, err)
	}
	if s.PubKey.N.BitLen() < 2048 {
		return nil, fmt.Errorf("parse wallet: %w: RSA key of %d bits", ErrBadKeyFile, s.PubKey.N.BitLen())
	}
	return &Wallet{Signer: s, JWK: append([]byte(nil), jwk...)}, nil
}

// LoadWallet reads an Arweave JWK file.
func LoadWallet(path string) (*Wallet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read wallet: %w", err)
	}
	w, err := ParseWallet(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// Save writes the JWK to path with mode 0600.
func (w *Wallet) Save(path string) error {
	return fsutil.WriteFileAtomic(path, w.JWK, 0o600)
}

// AddressOf returns the Arweave address of an RSA public key:
// base64url(SHA-256(n)), unpadded.
func AddressOf(pub *rsa.PublicKey) string {
	h := sha256.Sum256(pub.N.Bytes())
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
func decodeB64(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(s)
}

func fingerprint(epoch uint32, k []byte) string {
	h := sha256.New()
	h.Write([]byte("ucl vault key fingerprint v1"))
	h.Write(k)
	return fmt.Sprintf("%d:%x", epoch, h.Sum(nil)[:8])
}
