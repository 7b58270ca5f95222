package timelines

import (
	"encoding/hex"

	"github.com/unlimitedcontext/ucl/log"
)

// Chunk ids are stored in a tagged form since version 5 (key of the
// "chunks" bucket, value of "time" and "parts", the tail of an order
// index value):
//
//	0 ‖ [16]  an id of 32 lowercase hex digits (a log.ID), 17 bytes not 33
//	1 ‖ id    any other id, as is
//
// Byte order is kept within each form (lowercase hex decodes in order),
// and every raw id sorts before every other id, never between two of
// them, so a scan in key order sees the same id order whichever way the
// ids look. An id has exactly one stored form: a hex id under tag 1 is
// refused by idOfKey.
func idKey(id string) []byte {
	if len(id) == 2*log.IDSize && isLowerHex(id) {
		b := make([]byte, 1, 1+log.IDSize)
		b, _ = hex.AppendDecode(b, []byte(id))
		return b
	}
	return append([]byte{1}, id...)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// idOfKey is the chunk id stored as k (idKey); false if k is no stored id.
func idOfKey(k []byte) (string, bool) {
	switch {
	case len(k) == 1+log.IDSize && k[0] == 0:
		return hex.EncodeToString(k[1:]), true
	case len(k) >= 2 && k[0] == 1 && !(len(k) == 1+2*log.IDSize && isLowerHex(string(k[1:]))):
		return string(k[1:]), true
	}
	return "", false
}

// ChunkKey is the key of chunk id in the "chunks" bucket, for tools and
// tests that inspect or damage the file on purpose.
func ChunkKey(id string) []byte { return idKey(id) }
