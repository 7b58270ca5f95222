package crypto

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of the wire-visible key material. Wire constants: do not change.
const (
	KeySize        = 32 // vault keys and DEKs: AES-256
	WrappedKeySize = 40 // RFC 3394 wrap of a 32-byte key
	TagSize        = 16 // AES-GCM tag appended to every sealed body
)

var (
	// ErrWrongKey is returned when a wrapped key or a sealed body does not
	// authenticate under the key given: the wrong vault key, a shredded epoch,
	// or tampered bytes.
	ErrWrongKey = errors.New("crypto: wrong key or tampered data")
	// ErrUnknownEpoch is returned when a keyring has no key for the epoch an
	// event was wrapped under (it was shredded, or the keyring is another
	// store's).
	ErrUnknownEpoch = errors.New("crypto: unknown vault-key epoch")
	// ErrBadKeyFile is returned when a key file or recovery code cannot be
	// parsed.
	ErrBadKeyFile = errors.New("crypto: malformed key file")
)

// NewKey returns KeySize random bytes.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("read random key: %w", err)
	}
	return k, nil
}

var zeroNonce [12]byte

// Seal encrypts plaintext under dek (used once) with aad authenticated, and
// appends the result to dst. The output is len(plaintext)+TagSize bytes.
func Seal(dst, dek, aad, plaintext []byte) ([]byte, error) {
	g, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	return g.Seal(dst, zeroNonce[:], plaintext, aad), nil
}

// Sealer is Seal with the key schedule done ahead: NewSealer(dek) then
// Seal(dst, aad, plaintext) gives Seal(dst, dek, aad, plaintext). The log
// makes it while preparing an event (on any core) so that the serial part
// of an append, which needs the chain's previous hash for the AAD, does
// not pay the key expansion. A value, so that the log keeps it inside its
// own per-event state (a pointer was one more allocation an event).
type Sealer struct{ g cipher.AEAD }

// NewSealer returns the Sealer of dek (used once).
func NewSealer(dek []byte) (Sealer, error) {
	g, err := newGCM(dek)
	if err != nil {
		return Sealer{}, err
	}
	return Sealer{g: g}, nil
}

// Seal is Seal under the Sealer's key.
func (s *Sealer) Seal(dst, aad, plaintext []byte) []byte {
	return s.g.Seal(dst, zeroNonce[:], plaintext, aad)
}

// Open decrypts a body sealed by Seal.
func Open(dst, dek, aad, sealed []byte) ([]byte, error) {
	g, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	out, err := g.Open(dst, zeroNonce[:], sealed, aad)
	if err != nil {
		return nil, ErrWrongKey
	}
	return out, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("new cipher: key is %d bytes, want %d", len(key), KeySize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("new cipher: %w", err)
	}
	return cipher.NewGCM(b)
}

// defaultIV is RFC 3394's initial value.
var defaultIV = [8]byte{0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6}

// Wrapper wraps and unwraps DEKs under one key-encryption key. It caches the
// AES key schedule, so reuse one per vault-key epoch on hot paths.
type Wrapper struct{ b cipher.Block }

// NewWrapper returns a Wrapper for a 32-byte key-encryption key.
func NewWrapper(kek []byte) (*Wrapper, error) {
	if len(kek) != KeySize {
		return nil, fmt.Errorf("new wrapper: key is %d bytes, want %d", len(kek), KeySize)
	}
	b, err := aes.NewCipher(kek)
	if err != nil {
		return nil, fmt.Errorf("new wrapper: %w", err)
	}
	return &Wrapper{b: b}, nil
}

// Wrap wraps a 32-byte key (RFC 3394 §2.2.1) into dst[:WrappedKeySize].
func (w *Wrapper) Wrap(dst, key []byte) error {
	if len(key) != KeySize || len(dst) < WrappedKeySize {
		return fmt.Errorf("wrap key: bad sizes %d/%d", len(key), len(dst))
	}
	const n = KeySize / 8
	var a [8]byte
	copy(a[:], defaultIV[:])
	r := dst[8:WrappedKeySize]
	copy(r, key)
	var buf [16]byte
	for j := 0; j < 6; j++ {
		for i := 0; i < n; i++ {
			copy(buf[:8], a[:])
			copy(buf[8:], r[i*8:i*8+8])
			w.b.Encrypt(buf[:], buf[:])
			t := uint64(n*j + i + 1)
			binary.BigEndian.PutUint64(a[:], binary.BigEndian.Uint64(buf[:8])^t)
			copy(r[i*8:i*8+8], buf[8:])
		}
	}
	copy(dst[:8], a[:])
	return nil
}

// Unwrap reverses Wrap into dst[:KeySize]; ErrWrongKey if the integrity check
// fails.
func (w *Wrapper) Unwrap(dst, wrapped []byte) error {
	if len(wrapped) != WrappedKeySize || len(dst) < KeySize {
		return fmt.Errorf("unwrap key: bad sizes %d/%d", len(wrapped), len(dst))
	}
	const n = KeySize / 8
	var a [8]byte
	copy(a[:], wrapped[:8])
	r := dst[:KeySize]
	copy(r, wrapped[8:])
	var buf [16]byte
	for j := 5; j >= 0; j-- {
		for i := n - 1; i >= 0; i-- {
			t := uint64(n*j + i + 1)
			binary.BigEndian.PutUint64(buf[:8], binary.BigEndian.Uint64(a[:])^t)
			copy(buf[8:], r[i*8:i*8+8])
			w.b.Decrypt(buf[:], buf[:])
			copy(a[:], buf[:8])
			copy(r[i*8:i*8+8], buf[8:])
		}
	}
	if subtle.ConstantTimeCompare(a[:], defaultIV[:]) != 1 {
		clear(r)
		return ErrWrongKey
	}
	return nil
}
