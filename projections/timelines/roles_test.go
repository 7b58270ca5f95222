package timelines

import (
	"bytes"
	"testing"
)

// A role that has a one-byte code is refused spelled out (one encoding
// per record), and so is a code past indexRoles.
func TestChunkRoleCodes(t *testing.T) {
	other := goldenChunks()[2]
	enc, err := encodeChunk(other)
	if err != nil {
		t.Fatal(err)
	}
	spelled := []byte("\x00\x08narrator")
	if !bytes.Contains(enc, spelled) {
		t.Fatalf("role not spelled out in %x", enc)
	}
	for _, repl := range []string{"\x00\x04user", "\x09"} {
		bad := bytes.Replace(enc, spelled, []byte(repl), 1)
		if _, err := decodeChunk(other.ID, bad); err == nil {
			t.Errorf("role %q decoded", repl)
		}
	}
	if _, err := decodeChunk(other.ID, bytes.Replace(enc, spelled, []byte("\x01"), 1)); err != nil {
		t.Errorf("coded role: %v", err)
	}
}
