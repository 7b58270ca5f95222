package ucl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/projections"
)

// BulkCatchUpRan reports whether a bulk catch-up (a whole-store build) ran
// in this process: a one-shot command then calls DropProjectionPages once
// its store is closed.
func BulkCatchUpRan() bool { return projections.BulkRan() }

// DropProjectionPages drops the page cache of every file under the
// projections of the store in dir (POSIX_FADV_DONTNEED: clean pages no
// process maps are let go; nothing is lost, a later read reads the file
// again). A command runs it after a whole-store build it made itself
// (`ucl project`, a rebuild, a query whose catch-up was a bulk one),
// once the store is closed.
//
// Why: a build writes its files in large writes, and Linux (6.x, ext4)
// keeps what it wrote as large page-cache folios; since 6.18 a read fault
// on a mapping maps the whole folio it falls in (up to 2 MB), so every
// later process that maps those files (bbolt's databases, bleve's
// segments) gets about a whole folio into its resident set for each
// place it reads. A bm25 query on a 1M-event store just built peaked at
// 148 MB, 134 MB of it file pages; the same query once the files had
// been dropped and read back (as after a reboot) peaked at 53-62 MB and
// stayed there on later runs. madvise cannot change this (MADV_RANDOM
// and MADV_NOHUGEPAGE measured: no effect on folios already cached), and
// the cost of dropping is that the next query reads what it needs from
// the disk once.
func DropProjectionPages(dir string) error {
	var errs []error
	root := filepath.Join(dir, store.ProjectionsDir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file merged away meanwhile
			}
			errs = append(errs, err)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if err := dropFilePages(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// dropFilePages drops path's clean, unmapped pages from the page cache.
func dropFilePages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(fadviseDontNeed(f), f.Close())
}
