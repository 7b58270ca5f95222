package crypto

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"

	"golang.org/x/crypto/scrypt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

var (
	// ErrSealed is returned by LoadKeyring when the key file is sealed
	// with a passphrase and none was given.
	ErrSealed = errors.New("crypto: the vault key is sealed with a passphrase")
	// ErrBadPassphrase is returned when a sealed key file does not open
	// with the passphrase given (or its bytes were changed: the two cannot
	// be told apart, by design of the AEAD).
	ErrBadPassphrase = errors.New("crypto: wrong passphrase for the sealed vault key")
	// ErrEmptyPassphrase is returned when sealing with an empty passphrase.
	ErrEmptyPassphrase = errors.New("crypto: empty passphrase")
)

// Sealed key file format (see the package doc).
const (
	sealMagic      = "UCLSEAL\x01" // the last byte is the format version
	sealKDFScrypt  = 1
	sealSaltSize   = 16
	sealNonceSize  = 12
	sealHeaderSize = 8 + 1 + 1 + 1 + 1 + sealSaltSize + sealNonceSize // 40
	// maxSealedPlain bounds the sealed plaintext (a key file of a few
	// epochs is a few hundred bytes).
	maxSealedPlain = 1 << 20
	// maxScryptMemory bounds what a header may ask the KDF to use
	// (128·r·2^logN bytes), so a crafted file cannot exhaust memory.
	maxScryptMemory = 256 << 20
)

// ScryptParams are the cost parameters of the scrypt KDF that derives the
// sealing key from a passphrase.
type ScryptParams struct {
	LogN uint8 // N = 2^LogN
	R, P uint8
}

// DefaultScrypt is the cost of a new seal: N = 2^15, r = 8, p = 1, the
// parameters golang.org/x/crypto/scrypt recommends for interactive use
// (32 MiB and about 0.1 s per open on this machine: every command that
// opens a sealed store pays it once).
var DefaultScrypt = ScryptParams{LogN: 15, R: 8, P: 1}

func (p ScryptParams) check() error {
	if p.LogN < 1 || p.LogN > 30 || p.R == 0 || p.P == 0 || p.P > 16 || 128*uint64(p.R)<<p.LogN > maxScryptMemory {
		return fmt.Errorf("%w: scrypt parameters logN=%d r=%d p=%d out of range", ErrBadKeyFile, p.LogN, p.R, p.P)
	}
	return nil
}

// seal is what a keyring loaded from (or sealed to) a sealed file keeps:
// the derived key and the header fields it came from, so that Save writes
// the file sealed again (fresh nonce, same passphrase) without asking for
// the passphrase a second time.
type seal struct {
	params ScryptParams
	salt   [sealSaltSize]byte
	key    []byte // scrypt(passphrase, salt), 32 bytes
}

func deriveSeal(pass []byte, params ScryptParams, salt [sealSaltSize]byte) (*seal, error) {
	if err := params.check(); err != nil {
		return nil, err
	}
	k, err := scrypt.Key(pass, salt[:], 1<<params.LogN, int(params.R), int(params.P), KeySize)
	if err != nil {
		return nil, fmt.Errorf("derive sealing key: %w", err)
	}
	return &seal{params: params, salt: salt, key: k}, nil
}

func (s *seal) header(nonce [sealNonceSize]byte) []byte {
	h := make([]byte, 0, sealHeaderSize)
	h = append(h, sealMagic...)
	h = append(h, sealKDFScrypt, s.params.LogN, s.params.R, s.params.P)
	h = append(h, s.salt[:]...)
	return append(h, nonce[:]...)
}

// sealBytes seals plain (a key file) under s with a fresh nonce.
func (s *seal) sealBytes(plain []byte) ([]byte, error) {
	var nonce [sealNonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	aead, err := newAEAD(AESGCM, s.key)
	if err != nil {
		return nil, err
	}
	h := s.header(nonce)
	return aead.Seal(h, nonce[:], plain, h), nil
}

// IsSealed reports whether b is a sealed key file (by its magic).
func IsSealed(b []byte) bool { return bytes.HasPrefix(b, []byte(sealMagic[:7])) }

// sealedHeader is a decoded header.
type sealedHeader struct {
	params ScryptParams
	salt   [sealSaltSize]byte
	nonce  [sealNonceSize]byte
}

// decodeSealedHeader checks and decodes the header of a sealed file.
func decodeSealedHeader(b []byte) (sealedHeader, error) {
	var h sealedHeader
	if len(b) < sealHeaderSize+16 {
		return h, fmt.Errorf("%w: sealed key file of %d bytes is too short", ErrBadKeyFile, len(b))
	}
	if string(b[:7]) != sealMagic[:7] {
		return h, fmt.Errorf("%w: not a sealed key file", ErrBadKeyFile)
	}
	if b[7] != sealMagic[7] {
		return h, fmt.Errorf("%w: sealed key file version %d is not supported by this build", ErrBadKeyFile, b[7])
	}
	if b[8] != sealKDFScrypt {
		return h, fmt.Errorf("%w: unknown key derivation %d", ErrBadKeyFile, b[8])
	}
	if len(b)-sealHeaderSize-16 > maxSealedPlain {
		return h, fmt.Errorf("%w: sealed key file of %d bytes is too large", ErrBadKeyFile, len(b))
	}
	h.params = ScryptParams{LogN: b[9], R: b[10], P: b[11]}
	if err := h.params.check(); err != nil {
		return h, err
	}
	copy(h.salt[:], b[12:12+sealSaltSize])
	copy(h.nonce[:], b[12+sealSaltSize:sealHeaderSize])
	return h, nil
}

// openSealed decodes a sealed file with a passphrase (or, when pass is nil,
// with the derived key of like, a seal of the same salt and parameters).
func openSealed(b, pass []byte, like *seal) ([]byte, *seal, error) {
	h, err := decodeSealedHeader(b)
	if err != nil {
		return nil, nil, err
	}
	s := like
	if s == nil || s.salt != h.salt || s.params != h.params {
		if pass == nil {
			return nil, nil, ErrSealed
		}
		if s, err = deriveSeal(pass, h.params, h.salt); err != nil {
			return nil, nil, err
		}
	}
	aead, err := newAEAD(AESGCM, s.key)
	if err != nil {
		return nil, nil, err
	}
	plain, err := aead.Open(nil, h.nonce[:], b[sealHeaderSize:], b[:sealHeaderSize])
	if err != nil {
		return nil, nil, ErrBadPassphrase
	}
	return plain, s, nil
}

// Sealed reports whether the keyring was loaded from, or sealed to, a
// sealed key file (its Save writes the file sealed).
func (kr *Keyring) Sealed() bool {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return kr.seal != nil
}

// SealWith makes the keyring's Save write the key file sealed under
// passphrase (a fresh salt, params' cost); an empty passphrase is
// ErrEmptyPassphrase. Unseal undoes it.
func (kr *Keyring) SealWith(passphrase []byte, params ScryptParams) error {
	if len(passphrase) == 0 {
		return ErrEmptyPassphrase
	}
	var salt [sealSaltSize]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return err
	}
	s, err := deriveSeal(passphrase, params, salt)
	if err != nil {
		return err
	}
	kr.mu.Lock()
	kr.seal = s
	kr.mu.Unlock()
	return nil
}

// Unseal makes the keyring's Save write the key file in plain JSON again.
func (kr *Keyring) Unseal() {
	kr.mu.Lock()
	kr.seal = nil
	kr.mu.Unlock()
}

// LoadKeyringPassphrase reads a key file like LoadKeyring, opening a sealed
// one with passphrase (ErrBadPassphrase when it does not open). The
// keyring remembers the seal: its Save writes the file sealed again.
func LoadKeyringPassphrase(path string, passphrase []byte) (*Keyring, error) {
	return loadKeyring(path, passphrase, nil)
}

// Reload reads the key file at path again, opening it with the seal kr
// was loaded with when the file is sealed under the same salt (a file kr
// itself saved), else ErrSealed.
func (kr *Keyring) Reload(path string) (*Keyring, error) {
	kr.mu.Lock()
	s := kr.seal
	kr.mu.Unlock()
	return loadKeyring(path, nil, s)
}

func loadKeyring(path string, pass []byte, like *seal) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read vault key: %w", err)
	}
	if !IsSealed(b) {
		return parseKeyFile(path, b)
	}
	plain, s, err := openSealed(b, pass, like)
	if err != nil {
		return nil, fmt.Errorf("open vault key %s: %w", path, err)
	}
	if IsSealed(plain) {
		return nil, fmt.Errorf("parse vault key %s: %w: sealed twice", path, ErrBadKeyFile)
	}
	kr, err := parseKeyFile(path, plain)
	if err != nil {
		return nil, err
	}
	kr.seal = s
	return kr, nil
}

// writeSealed seals plain under s and writes it atomically (mode 0600).
func writeSealed(path string, s *seal, plain []byte) error {
	b, err := s.sealBytes(plain)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, b, 0o600)
}
