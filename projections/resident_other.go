//go:build !linux

package projections

import bolt "go.etcd.io/bbolt"

// DropResident is a no-op where madvise is not wired (see the linux file).
func DropResident(db *bolt.DB, size int64) {}
