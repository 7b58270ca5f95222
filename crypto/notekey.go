package crypto

import (
	"bytes"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// NoteKey derives the Ed25519 key that signs a wallet's log checkpoints
// (C2SP signed notes), as note signer and verifier keys named name:
//
//	seed = HMAC-SHA256(key = SHA-256(d), "ucl checkpoint note key v1")
//
// where d is the wallet's RSA private exponent, big-endian. Deriving it
// (rather than storing a second secret) means the wallet alone restores it
// on a new device; the binding to the wallet is shown by publishing the
// verifier key in Arweave transactions that the wallet signs.
func NoteKey(priv *rsa.PrivateKey, name string) (skey, vkey string, err error) {
	if priv == nil || priv.D == nil {
		return "", "", fmt.Errorf("derive note key: %w: no private key", ErrBadKeyFile)
	}
	dk := sha256.Sum256(priv.D.Bytes())
	mac := hmac.New(sha256.New, dk[:])
	mac.Write([]byte("ucl checkpoint note key v1"))
	skey, vkey, err = note.GenerateKey(bytes.NewReader(mac.Sum(nil)), name)
	if err != nil {
		return "", "", fmt.Errorf("derive note key: %w", err)
	}
	return skey, vkey, nil
}
