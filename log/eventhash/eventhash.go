// Package eventhash is the one definition of an event's hash, the link of
// ucl's hash chain (package log's doc has the formats). It stands apart
// from package log so that the mirror, which carries events without
// interpreting them, hashes them by the same rule.
//
// Formats 1 to 3 hash the event's bytes, header ‖ body:
//
//	hash = SHA-256(header ‖ body)
//
// From format 4 the body comes first:
//
//	hash = SHA-256(body ‖ header)
//
// The header (HeaderSize bytes) holds the event's seq and the previous
// event's hash, which are known only when the event takes its place in
// the chain; the body is not. So an appender seals and hashes a body on
// any core and keeps the SHA-256 state after it (State); only the header
// and the body's last partial block, two or three SHA-256 blocks, are
// hashed in chain order (format 3 hashed the whole event there, a fifth
// of a batched append's CPU). A reader hashes as many blocks as before.
package eventhash

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"sync"
)

const (
	// HeaderSize is the size of an event's header (package log's HeaderSize).
	HeaderSize = 110
	// SplitVersion is the first format hashed as SHA-256(body ‖ header);
	// the format is the header's first byte.
	SplitVersion = 4
)

// Sum returns the hash of the event whose bytes (header ‖ body) are raw.
// raw shorter than a header is hashed whole (a reader rejects it anyway).
func Sum(raw []byte) [sha256.Size]byte {
	if len(raw) < HeaderSize || raw[0] < SplitVersion {
		return sha256.Sum256(raw)
	}
	h := hashers.Get().(*Hasher)
	h.reset()
	h.d.Write(raw[HeaderSize:])
	h.d.Write(raw[:HeaderSize])
	out := h.sum()
	hashers.Put(h)
	return out
}

// hashers are Sum's (one allocation a digest, not one an event).
var hashers = sync.Pool{New: func() any { return new(Hasher) }}

// stateSize is the size of a SHA-256 state as crypto/sha256 marshals it.
const stateSize = 108

// State is the SHA-256 state of a format-4 event's hash after its body.
type State struct {
	b [stateSize]byte
	n int
}

// Hasher hashes format-4 events in two steps, Body then Finish, with one
// reused digest; one goroutine uses a Hasher at a time.
type Hasher struct {
	d   hash.Hash
	out []byte // the sum, appended here: a slice passed to the digest escapes
}

func (h *Hasher) reset() {
	if h.d == nil {
		h.d = sha256.New()
		h.out = make([]byte, 0, sha256.Size)
	}
	h.d.Reset()
}

func (h *Hasher) sum() (out [sha256.Size]byte) {
	h.out = h.d.Sum(h.out[:0])
	copy(out[:], h.out)
	return out
}

// Body hashes the event body body into st.
func (h *Hasher) Body(body []byte, st *State) {
	h.reset()
	h.d.Write(body)
	b, err := h.d.(encoding.BinaryAppender).AppendBinary(st.b[:0])
	if err != nil || len(b) > stateSize {
		// crypto/sha256's state is stateSize bytes; another is a bug.
		panic(fmt.Sprintf("eventhash: SHA-256 state of %d bytes: %v", len(b), err))
	}
	st.n = len(b)
}

// Finish returns the hash of the event whose body st holds and whose
// header is header.
func (h *Hasher) Finish(st *State, header []byte) [sha256.Size]byte {
	h.reset()
	if err := h.d.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.b[:st.n]); err != nil {
		panic(fmt.Sprintf("eventhash: SHA-256 state: %v", err)) // made by Body: a bug
	}
	h.d.Write(header)
	return h.sum()
}
