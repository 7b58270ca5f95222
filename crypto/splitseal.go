package crypto

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/poly1305"
)

// ChaCha20-Poly1305 sealing in two steps, for a writer whose associated
// data is known late: the log seals each event body with its header as
// associated data, and the header holds the hash of the event before, so
// the seal is on the serial path of an append (log format 3). In RFC 8439
// neither the ciphertext (keystream from block 1 XOR plaintext) nor the
// Poly1305 one-time key (keystream block 0) depends on the associated
// data; only the tag does. PreSealer.Encrypt does the first part ahead
// of the chain (a preparing goroutine, the other core), Tagger.Tag the
// second on the serial path. Together they produce the bytes of
// chacha20poly1305's Seal with the zero nonce (Seal, SealWith), which
// the tests check on random inputs.

// PolyKey is the Poly1305 one-time key of one sealed body: secret, as its
// data key is; cleared by Tag.
type PolyKey [32]byte

// PreSealer encrypts bodies ahead of their tags (one per goroutine, not
// safe for concurrent use). The zero value is ready to use.
type PreSealer struct {
	g   cipher.AEAD
	key *[KeySize]byte // g's key, written in place (see Opener); nil: a cipher a body
}

// Encrypt encrypts body[:n] in place under dek, where n = len(body) -
// TagSize (the caller leaves TagSize bytes of room at the end, which
// Encrypt overwrites), and writes the body's Poly1305 key into pk.
// Tagger.Tag then completes the seal.
func (p *PreSealer) Encrypt(pk *PolyKey, dek, body []byte) error {
	if len(dek) != KeySize || len(body) < TagSize {
		return fmt.Errorf("encrypt body: bad sizes: key %d bytes, body %d", len(dek), len(body))
	}
	n := len(body) - TagSize
	g := p.g
	if g == nil {
		if p.g, p.key = reusableChaCha(); p.g != nil {
			g = p.g
		}
	}
	if p.key != nil {
		copy(p.key[:], dek)
		defer clear(p.key[:]) // no key left behind between bodies
	} else {
		var err error
		if g, err = chacha20poly1305.New(dek); err != nil {
			return fmt.Errorf("encrypt body: %w", err)
		}
	}
	// The whole AEAD without associated data: its ciphertext is the one
	// of the final seal, and the package's assembly makes it faster than
	// the chacha20 package's Go keystream (no assembly on amd64). The
	// tag it leaves in body[n:] is overwritten by Tag.
	g.Seal(body[:0], zeroNonce[:], body[:n], nil)
	// The one-time key: keystream block 0 (RFC 8439 §2.6).
	s, err := chacha20.NewUnauthenticatedCipher(dek, zeroNonce[:])
	if err != nil {
		return fmt.Errorf("encrypt body: %w", err)
	}
	clear(pk[:])
	s.XORKeyStream(pk[:], pk[:])
	return nil
}

// Tagger computes the tags of bodies encrypted by a PreSealer (one per
// goroutine). The zero value is ready to use.
type Tagger struct {
	msg []byte // the Poly1305 input, reused
}

// maxKeptMsg bounds the Poly1305 input a Tagger keeps between bodies.
const maxKeptMsg = 1 << 20

// Tag writes the tag of sealed (ciphertext ‖ TagSize bytes of room, as
// Encrypt left it) under the associated data aad into its last TagSize
// bytes, and clears pk: sealed is then what Seal(dek, aad, plaintext)
// returns.
func (t *Tagger) Tag(pk *PolyKey, aad, sealed []byte) {
	n := len(sealed) - TagSize
	// RFC 8439 §2.8: aad ‖ pad16 ‖ ciphertext ‖ pad16 ‖ le64(len aad) ‖
	// le64(len ciphertext), in one buffer for poly1305.Sum (its MAC type
	// would allocate twice a body).
	m := t.msg[:0]
	m = append(m, aad...)
	m = append(m, make([]byte, pad16(len(aad)))...)
	m = append(m, sealed[:n]...)
	m = append(m, make([]byte, pad16(n))...)
	m = binary.LittleEndian.AppendUint64(m, uint64(len(aad)))
	m = binary.LittleEndian.AppendUint64(m, uint64(n))
	var tag [TagSize]byte
	poly1305.Sum(&tag, m, (*[32]byte)(pk))
	copy(sealed[n:], tag[:])
	clear(pk[:])
	if cap(m) <= maxKeptMsg {
		t.msg = m[:0]
	} else {
		t.msg = nil
	}
}

// pad16 is the number of zero bytes that pad n to a multiple of 16.
func pad16(n int) int { return (16 - n%16) % 16 }
