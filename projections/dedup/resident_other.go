//go:build !linux

package dedup

import bolt "go.etcd.io/bbolt"

// dropResident is a no-op where madvise is not wired (see the linux file).
func dropResident(db *bolt.DB, size int64) {}
