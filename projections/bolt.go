package projections

import (
	bolt "go.etcd.io/bbolt"
)

// BoltMapSize is the address space OpenBolt maps a projection's bbolt
// file with from the start. bbolt remaps as a file grows, doubling, and a
// remap in a write transaction copies every node the transaction changed
// out of the old mapping: a catch-up's first commits, which grow a file
// from nothing to megabytes, paid a tenth of their CPU (and most of their
// garbage) for it. Address space costs nothing until pages are touched;
// a larger file is mapped at its size as before.
const BoltMapSize = 256 << 20

// BoltPageSize is the page size of the bbolt files OpenBolt creates (an
// existing file keeps its own). bbolt writes each dirty page with its own
// pwrite: a 50K-event catch-up wrote 150K pages of 4 KB.
const BoltPageSize = 16 << 10

// boltGrowStep is how much a file is extended at a time past its content.
// With the large mapping, bbolt's default (16 MB, or the whole mapping
// while it is smaller) would leave small files mostly holes. bbolt grows
// a file at most once per commit (a truncate and an fsync), so a small
// step costs a bulk catch-up nothing; it spares small commits that fsync.
const boltGrowStep = 64 << 10

// OpenBolt opens (creating if needed, mode 0600) the projection bbolt file
// at path with o (nil: bbolt's defaults), mapped at BoltMapSize unless o
// names a mapping size.
func OpenBolt(path string, o *bolt.Options) (*bolt.DB, error) {
	var opts bolt.Options
	if o != nil {
		opts = *o
	}
	if opts.InitialMmapSize == 0 && !opts.ReadOnly {
		opts.InitialMmapSize = BoltMapSize
	}
	if opts.PageSize == 0 {
		opts.PageSize = BoltPageSize
	}
	db, err := bolt.Open(path, 0o600, &opts)
	if err != nil {
		return nil, err
	}
	db.AllocSize = boltGrowStep
	return db, nil
}
