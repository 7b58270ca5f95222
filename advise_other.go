//go:build !linux

package ucl

// adviseRandom does nothing here (it reads Linux's /proc/self/maps).
func adviseRandom(string) error { return nil }
