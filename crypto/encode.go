package crypto

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
func decodeB64(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(s)
}

func fingerprint(epoch uint32, k []byte) string {
	h := sha256.New()
	h.Write([]byte("ucl vault key fingerprint v1"))
	h.Write(k)
	return fmt.Sprintf("%d:%x", epoch, h.Sum(nil)[:8])
}
