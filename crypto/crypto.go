package crypto

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
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

// AEAD names the cipher an event body is sealed with. Both take a 32-byte
// key, a 12-byte nonce (here always zero: a DEK seals one plaintext) and
// append a 16-byte tag. Wire values: the log's header version picks one.
type AEAD uint8

const (
	// AESGCM is AES-256-GCM (log formats 1 and 2).
	AESGCM AEAD = iota
	// ChaCha20Poly1305 is RFC 8439's ChaCha20-Poly1305 (log format 3,
	// golang.org/x/crypto/chacha20poly1305). Its key setup is a copy of
	// the key, where AES-GCM's expands the AES key and precomputes the
	// GHASH powers in 1,280 bytes of its own: with a new key for every
	// event that setup cost more than opening a typical body (issue 26).
	ChaCha20Poly1305
)

// String names the cipher.
func (a AEAD) String() string {
	switch a {
	case AESGCM:
		return "AES-256-GCM"
	case ChaCha20Poly1305:
		return "ChaCha20-Poly1305"
	}
	return fmt.Sprintf("AEAD(%d)", uint8(a))
}

// Seal encrypts plaintext under dek (used once) with AES-256-GCM, aad
// authenticated, and appends the result to dst. The output is
// len(plaintext)+TagSize bytes.
func Seal(dst, dek, aad, plaintext []byte) ([]byte, error) {
	return SealWith(AESGCM, dst, dek, aad, plaintext)
}

// SealWith is Seal with the cipher a.
func SealWith(a AEAD, dst, dek, aad, plaintext []byte) ([]byte, error) {
	g, err := newAEAD(a, dek)
	if err != nil {
		return nil, err
	}
	return g.Seal(dst, zeroNonce[:], plaintext, aad), nil
}

// Sealer is SealWith with the key schedule done ahead: NewSealerWith(a,
// dek) then Seal(dst, aad, plaintext) gives SealWith(a, dst, dek, aad,
// plaintext), for a caller that keys a body before it has the AAD. A
// value, so that it can be kept inside per-event state without an
// allocation of its own. (The log seals where it keys, with an Opener's
// one cipher value: Opener.Seal.)
type Sealer struct{ g cipher.AEAD }

// NewSealer returns the AES-256-GCM Sealer of dek (used once).
func NewSealer(dek []byte) (Sealer, error) { return NewSealerWith(AESGCM, dek) }

// NewSealerWith returns the Sealer of dek (used once) under the cipher a.
func NewSealerWith(a AEAD, dek []byte) (Sealer, error) {
	g, err := newAEAD(a, dek)
	if err != nil {
		return Sealer{}, err
	}
	return Sealer{g: g}, nil
}

// Seal is Seal under the Sealer's key.
func (s *Sealer) Seal(dst, aad, plaintext []byte) []byte {
	return s.g.Seal(dst, zeroNonce[:], plaintext, aad)
}

// Open decrypts a body sealed by Seal (AES-256-GCM).
func Open(dst, dek, aad, sealed []byte) ([]byte, error) {
	return OpenWith(AESGCM, dst, dek, aad, sealed)
}

// OpenWith decrypts a body sealed by SealWith(a, ...); ErrWrongKey when
// it does not authenticate.
func OpenWith(a AEAD, dst, dek, aad, sealed []byte) ([]byte, error) {
	g, err := newAEAD(a, dek)
	if err != nil {
		return nil, err
	}
	out, err := g.Open(dst, zeroNonce[:], sealed, aad)
	if err != nil {
		return nil, ErrWrongKey
	}
	return out, nil
}

func newAEAD(a AEAD, key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("new cipher: key is %d bytes, want %d", len(key), KeySize)
	}
	switch a {
	case AESGCM:
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("new cipher: %w", err)
		}
		return cipher.NewGCM(b)
	case ChaCha20Poly1305:
		g, err := chacha20poly1305.New(key)
		if err != nil {
			return nil, fmt.Errorf("new cipher: %w", err)
		}
		return g, nil
	}
	return nil, fmt.Errorf("new cipher: unknown cipher %d", uint8(a))
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

// Opener is OpenWith for a loop that opens many bodies, each under a key
// of its own (a replay worker: one per goroutine, not safe for concurrent
// use), and SealWith for one that seals many (Seal: an appender). For
// ChaCha20-Poly1305 it keeps one cipher value and puts each key into it,
// where OpenWith allocates a new one a body (the key setup is a copy of
// the key, so that allocation was the whole setup: 5% of a replay's CPU,
// issue 26). The zero value is ready to use.
type Opener struct {
	g   cipher.AEAD
	key *[KeySize]byte // g's key, written in place; nil: allocate as OpenWith does
}

// keyed returns the reused ChaCha20-Poly1305 value with dek put in
// place, or nil when a body of a under dek does not use it (the caller
// then does what OpenWith or SealWith does). The caller clears o.key
// once it has sealed or opened.
func (o *Opener) keyed(a AEAD, dek []byte) cipher.AEAD {
	if a != ChaCha20Poly1305 || len(dek) != KeySize {
		return nil
	}
	if o.g == nil {
		if o.g, o.key = reusableChaCha(); o.g == nil {
			return nil
		}
	}
	copy(o.key[:], dek)
	return o.g
}

// Open is OpenWith(a, dst, dek, aad, sealed).
func (o *Opener) Open(a AEAD, dst, dek, aad, sealed []byte) ([]byte, error) {
	g := o.keyed(a, dek)
	if g == nil {
		return OpenWith(a, dst, dek, aad, sealed)
	}
	out, err := g.Open(dst, zeroNonce[:], sealed, aad)
	clear(o.key[:]) // no key left behind between bodies
	if err != nil {
		return nil, ErrWrongKey
	}
	return out, nil
}

// Seal is SealWith(a, dst, dek, aad, plaintext).
func (o *Opener) Seal(a AEAD, dst, dek, aad, plaintext []byte) ([]byte, error) {
	g := o.keyed(a, dek)
	if g == nil {
		return SealWith(a, dst, dek, aad, plaintext)
	}
	out := g.Seal(dst, zeroNonce[:], plaintext, aad)
	clear(o.key[:]) // no key left behind between bodies
	return out, nil
}

// chachaReuse is whether golang.org/x/crypto's ChaCha20-Poly1305 value is
// what reusableChaCha expects, checked once by its known answer.
var chachaReuse = sync.OnceValue(func() bool {
	g, key := chachaKeyOf()
	if g == nil {
		return false
	}
	// The same key put in place must seal as a new cipher of it does.
	var k [KeySize]byte
	for i := range k {
		k[i] = byte(i*7 + 1)
	}
	fresh, err := chacha20poly1305.New(k[:])
	if err != nil {
		return false
	}
	copy(key[:], k[:])
	msg := []byte("crypto: a reused ChaCha20-Poly1305 value must seal as a new one")
	return bytes.Equal(g.Seal(nil, zeroNonce[:], msg, k[:8]), fresh.Seal(nil, zeroNonce[:], msg, k[:8]))
})

// reusableChaCha returns a ChaCha20-Poly1305 cipher and a pointer to the
// key inside it, or nil when the package's value is not the one struct
// of one 32-byte key it has been since its first release (then Opener
// allocates a cipher a body, as OpenWith does). The package has no way
// to change a cipher's key, and its value is nothing but the key.
func reusableChaCha() (cipher.AEAD, *[KeySize]byte) {
	if !chachaReuse() {
		return nil, nil
	}
	return chachaKeyOf()
}

// chachaKeyOf makes a cipher and finds its key by reflection: a pointer
// to a struct whose only field is a [KeySize]byte.
func chachaKeyOf() (cipher.AEAD, *[KeySize]byte) {
	g, err := chacha20poly1305.New(make([]byte, KeySize))
	if err != nil {
		return nil, nil
	}
	v := reflect.ValueOf(g)
	if v.Kind() != reflect.Pointer {
		return nil, nil
	}
	t := v.Type().Elem()
	if t.Kind() != reflect.Struct || t.NumField() != 1 || t.Field(0).Type != reflect.TypeFor[[KeySize]byte]() || t.Size() != KeySize {
		return nil, nil
	}
	return g, (*[KeySize]byte)(v.UnsafePointer())
}
