//go:build !linux

package main

// dropCache is Linux-only advice (dropcache_linux.go).
func dropCache(dir string) {}
