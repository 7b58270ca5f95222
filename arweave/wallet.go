package arweave

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"

	"github.com/everFinance/goar"
)

// WalletBits is the RSA modulus size of an Arweave wallet.
const WalletBits = 4096

// minWalletBits is the smallest RSA key ParseWallet accepts: smaller keys
// are breakable, and no Arweave tool makes them.
const minWalletBits = 2048

var (
	// ErrBadWallet is returned when a JWK file is not a usable Arweave RSA
	// private key.
	ErrBadWallet = errors.New("arweave: not an Arweave RSA JWK wallet")
	// ErrOwnerMismatch is returned when an owner's public key does not hash
	// to the expected address, or a transaction was signed by another wallet.
	ErrOwnerMismatch = errors.New("arweave: owner does not match address")
)

// Wallet is an Arweave wallet: an RSA key that signs transactions and bundle
// items.
type Wallet struct {
	signer *goar.Signer
}

// jwk is the JSON Web Key layout of an Arweave wallet file.
type jwk struct {
	Kty string `json:"kty"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d,omitempty"`
	P   string `json:"p,omitempty"`
	Q   string `json:"q,omitempty"`
	Dp  string `json:"dp,omitempty"`
	Dq  string `json:"dq,omitempty"`
	Qi  string `json:"qi,omitempty"`
}

var b64 = base64.RawURLEncoding

func b64Int(s string) (*big.Int, error) {
	b, err := b64.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetBytes(b), nil
}

// LoadWallet reads an Arweave JWK wallet file.
func LoadWallet(path string) (*Wallet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read wallet: %w", err)
	}
	w, err := ParseWallet(b)
	if err != nil {
		return nil, fmt.Errorf("load wallet %s: %w", path, err)
	}
	return w, nil
}

// ParseWallet parses an Arweave JWK (RSA private key with n, e, d, p, q).
func ParseWallet(b []byte) (*Wallet, error) {
	var k jwk
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("parse wallet: %w: %v", ErrBadWallet, err)
	}
	if k.Kty != "RSA" || k.N == "" || k.E == "" || k.D == "" || (k.P == "") != (k.Q == "") {
		return nil, fmt.Errorf("parse wallet: %w: need kty RSA with n, e, d (and p, q, or neither)", ErrBadWallet)
	}
	var vals [5]*big.Int
	for i, s := range []string{k.N, k.E, k.D, k.P, k.Q} {
		if s == "" {
			continue
		}
		v, err := b64Int(s)
		if err != nil {
			return nil, fmt.Errorf("parse wallet: %w: %v", ErrBadWallet, err)
		}
		vals[i] = v
	}
	if !vals[1].IsInt64() || vals[1].Int64() < 3 || vals[1].Int64() > 1<<31 {
		return nil, fmt.Errorf("parse wallet: %w: bad exponent", ErrBadWallet)
	}
	if vals[3] == nil {
		// Some JWK writers (gojwk, for one) omit the
		// primes; recover them from n, e, d.
		p, q, err := recoverPrimes(vals[0], int(vals[1].Int64()), vals[2])
		if err != nil {
			return nil, fmt.Errorf("parse wallet: %w: %v", ErrBadWallet, err)
		}
		vals[3], vals[4] = p, q
	}
	key := &rsa.PrivateKey{
		PublicKey: rsa.PublicKey{N: vals[0], E: int(vals[1].Int64())},
		D:         vals[2],
		Primes:    []*big.Int{vals[3], vals[4]},
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("parse wallet: %w: %v", ErrBadWallet, err)
	}
	if n := key.N.BitLen(); n < minWalletBits {
		return nil, fmt.Errorf("parse wallet: %w: RSA key of %d bits, need at least %d", ErrBadWallet, n, minWalletBits)
	}
	key.Precompute()
	return &Wallet{signer: goar.NewSignerByPrivateKey(key)}, nil
}

// recoverPrimes factors n given the RSA exponents e and d (the standard
// method of NIST SP 800-56B Appendix C.2): e·d-1 = 2^t·r with r odd; for a
// base g, some g^(r·2^i) is a non-trivial square root of 1 mod n, and its
// gcd with n is a prime factor. Bases are tried deterministically.
func recoverPrimes(n *big.Int, e int, d *big.Int) (p, q *big.Int, err error) {
	one := big.NewInt(1)
	if n.Sign() <= 0 || d.Sign() <= 0 || n.Bit(0) == 0 || n.BitLen() > 16384 {
		return nil, nil, errors.New("recover primes: bad n or d")
	}
	k := new(big.Int).Mul(d, big.NewInt(int64(e)))
	k.Sub(k, one)
	if k.Sign() <= 0 || k.Bit(0) != 0 {
		return nil, nil, errors.New("recover primes: e·d-1 is not even")
	}
	r, t := new(big.Int).Set(k), 0
	for r.Bit(0) == 0 {
		r.Rsh(r, 1)
		t++
	}
	nm1 := new(big.Int).Sub(n, one)
	two := big.NewInt(2)
	for g := int64(2); g < 200; g++ {
		y := new(big.Int).Exp(big.NewInt(g), r, n)
		if y.Cmp(one) == 0 || y.Cmp(nm1) == 0 {
			continue
		}
		for i := 0; i < t; i++ {
			x := new(big.Int).Exp(y, two, n)
			if x.Cmp(one) == 0 {
				p = new(big.Int).GCD(nil, nil, new(big.Int).Sub(y, one), n)
				q, m := new(big.Int).DivMod(n, p, new(big.Int))
				if p.Cmp(one) > 0 && q.Cmp(one) > 0 && m.Sign() == 0 {
					if p.Cmp(q) < 0 {
						p, q = q, p
					}
					return p, q, nil
				}
				break
			}
			if x.Cmp(nm1) == 0 {
				break
			}
			y = x
		}
	}
	return nil, nil, errors.New("recover primes: n, e, d do not form an RSA key")
}

// GenerateWallet creates a new RSA-4096 wallet and returns it with its JWK
// encoding (to be written with mode 0600).
func GenerateWallet() (*Wallet, []byte, error) {
	return generateWallet(WalletBits)
}

func generateWallet(bits int) (*Wallet, []byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, nil, fmt.Errorf("generate wallet: %w", err)
	}
	key.Precompute()
	w := &Wallet{signer: goar.NewSignerByPrivateKey(key)}
	b, err := w.MarshalJWK()
	if err != nil {
		return nil, nil, err
	}
	return w, b, nil
}

// MarshalJWK returns the wallet as an Arweave JWK (private!).
func (w *Wallet) MarshalJWK() ([]byte, error) {
	k := w.signer.PrvKey
	if len(k.Primes) != 2 {
		return nil, fmt.Errorf("marshal wallet: %w: need two primes", ErrBadWallet)
	}
	enc := func(i *big.Int) string { return b64.EncodeToString(i.Bytes()) }
	j := jwk{
		Kty: "RSA",
		N:   enc(k.N),
		E:   enc(big.NewInt(int64(k.E))),
		D:   enc(k.D),
		P:   enc(k.Primes[0]),
		Q:   enc(k.Primes[1]),
		Dp:  enc(k.Precomputed.Dp),
		Dq:  enc(k.Precomputed.Dq),
		Qi:  enc(k.Precomputed.Qinv),
	}
	return json.Marshal(j)
}

// Address returns the wallet's Arweave address: base64url(SHA-256(n)).
func (w *Wallet) Address() string { return w.signer.Address }

// Owner returns the base64url RSA modulus (the "owner" field of a tx).
func (w *Wallet) Owner() string { return w.signer.Owner() }

// PublicKey returns the wallet's RSA public key.
func (w *Wallet) PublicKey() *rsa.PublicKey { return w.signer.PubKey }

// PrivateKey returns the wallet's RSA private key (for share-key unwrapping).
func (w *Wallet) PrivateKey() *rsa.PrivateKey { return w.signer.PrvKey }

// AddressOf returns the address of an owner (base64url modulus).
func AddressOf(owner string) (string, error) {
	n, err := b64.DecodeString(owner)
	if err != nil || len(n) == 0 {
		return "", fmt.Errorf("address of owner: %w: owner is not base64url", ErrOwnerMismatch)
	}
	sum := sha256.Sum256(n)
	return b64.EncodeToString(sum[:]), nil
}

// VerifyOwner checks that owner (the base64url RSA modulus n) belongs to
// address: base64url(SHA-256(n)) == address.
func VerifyOwner(owner, address string) error {
	got, err := AddressOf(owner)
	if err != nil {
		return err
	}
	if got != address {
		return fmt.Errorf("verify owner: %w: key hashes to %s, want %s", ErrOwnerMismatch, got, address)
	}
	return nil
}

// PublicKeyFromOwner returns the RSA public key (e = 65537, Arweave's fixed
// exponent) of owner after checking it matches address.
func PublicKeyFromOwner(owner, address string) (*rsa.PublicKey, error) {
	if err := VerifyOwner(owner, address); err != nil {
		return nil, err
	}
	n, _ := b64.DecodeString(owner)
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537}, nil
}

// PublicKeyInfo is a wallet's public key checked against its address.
type PublicKeyInfo struct {
	Address string
	Owner   string // base64url modulus
	Key     *rsa.PublicKey
}
