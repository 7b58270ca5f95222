package projections

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// DropResident tells the kernel this process no longer needs the pages of
// db's mapping it has touched (madvise MADV_DONTNEED; the file is mapped
// read-only and shared, so nothing is lost: a later read maps the page
// again from the page cache). Lookups of random hashes, a bulk write and
// a compaction's walk touch pages all over a file, which would otherwise
// stay in the resident set however large the file grows. size is the
// file's size (the mapping is at least that long). The caller makes sure
// nothing remaps the file meanwhile: it is inside a transaction, holds
// the only writer's lock, or db is read-only.
func DropResident(db *bolt.DB, size int64) {
	if size <= 0 {
		return
	}
	// Advice: nothing to do when it is refused.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
}
