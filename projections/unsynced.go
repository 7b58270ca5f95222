package projections

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"weak"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// UnsyncedMarker is the file that flags a projection directory whose
// bbolt files a bulk catch-up is writing without an fsync per commit.
// It holds the boot id of the machine's boot that wrote them (Linux's
// /proc/sys/kernel/random/boot_id).
//
// Why: every commit's fdatasync held the one commit turn (Options.Commits)
// idle while the disk wrote, and at 400K events the commits, one at a
// time, filled the whole catch-up's wall time: the projection that sets
// the pace waited for a turn a quarter of it. A bulk catch-up therefore
// commits its bbolt files with NoSync, and makes them durable once, at its
// end (every file in the directory fsynced, then the mark removed).
//
// Why the mark is safe: a write that returned is in the kernel's page
// cache, which a process crash (kill -9) does not lose; only a crash of
// the machine or kernel does, and then the file may be torn (bbolt's meta
// page can point to pages that never reached the disk). A mark from the
// running boot means only the process died: the files are whole, and
// CheckUnsynced makes them durable and removes the mark. A mark from
// another boot means they may be torn: the projection must be reset and
// rebuilt from the log (package projstd does, as for DamageMarker).
const UnsyncedMarker = "UNSYNCED"

// bootIDPath is where the running boot's id is read; a variable so that
// tests can stand in for another boot.
var bootIDPath = "/proc/sys/kernel/random/boot_id"

// bootID returns the running boot's id; an error (no such file: not
// Linux) means bulk catch-ups keep an fsync per commit.
func bootID() (string, error) {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return "", err
	}
	id := string(bytes.TrimSpace(b))
	if id == "" {
		return "", errors.New("empty boot id")
	}
	return id, nil
}

// CheckUnsynced looks for an UnsyncedMarker in the projection directory
// dir. torn is true when a boot other than the running one left it: the
// projection's files may be torn and must be reset. A mark of the running
// boot is cleared: every file under dir is fsynced, then the mark is
// removed.
func CheckUnsynced(dir string) (torn bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, UnsyncedMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read unsynced mark: %w", err)
	}
	id, err := bootID()
	if err != nil || id != string(bytes.TrimSpace(b)) {
		return true, nil
	}
	return false, syncAndUnmark(dir)
}

// syncAndUnmark makes every file under dir durable and then removes
// dir's UnsyncedMarker (durably).
func syncAndUnmark(dir string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a compaction's temp file)
			}
			return err
		}
		if d.Name() == UnsyncedMarker || !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		serr := f.Sync()
		f.Close()
		return serr
	})
	if err != nil {
		return fmt.Errorf("sync projection files: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, UnsyncedMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove unsynced mark: %w", err)
	}
	return fsutil.SyncDir(dir)
}

// The bbolt files OpenBolt opened (weakly held: a closed file that is no
// longer referenced drops out), and the directories whose files commit
// without an fsync now.
var (
	boltMu   sync.Mutex
	boltOpen []boltEntry
	unsynced = map[string]bool{}
)

type boltEntry struct {
	db  weak.Pointer[bolt.DB]
	dir string
}

// registerBolt records db (opened at path) and, when its directory is
// being bulk-built without fsyncs, turns them off for it too (a file a
// projection reopens during the catch-up: a compaction's).
func registerBolt(db *bolt.DB, path string) {
	boltMu.Lock()
	defer boltMu.Unlock()
	live := boltOpen[:0]
	for _, e := range boltOpen {
		if e.db.Value() != nil {
			live = append(live, e)
		}
	}
	clear(boltOpen[len(live):])
	boltOpen = live
	e := boltEntry{db: weak.Make(db), dir: filepath.Dir(path)}
	boltOpen = append(boltOpen, e)
	if underUnsynced(e.dir) {
		db.NoSync = true
	}
}

// underUnsynced reports whether dir is, or is under, an unsynced
// directory (boltMu held).
func underUnsynced(dir string) bool {
	for d := range unsynced {
		if dir == d || strings.HasPrefix(dir, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// setNoSync sets NoSync on every open bbolt file under dir (boltMu held).
// The caller is the only writer of those files at that moment (before the
// projection's goroutine starts, or on it).
func setNoSync(dir string, on bool) {
	for _, e := range boltOpen {
		if db := e.db.Value(); db != nil && (e.dir == dir || strings.HasPrefix(e.dir, dir+string(filepath.Separator))) {
			db.NoSync = on
		}
	}
}

// beginUnsynced marks the projection directory dir (UnsyncedMarker,
// durably) and turns off the fsync of every commit of its bbolt files. It
// reports whether it did: without a boot id or when the mark cannot be
// written the files keep their fsyncs.
func beginUnsynced(dir string) bool {
	id, err := bootID()
	if err != nil {
		return false
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, UnsyncedMarker), []byte(id+"\n"), 0o600); err != nil {
		return false
	}
	boltMu.Lock()
	defer boltMu.Unlock()
	unsynced[dir] = true
	setNoSync(dir, true)
	return true
}

// endUnsynced puts back the fsync of every commit under dir, makes every
// file under it durable and removes the mark. On an error the mark stays:
// the next open in this boot tries again, one in another resets the
// projection.
func endUnsynced(dir string) error {
	boltMu.Lock()
	delete(unsynced, dir)
	setNoSync(dir, false)
	boltMu.Unlock()
	if err := syncAndUnmark(dir); err != nil {
		return fmt.Errorf("make projection files durable: %w", err)
	}
	return nil
}
