package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// Staging leftovers.
//
// Work that builds something large does it in a hidden staging directory
// and renames the result into place; a crash leaves the staging behind,
// holding copies of what it was building: projection files with plaintext,
// and for `ucl rebuild` the vault key and the wallet. The stagings are:
//
//	DIR/ucl-verify-*            projections.Projector.Verify (TempDir = DIR)
//	DIR/.projections-restore-*  snapshot.Restore extraction
//	DIR/.projections-old-*      snapshot.Restore: the state set aside
//	DIR/snapshots/.tmp-*        snapshot.Create / Import
//	DIR/.NAME.tmp-*             fsutil.WriteAtomic temp files
//	PARENT/.BASE.rebuild-*      `ucl rebuild` of DIR = PARENT/BASE
//
// Each is removed by the code that made it when it finishes (success or
// failure). Tidy removes what a crash left; Open calls it once it holds
// the store's lock, so nothing of the store's is in use. A set-aside
// projections directory is put back when DIR/projections is missing (a
// crash between Restore's renames), otherwise removed.

// Tidy removes the staging leftovers of the store at dir (see above) and
// returns what it removed. A rebuild staging next to dir is removed too:
// rebuild refuses a dir that holds a store, so one found next to an
// existing store, or before a new rebuild starts, is a crash's.
func Tidy(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	var removed []string
	var errs []error
	rm := func(p string) {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover %s: %w", p, err))
			return
		}
		removed = append(removed, p)
	}
	glob := func(pattern string) []string {
		m, err := filepath.Glob(pattern)
		if err != nil {
			errs = append(errs, fmt.Errorf("list leftovers %s: %w", pattern, err))
		}
		return m
	}
	for _, pat := range []string{"ucl-verify-*", ".projections-restore-*"} {
		for _, p := range glob(filepath.Join(dir, pat)) {
			rm(p)
		}
	}
	proj := filepath.Join(dir, ProjectionsDir)
	for _, p := range glob(filepath.Join(dir, "."+ProjectionsDir+"-old-*")) {
		if _, err := os.Stat(proj); errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(p, proj); err == nil {
				continue
			}
		}
		rm(p)
	}
	for _, p := range glob(filepath.Join(dir, SnapshotsDir, ".tmp-*")) {
		rm(p)
	}
	for _, p := range glob(filepath.Join(dir, ".*.tmp-*")) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			rm(p)
		}
	}
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if !strings.HasPrefix(base, ".") || !strings.Contains(base, ".rebuild-") { // never a staging's own siblings
		for _, p := range glob(filepath.Join(parent, "."+base+".rebuild-*")) {
			rm(p)
		}
	}
	if len(removed) > 0 {
		for _, d := range []string{dir, parent} {
			if err := fsutil.SyncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return removed, errors.Join(errs...)
}
