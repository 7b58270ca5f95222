package projections

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// ErrDamaged is returned (inside a *DamagedError) when a projection's stored
// state cannot be read, makes its library panic, or disagrees with the log.
// The projection must be reset and rebuilt from the log; nothing in the log
// is affected.
var ErrDamaged = errors.New("projections: projection damaged")

// DamagedError names the damaged projection.
type DamagedError struct {
	Projection string
	Err        error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("projection %s is damaged and must be rebuilt from the log: %v", e.Projection, e.Err)
}

// Unwrap returns ErrDamaged and the cause.
func (e *DamagedError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// Damaged returns the name of the damaged projection err reports ("" and
// false when err is not a *DamagedError).
func Damaged(err error) (string, bool) {
	var de *DamagedError
	if errors.As(err, &de) {
		return de.Projection, true
	}
	return "", false
}

// Guard runs fn and turns a panic inside it into a *DamagedError for
// projection name. Memory faults on mapped files (a bbolt file truncated
// under its mmap gives SIGBUS) become panics while fn runs, instead of
// killing the process: a damaged projection must never take the log's
// commands down with it.
func Guard(name string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = &DamagedError{Projection: name, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	return fn()
}

// GuardStore is Guard for a call into a storage library (bleve) that
// reads only the projection's own files with a request the projection
// built: an error it returns is damage too (bleve's "error loading
// roaring bitmap", "tried to load freq chunk that doesn't exist", a bare
// EOF from a cut segment), except a cancelled context, which is the
// caller's.
func GuardStore(ctx context.Context, name string, fn func() error) error {
	err := Guard(name, fn)
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, ok := Damaged(err); ok {
		return err
	}
	return &DamagedError{Projection: name, Err: err}
}

// DamageMarker is the file that flags a projection directory for a reset
// on its next open. It holds the reason, for the notice.
const DamageMarker = "DAMAGED"

// MarkDamaged flags the projection stored in dir for a reset on its next
// open.
func MarkDamaged(dir, reason string) error {
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, DamageMarker), []byte(reason+"\n"), 0o600); err != nil {
		return fmt.Errorf("flag projection for rebuild: %w", err)
	}
	return nil
}

// MarkedDamaged returns the reason a projection in dir was flagged, and
// whether it was.
func MarkedDamaged(dir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, DamageMarker))
	if err != nil {
		return "", false
	}
	return string(bytesTrimNL(b)), true
}

func bytesTrimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// CheckBolt is a cheap sanity check of an open bbolt file: the meta page's
// high-water mark must lie inside the file. A truncated file passes
// bolt.Open (its meta pages are intact) but faults on the first read of a
// page past the end.
func CheckBolt(db *bolt.DB) error {
	fi, err := os.Stat(db.Path())
	if err != nil {
		return fmt.Errorf("check %s: %w", filepath.Base(db.Path()), err)
	}
	return db.View(func(tx *bolt.Tx) error {
		if want := tx.Size(); fi.Size() < want {
			return fmt.Errorf("check %s: %d bytes, its pages need %d (truncated)", filepath.Base(db.Path()), fi.Size(), want)
		}
		return nil
	})
}

// CompactBolt rewrites the bbolt file at path (closed) into a fresh file
// holding only the live pages, so that nothing freed (a tombstoned chunk's
// content, values of dropped buckets) stays in the file's free pages. The
// new file replaces the old one atomically.
func CompactBolt(path string, opts *bolt.Options) error {
	src, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: opts.Timeout})
	if err != nil {
		return fmt.Errorf("compact %s: %w", filepath.Base(path), err)
	}
	defer src.Close()
	tmp := path + ".compact"
	os.Remove(tmp)
	// Mapped once at the source's size: the copy is never larger, and
	// each remap of a growing file would copy every dirty node of the
	// open transaction out of the old mapping (most of a compaction's CPU).
	// NoGrowSync also stops bbolt from extending the file to the mapping's
	// size: it ends at its last written page (Sync below makes it durable).
	var mapSize int
	if fi, err := os.Stat(path); err == nil {
		mapSize = int(fi.Size())
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoFreelistSync: opts.NoFreelistSync, FreelistType: opts.FreelistType, NoSync: true, NoGrowSync: true, InitialMmapSize: mapSize, PageSize: src.Info().PageSize})
	if err != nil {
		return fmt.Errorf("compact %s: %w", filepath.Base(path), err)
	}
	// Each transaction holds its pages in memory until it commits, and
	// the projector compacts several files at once: 8 MB keeps that small.
	// The walk reads every page of the source: they are dropped from the
	// resident set as it goes (a read-only mapping is never remapped).
	stop := dropWhile(src, int64(mapSize))
	err = bolt.Compact(dst, src, 8<<20)
	stop()
	if err != nil {
		dst.Close()
		os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", filepath.Base(path), err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", filepath.Base(path), err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", filepath.Base(path), err)
	}
	src.Close()
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", filepath.Base(path), err)
	}
	return fsutil.SyncDir(filepath.Dir(path))
}

// dropWhile drops db's mapped pages (the first size bytes) from the
// resident set every 100 ms until stop is called: a walk over a whole
// file would otherwise leave it all resident. The caller keeps the
// mapping in place meanwhile (DropResident).
func dropWhile(db *bolt.DB, size int64) (stop func()) {
	done := make(chan struct{})
	dropped := make(chan struct{})
	go func() {
		defer close(dropped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				DropResident(db, size)
			}
		}
	}()
	return func() {
		close(done)
		<-dropped
	}
}
