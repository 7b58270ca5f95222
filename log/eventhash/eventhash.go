// Package eventhash is the one definition of an event's hash, the link of
// ucl's hash chain (package log's doc has the formats). It stands apart
// from package log so that the mirror, which carries events without
// interpreting them, hashes them by the same rule.
//
// Formats 1 to 3 hash the event's bytes, header ‖ body:
//
//	hash = SHA-256(header ‖ body)
//
// From format 4 the body is hashed on its own and the header with that
// digest:
//
//	hash = SHA-256(header ‖ SHA-256(body))
//
// The header (HeaderSize bytes) holds the event's seq and the previous
// event's hash, which are known only when the event takes its place in
// the chain; the body's digest is not. So an appender seals and hashes
// bodies on all cores, and only the last step, three SHA-256 blocks, runs
// in chain order (format 3 hashed the whole event there, a fifth of a
// batched append's CPU).
package eventhash

import "crypto/sha256"

const (
	// HeaderSize is the size of an event's header (package log's HeaderSize).
	HeaderSize = 110
	// SplitVersion is the first format hashed as SHA-256(header ‖
	// SHA-256(body)); the format is the header's first byte.
	SplitVersion = 4
)

// Sum returns the hash of the event whose bytes (header ‖ body) are raw.
// raw shorter than a header is hashed whole (a reader rejects it anyway).
func Sum(raw []byte) [sha256.Size]byte {
	if len(raw) >= HeaderSize && raw[0] >= SplitVersion {
		body := sha256.Sum256(raw[HeaderSize:])
		return Finish(raw[:HeaderSize], &body)
	}
	return sha256.Sum256(raw)
}

// Finish returns the hash of a format-4 event from its header and the
// SHA-256 of its body.
func Finish(header []byte, body *[sha256.Size]byte) [sha256.Size]byte {
	var b [HeaderSize + sha256.Size]byte
	copy(b[:HeaderSize], header)
	copy(b[HeaderSize:], body[:])
	return sha256.Sum256(b[:])
}
