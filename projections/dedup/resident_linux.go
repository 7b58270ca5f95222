package dedup

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropResident tells the kernel this process no longer needs the pages of
// db's mapping it has touched (madvise MADV_DONTNEED; the file is mapped
// read-only and shared, so nothing is lost: a later read maps the page
// again from the page cache). Lookups of random hashes touch pages all
// over the file, and a long append would otherwise end with the whole
// file in its resident set. size is the file's size (the mapping is at
// least that long).
func dropResident(db *bolt.DB, size int64) {
	if size <= 0 {
		return
	}
	// The caller holds x.mu: no transaction remaps the file meanwhile.
	// Advice: nothing to do when it is refused.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
}
