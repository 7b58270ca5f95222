package projstd

import (
	"encoding/hex"

	"github.com/unlimitedcontext/ucl/log"
)

// vecKey is the key of chunk id in the "chunks" and "vecs" buckets
// (format 4): a chunk id in its usual form, 32 lowercase hex digits, is
// stored as tag 0 and its 16 bytes (half the key bytes, which matter at
// one key per chunk in two buckets); any other id as tag 1 and the id
// itself, so nothing is lost. Within each tag the keys sort as the ids
// do; across tags they do not, so a reader that needs id order sorts
// what it decoded (see Apply's graph start).
func vecKey(id string) []byte {
	if len(id) == 2*len(log.ID{}) && isLowerHexID(id) {
		b := make([]byte, 1, 1+len(id)/2)
		b, _ = hex.AppendDecode(b, []byte(id))
		return b
	}
	return append([]byte{1}, id...)
}

func isLowerHexID(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// idOfVecKey is the chunk id stored as k (vecKey). A key vecKey cannot
// produce (no tag, an unknown tag, a hex id under tag 1) is damage: ok is
// false.
func idOfVecKey(k []byte) (string, bool) {
	switch {
	case len(k) == 1+len(log.ID{}) && k[0] == 0:
		return hex.EncodeToString(k[1:]), true
	case len(k) >= 1 && k[0] == 1 && !(len(k) == 1+2*len(log.ID{}) && isLowerHexID(string(k[1:]))):
		return string(k[1:]), true
	}
	return "", false
}
