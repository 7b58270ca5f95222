package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
)

func TestInitOpenAndKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("generates an RSA-4096 wallet")
	}
	dir := filepath.Join(t.TempDir(), "s")
	s, err := Init(dir, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Wallet()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Meta.LogID) != 32 || w == nil || s.Keys == nil {
		t.Fatalf("meta %+v", s.Meta)
	}
	for _, f := range []string{VaultFile, WalletFile, MetaFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, err, fi.Mode())
		}
	}
	s.Close()
	if _, err := Init(dir, InitOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second init: %v", err)
	}
	other, _ := crypto.NewKeyring()
	if _, err := Open(dir, OpenOptions{Keys: other}); !errors.Is(err, ErrWrongVaultKey) {
		t.Fatalf("wrong key: %v", err)
	}
	s, err = Open(dir, OpenOptions{NoKeys: true})
	if err != nil || s.Keys != nil {
		t.Fatalf("keyless open: %v", err)
	}
	s.Close()
	if _, err := Open(t.TempDir(), OpenOptions{}); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("empty dir: %v", err)
	}
	// A rebuilt store keeps its source's log id.
	s2, err := Init(filepath.Join(t.TempDir(), "r"), InitOptions{LogID: s.Meta.LogID, Keys: other, Wallet: w})
	if err != nil || s2.Meta.LogID != s.Meta.LogID {
		t.Fatalf("init with log id: %v", err)
	}
	s2.Close()
	if _, err := Init(filepath.Join(t.TempDir(), "x"), InitOptions{LogID: "nothex"}); err == nil {
		t.Fatal("bad log id accepted")
	}
}
