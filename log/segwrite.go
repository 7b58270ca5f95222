package log

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// tailWriter appends entries to the log's last segment file in
// tidwall/wal's binary format (uvarint length ‖ data, files named by their
// first index in 20 digits), byte for byte what tidwall's WriteBatch writes,
// with the same rule for starting a file. It replaces tidwall's write path
// because tidwall keeps the open segment's bytes in one buffer that grows
// by appending: at batches of 256 events the growth was 32% of the append
// profile. This writer keeps one reused buffer the size of a batch and
// reads nothing at open (tidwall's Open reads the whole last segment).
//
// Writes are serialised by the Log's commitMu.
type tailWriter struct {
	dir     string
	f       *os.File
	size    int    // bytes in f
	last    uint64 // index of the last entry written
	segSize int
	noSync  bool
	buf     []byte
}

// maxKeptBuf bounds the buffer kept between batches: a rare huge batch
// does not pin its memory.
const maxKeptBuf = 4 << 20

// openTail opens the last segment of dir for appending after entry head
// (verified by the caller), creating the first file of an empty log.
func openTail(dir string, head uint64, segSize int, noSync bool) (*tailWriter, error) {
	w := &tailWriter{dir: dir, last: head, segSize: segSize, noSync: noSync}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		if err := w.create(head + 1); err != nil {
			return nil, err
		}
		return w, nil
	}
	name := filepath.Join(dir, segs[len(segs)-1].name)
	f, err := os.OpenFile(name, os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open segment: %w", err)
	}
	w.f, w.size = f, int(fi.Size())
	return w, nil
}

// create starts the segment file whose first entry is first.
func (w *tailWriter) create(first uint64) error {
	f, err := os.OpenFile(filepath.Join(w.dir, fmt.Sprintf("%020d", first)), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	w.f, w.size = f, 0
	return nil
}

// cycle closes the current file (fsynced, as tidwall does whatever the
// durability) and starts the next.
func (w *tailWriter) cycle() error {
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync segment: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close segment: %w", err)
	}
	w.f = nil
	return w.create(w.last + 1)
}

// flush writes b at the end of the current file.
func (w *tailWriter) flush(b []byte) error {
	if _, err := w.f.WriteAt(b, int64(w.size)); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	w.size += len(b)
	return nil
}

// write appends ps (consecutive seqs after w.last) and fsyncs unless
// noSync. tidwall's rule: a file already over segSize is closed before the
// batch; one that reaches segSize mid-batch is written, closed and a new
// one started (possibly left empty).
func (w *tailWriter) write(ps []pending) error {
	if w.f == nil {
		return fmt.Errorf("write segment: %w", ErrClosed)
	}
	for i, p := range ps {
		if p.seq != w.last+uint64(i)+1 {
			return fmt.Errorf("write segment: seq %d after %d", p.seq, w.last+uint64(i))
		}
	}
	if w.size > w.segSize {
		if err := w.cycle(); err != nil {
			return err
		}
	}
	buf := w.buf[:0]
	for _, p := range ps {
		buf = binary.AppendUvarint(buf, uint64(len(p.data)))
		buf = append(buf, p.data...)
		if w.size+len(buf) >= w.segSize {
			if err := w.flush(buf); err != nil {
				return err
			}
			buf, w.last = buf[:0], p.seq
			if err := w.cycle(); err != nil {
				return err
			}
		}
	}
	if len(buf) > 0 {
		if err := w.flush(buf); err != nil {
			return err
		}
		w.last = ps[len(ps)-1].seq
	}
	if cap(buf) <= maxKeptBuf {
		w.buf = buf[:0]
	} else {
		w.buf = nil
	}
	if !w.noSync {
		if err := dataSync(w.f); err != nil {
			return fmt.Errorf("sync segment: %w", err)
		}
	}
	return nil
}

// close closes the current file.
func (w *tailWriter) close() error {
	if w == nil || w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
