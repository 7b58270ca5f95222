// Package fsutil is the one place ucl writes files durably. Every file that
// must survive a crash (keys, store metadata, checkpoints, snapshots, cut-aside
// log bytes) goes through WriteFileAtomic: write a temp file in the same
// directory, fsync it, close it, rename it over the target, fsync the
// directory. A reader therefore sees the old file or the new one, never a
// torn one, and the rename itself survives power loss.
package fsutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path atomically with the given permissions.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic for content produced by a writer function,
// so large archives stream to disk instead of being held in memory.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("chmod temp file: %w", err)
	}
	if err = write(f); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", filepath.Base(path), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", filepath.Base(path), err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", filepath.Base(path), err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it are durable. Needed after creating a file and after a rename.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAllSync creates dir (and parents) and fsyncs the parent of every
// directory it created.
func MkdirAllSync(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("mkdir %s: not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAllSync(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !os.IsExist(err) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return SyncDir(parent)
}

// DiskUsage returns the bytes of the files under dir; unreadable entries
// count as zero (it sizes progress bars and status lines, nothing more).
func DiskUsage(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
