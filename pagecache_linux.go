package ucl

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fadviseDontNeed drops f's pages from the page cache. Dirty pages are not
// dropped, so f is written down first (a file its writer never synced,
// such as bleve's index_meta.json, would otherwise stay).
func fadviseDontNeed(f *os.File) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("drop cached pages of %s: %w", f.Name(), err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop cached pages of %s: %w", f.Name(), err)
	}
	return nil
}
