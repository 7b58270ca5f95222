//go:build !linux

package projections

import bolt "go.etcd.io/bbolt"

// DropResident is a no-op where madvise is not wired (see the linux file).
func DropResident(db *bolt.DB, size int64) {}

// residentFileBytes is unknown here: FitBulkLimit leaves the limit alone.
func residentFileBytes() int64 { return -1 }
