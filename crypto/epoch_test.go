package crypto

import (
	"bytes"
	"path/filepath"
	"testing"
)

// Epoch bookkeeping: a new epoch becomes current, the old one can be
// dropped (and Adopt overwrites the dropped key's bytes), the current one
// only while another remains, and the file round-trips every state.
func TestKeyringEpochs(t *testing.T) {
	kr, err := NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	next, err := kr.WithNewEpoch()
	if err != nil {
		t.Fatal(err)
	}
	if kr.Current() != 1 || next.Current() != 2 || !next.Has(1) || !next.Has(2) || kr.Has(2) {
		t.Fatalf("epochs: %v / %v", kr.Epochs(), next.Epochs())
	}
	if next.FingerprintOf(1) != kr.Fingerprint() || next.FingerprintOf(3) != "" || len(next.Fingerprints()) != 2 {
		t.Fatal("fingerprints")
	}
	path := filepath.Join(t.TempDir(), "vault.key")
	if err := next.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadKeyring(path)
	if err != nil || back.Current() != 2 || !bytes.Equal(back.KeyOf(1), kr.KeyOf(1)) {
		t.Fatalf("load two epochs: %v", err)
	}
	// Rolling back drops the new current epoch.
	rb, err := next.Without(2)
	if err != nil || rb.Current() != 1 || rb.Has(2) {
		t.Fatalf("roll back: %v", err)
	}
	if _, err := rb.Without(1); err == nil {
		t.Fatal("dropped the last epoch")
	}
	// Wiping the old one: Adopt clears the old key's bytes in place.
	old := kr.Clone()
	held := old.keys[1]
	final, err := next.Without(1)
	if err != nil {
		t.Fatal(err)
	}
	old.Adopt(final)
	if old.Has(1) || old.Current() != 2 || !bytes.Equal(held, make([]byte, KeySize)) {
		t.Fatalf("adopt: epochs %v, old bytes %x", old.Epochs(), held)
	}
	if _, err := old.Wrapper(1); err == nil {
		t.Fatal("a wrapper of the wiped epoch")
	}
}
