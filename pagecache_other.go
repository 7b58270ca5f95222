//go:build !linux

package ucl

import "os"

// fadviseDontNeed does nothing here: the folio behaviour DropProjectionPages
// answers is Linux's.
func fadviseDontNeed(*os.File) error { return nil }
