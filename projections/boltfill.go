package projections

import (
	"fmt"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// CompactGainMin is the share of a bbolt file a compaction after a bulk
// build (Compacter) must remove to be worth its copy of the file: a build
// that wrote its buckets in key order with full pages leaves little to
// remove (timelines at 1M: 4.4%, 5.3 s to rewrite 248 MB), one that split
// its pages half full leaves a third to a half (summary 41%, dedup 36%).
const CompactGainMin = 0.10

// BoltLoose reports whether compacting db would remove at least
// CompactGainMin of its file: the bytes its leaf pages hold (each key and
// value with bbolt's 16-byte element header, and a header a page) against
// the file's size. It reads every key and value once, dropping the pages
// it read from the resident set every looseDrop bytes (a walk of the
// whole file would otherwise leave it resident: bbolt's bucket statistics
// did, +245 MB on a 1M timelines rebuild); it costs a fraction of a
// compaction (no writes). The branch pages and nested buckets it leaves
// out (~1%) only make a file look looser.
func BoltLoose(db *bolt.DB) (bool, error) {
	var inuse, size int64
	err := db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		defer DropResident(db, size)
		page := int64(db.Info().PageSize)
		var walked int64
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			var held int64
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				n := int64(16 + len(k) + len(v))
				held += n
				if walked += n; walked >= looseDrop {
					DropResident(db, size)
					walked = 0
				}
			}
			inuse += held + 16*(held/page+1) // and the pages' headers, about
			return nil
		})
	})
	if err != nil {
		return false, fmt.Errorf("measure %s: %w", filepath.Base(db.Path()), err)
	}
	return float64(size-inuse) >= CompactGainMin*float64(size), nil
}

// looseDrop is how many bytes BoltLoose reads between two drops of the
// pages it read.
const looseDrop = 4 << 20
