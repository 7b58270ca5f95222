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

// shareLabel is the RSA-OAEP label of v1 share keys (grants made before
// they were bound to their grantor): a key wrapped for another purpose
// under the same RSA key does not unwrap as a share key. Only read now, to
// recognise and refuse such grants (ErrUnboundShareKey).
var shareLabel = []byte("ucl share key v1")

// boundLabelPrefix starts the RSA-OAEP label of a bound (v2) share key
// (see ShareBinding; do not change).
const boundLabelPrefix = "ucl share key v2\x00"

// ErrUnboundShareKey is returned by UnwrapBoundShareKey when the share key
// unwraps only as a v1 key, bound to no grantor: a grant made before
// grants were bound, which a third wallet could re-sign as its own.
var ErrUnboundShareKey = errors.New("crypto: share key of a grant not bound to its grantor (made by an older ucl)")

// ShareBinding is what a v2 share key is bound to: the grantor's wallet
// address, the grantor's log id and the grant's event id. They are the
// RSA-OAEP label of the wrapped key, so the key unwraps only when the
// grantee names the same three, as it verified them (the owner of the
// signed disclosure and segments, their log id, the disclosed grant id):
// a copy of a grant re-signed by another wallet, or moved to another log
// or grant, does not unwrap, and without the share key nothing of the
// grant decrypts.
type ShareBinding struct {
	Grantor string
	LogID   [16]byte
	Grant   [16]byte
}

// Label returns the RSA-OAEP label (do not change):
//
//	"ucl share key v2" 0x00 ‖ grantor address ‖ 0x00 ‖ log id [16] ‖ grant id [16]
func (b ShareBinding) Label() []byte {
	l := append([]byte(boundLabelPrefix), b.Grantor...)
	l = append(l, 0)
	l = append(l, b.LogID[:]...)
	return append(l, b.Grant[:]...)
}

// WrapBoundShareKey encrypts a share key to a grantee's RSA public key
// with RSA-OAEP-SHA256, labelled with b.
func WrapBoundShareKey(pub *rsa.PublicKey, key []byte, b ShareBinding) ([]byte, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("wrap share key: key is %d bytes, want %d", len(key), KeySize)
	}
	ct, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, key, b.Label())
	if err != nil {
		return nil, fmt.Errorf("wrap share key: %w", err)
	}
	return ct, nil
}

// UnwrapBoundShareKey decrypts a share key bound to b with the grantee's
// wallet key. A key bound to anything else fails with ErrNotForThisWallet
// (the message says it may be a re-signed copy); a v1 key with
// ErrUnboundShareKey.
func UnwrapBoundShareKey(priv *rsa.PrivateKey, wrapped []byte, b ShareBinding) ([]byte, error) {
	key, err := rsa.DecryptOAEP(sha256.New(), nil, priv, wrapped, b.Label())
	if err == nil && len(key) == KeySize {
		return key, nil
	}
	if old, err := UnwrapShareKey(priv, wrapped); err == nil {
		clear(old)
		return nil, ErrUnboundShareKey
	}
	return nil, fmt.Errorf("%w, or it is bound to another grantor, log or grant (a copy re-signed by another wallet)", ErrNotForThisWallet)
}

// WrapShareKey encrypts a share key to a grantee's RSA public key with
// RSA-OAEP-SHA256 (one block: 512 bytes for an RSA-4096 wallet), as a v1
// key bound to no grantor. New grants use WrapBoundShareKey; this is kept
// for tests that make old-format grants.
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

// UnwrapShareKey decrypts a v1 share key with the grantee's wallet key.
func UnwrapShareKey(priv *rsa.PrivateKey, wrapped []byte) ([]byte, error) {
	key, err := rsa.DecryptOAEP(sha256.New(), nil, priv, wrapped, shareLabel)
	if err != nil || len(key) != KeySize {
		return nil, ErrNotForThisWallet
	}
	return key, nil
}
