package projections

import (
	"os"
	"path/filepath"
	"testing"
)

// A mark of another boot means the files may be torn; one of this boot
// (a killed process: its writes are in the page cache) is cleared after
// the files are made durable.
func TestCheckUnsynced(t *testing.T) {
	if _, err := bootID(); err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	dir := t.TempDir()
	if torn, err := CheckUnsynced(dir); torn || err != nil {
		t.Fatalf("no mark: torn %v, %v", torn, err)
	}
	mark := filepath.Join(dir, UnsyncedMarker)
	os.WriteFile(mark, []byte("00000000-0000-4000-8000-000000000000\n"), 0o600)
	if torn, err := CheckUnsynced(dir); !torn || err != nil {
		t.Fatalf("another boot's mark: torn %v, %v", torn, err)
	}
	if !beginUnsynced(dir) {
		t.Fatal("mark not written")
	}
	endBoltUnsynced(dir)
	os.WriteFile(filepath.Join(dir, "a.db"), []byte("x"), 0o600)
	if torn, err := CheckUnsynced(dir); torn || err != nil {
		t.Fatalf("this boot's mark: torn %v, %v", torn, err)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("this boot's mark stayed: %v", err)
	}
}

// endBoltUnsynced forgets dir's unsynced state without removing its mark
// (what a killed process leaves).
func endBoltUnsynced(dir string) {
	boltMu.Lock()
	defer boltMu.Unlock()
	delete(unsynced, dir)
}

// A bulk catch-up turns off the fsync of the bbolt files under a
// projection's directory (Options.Dirs) while it runs, reopened ones
// included, and puts it back with the mark removed at its end.
func TestBulkFilesUnsyncedUnderTheMark(t *testing.T) {
	if _, err := bootID(); err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	dir := t.TempDir()
	db, err := OpenBolt(filepath.Join(dir, "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !beginUnsynced(dir) || !db.NoSync {
		t.Fatalf("NoSync %v after the mark", db.NoSync)
	}
	db2, err := OpenBolt(filepath.Join(dir, "y.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if !db2.NoSync {
		t.Fatal("a file opened under the mark syncs")
	}
	if err := endUnsynced(dir); err != nil {
		t.Fatal(err)
	}
	if db.NoSync || db2.NoSync {
		t.Fatal("NoSync stayed after the end")
	}
	if _, err := os.Stat(filepath.Join(dir, UnsyncedMarker)); !os.IsNotExist(err) {
		t.Fatalf("mark stayed: %v", err)
	}
}
