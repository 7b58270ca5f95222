package crypto

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrNotForThisWallet is returned when a share key does not unwrap under a
// wallet's RSA key: the grant is addressed to another wallet, or its bytes
// were altered.
var ErrNotForThisWallet = errors.New("crypto: share key is not for this wallet")

// shareLabel is the RSA-OAEP label of share keys: a key wrapped for another
// purpose under the same RSA key does not unwrap as a share key.
var shareLabel = []byte("ucl share key v1")

// WrapShareKey encrypts a share key to a grantee's RSA public key with
// RSA-OAEP-SHA256 (one block: 512 bytes for an RSA-4096 wallet).
func WrapShareKey(pub *rsa.PublicKey, key []byte) ([]byte, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("wrap share key: key is %d bytes, want %d", len(key), KeySize)
	}
	ct, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, key, shareLabel)
	if err != nil {
		return nil, fmt.Errorf("wrap share key: %w", err)
	}
	return ct, nil
}

// UnwrapShareKey decrypts a share key with the grantee's wallet key.
func UnwrapShareKey(priv *rsa.PrivateKey, wrapped []byte) ([]byte, error) {
	key, err := rsa.DecryptOAEP(sha256.New(), nil, priv, wrapped, shareLabel)
	if err != nil || len(key) != KeySize {
		return nil, ErrNotForThisWallet
	}
	return key, nil
}
