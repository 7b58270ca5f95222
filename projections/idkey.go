package projections

import (
	"encoding/hex"

	"github.com/unlimitedcontext/ucl/log"
)

// IDKey is how a projection stores a chunk id in its bbolt keys and
// values (dedup format 2, timelines format 5, vectors format 4, fts format
// 3, summary format 5):
//
//	0 ‖ [16]  an id of 32 lowercase hex digits (a log.ID, the common case):
//	          17 bytes instead of 33
//	1 ‖ id    any other id, as is
//
// Byte order is kept within each form (lowercase hex decodes in order),
// and every raw id sorts before every other id, so a scan in key order
// sees ids in order within a form; a reader that needs one id order across
// forms sorts what it decoded. An id has exactly one stored form.
func IDKey(id string) []byte {
	if len(id) == 2*log.IDSize && isLowerHex(id) {
		b := make([]byte, 1, 1+log.IDSize)
		b, _ = hex.AppendDecode(b, []byte(id))
		return b
	}
	return append([]byte{1}, id...)
}

// IDOfKey is the chunk id stored as k (IDKey); every id, the empty one
// included, round-trips. A key IDKey cannot produce (no tag, an unknown
// tag, a hex id under tag 1) is damage: ok is false.
func IDOfKey(k []byte) (id string, ok bool) {
	switch {
	case len(k) == 1+log.IDSize && k[0] == 0:
		return hex.EncodeToString(k[1:]), true
	case len(k) >= 1 && k[0] == 1 && !(len(k) == 1+2*log.IDSize && isLowerHex(string(k[1:]))):
		return string(k[1:]), true
	}
	return "", false
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
