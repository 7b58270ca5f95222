//go:build !linux

package main

import "os"

// fadviseDontNeed does nothing here: the folio behaviour dropProjectionPages
// answers is Linux's.
func fadviseDontNeed(*os.File) error { return nil }
