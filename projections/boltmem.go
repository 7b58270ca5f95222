package projections

import bolt "go.etcd.io/bbolt"

// MemoryReleaser is implemented by projections whose files are mapped
// into memory (bbolt). ReleaseMemory drops the mapped pages from the
// process's resident set; the next read maps them again from the page
// cache (a minor fault), so nothing changes but memory. The projector
// calls it after each commit of a bulk catch-up: a commit of random
// chunk ids reads most of a file's pages, and those pages counted in the
// process's RSS until exit (at 200K events 460 MB of a 960 MB peak were
// mapped projection files, summed over five projections). With commits
// taking turns (Options.Commits) the peak holds one projection's pages.
type MemoryReleaser interface {
	ReleaseMemory()
}

// ReleaseBolt drops db's mapped pages from the resident set (see
// MemoryReleaser). It is advice to the kernel: a failure changes nothing
// but memory, and is ignored. A read transaction holds the mapping in
// place (bbolt remaps only in a write transaction, under the lock it
// takes).
func ReleaseBolt(db *bolt.DB) {
	_ = db.View(func(tx *bolt.Tx) error {
		DropResident(db, tx.Size())
		return nil
	})
}
