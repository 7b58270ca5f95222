package vector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// KeepOnly rewrites the bbolt cache file at path so that it holds only the
// entries whose text hash keep accepts, and returns how many it dropped. The
// file is copied, not edited: bbolt leaves deleted values in free pages, so
// deleting in place would keep the dropped vectors on disk. A missing file
// is no error. The caller must not have the file open.
func KeepOnly(path string, keep func(textHash [32]byte) bool) (int, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5e9, ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("open embedding cache %s: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".keep"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: 5e9})
	if err != nil {
		return 0, fmt.Errorf("create embedding cache copy: %w", err)
	}
	dropped := 0
	err = src.View(func(stx *bolt.Tx) error {
		return dst.Update(func(dtx *bolt.Tx) error {
			db, err := dtx.CreateBucketIfNotExists(boltBucket)
			if err != nil {
				return err
			}
			sb := stx.Bucket(boltBucket)
			if sb == nil {
				return nil
			}
			return sb.ForEach(func(k, v []byte) error {
				var h [32]byte
				if len(k) >= 32 {
					copy(h[:], k[len(k)-32:])
				}
				if len(k) < 33 || !keep(h) {
					dropped++
					return nil
				}
				return db.Put(append([]byte(nil), k...), append([]byte(nil), v...))
			})
		})
	})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("rewrite embedding cache: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("rewrite embedding cache: %w", err)
	}
	if err := fsutil.SyncDir(filepath.Dir(path)); err != nil {
		return dropped, fmt.Errorf("rewrite embedding cache: %w", err)
	}
	return dropped, nil
}
