package store

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestStagingLeftoversStayAfterCrash: staging directories of interrupted
// work (verify, restore, snapshot create, atomic writes, a rebuild with
// copies of vault.key and wallet.json) stayed on disk forever. The next
// Open removes them, and puts a set-aside projections directory back when
// the projections are missing.
func TestStagingLeftoversStayAfterCrash(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	s, err := Init(dir, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	put := func(p string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("plaintext"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leftovers := []string{
		filepath.Join(dir, "ucl-verify-123"),
		filepath.Join(dir, ".projections-restore-9"),
		filepath.Join(dir, SnapshotsDir, ".tmp-s000000000001-x"),
		filepath.Join(root, ".store.rebuild-77"),
	}
	for _, d := range leftovers {
		put(filepath.Join(d, "timelines", "timelines.db"))
	}
	put(filepath.Join(root, ".store.rebuild-77", VaultFile))
	put(filepath.Join(root, ".store.rebuild-77", WalletFile))
	tmpFile := put(filepath.Join(dir, ".ucl.json.tmp-555"))
	// A crash between Restore's renames: projections missing, old set aside.
	old := filepath.Join(dir, ".projections-old-abcd1234")
	put(filepath.Join(old, "timelines", "timelines.db"))
	other := put(filepath.Join(root, ".other.rebuild-1", VaultFile)) // another store's: kept

	s, err = Open(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.TidyErr != nil {
		t.Fatal(s.TidyErr)
	}
	for _, p := range append(leftovers, tmpFile, old) {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ProjectionsDir, "timelines", "timelines.db")); err != nil {
		t.Errorf("set-aside projections not put back: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another store's staging removed: %v", err)
	}
	want := append(leftovers, tmpFile)
	sort.Strings(want)
	got := append([]string(nil), s.Tidied...)
	sort.Strings(got)
	if len(got) != len(want) {
		t.Fatalf("tidied %v, want %v", got, want)
	}
	// A second open finds nothing.
	s.Close()
	if s, err = Open(dir, OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Tidied) != 0 {
		t.Fatalf("second open tidied %v", s.Tidied)
	}
}
