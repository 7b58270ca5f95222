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
	size    int    // bytes of entries in f: where the next write goes
	alloc   int    // bytes in f, with the preallocated zero tail
	last    uint64 // index of the last entry written
	segSize int
	noSync  bool
	buf     []byte
	// lastWrite is the bytes of the last batch written: the room the
	// next one is expected to need (zeroAhead).
	lastWrite int
	// zeroErr is the last failure to write zeros ahead or to start their
	// writeback (tests read it).
	zeroErr error
}

// maxKeptBuf bounds the buffer kept between batches: a rare huge batch
// does not pin its memory.
const maxKeptBuf = 4 << 20

// Preallocation: the writer reserves the space ahead of its writes, so
// that an fdatasync after an append does not also journal the file's
// growth and block allocation on every write. It reserves with fallocate
// (as etcd's WAL does) and then writes zeros over the reserved space past
// the write at hand (as PostgreSQL fills a WAL file): fallocate alone
// leaves unwritten extents, and the first write into one converts it, a
// metadata change that every fdatasync then journals again. Measured on
// this machine's ext4 (a disk shared with other work), 700-byte appends
// each fdatasynced took a median 1.4 ms into fallocated space, 0.66 ms
// into written zeros (8 rounds, one file at a time). Op by op beside a
// writer into fallocated space (8 runs), 700-byte appends took about the
// same time (ratio 0.73-1.36, median 1.0: its journal commits serve both
// files) and 175 KB ones (a batch of 256) were 1.03-1.76 times faster in
// 7 runs, 2 times slower in one. fallocate still comes first: until the
// zeros are on disk, the space reads as zeros after a crash whatever the
// file system's data mode. Each reservation is twice the write that needs
// it, at least minPrealloc and at most maxPrealloc, never past the segment
// size: a small store's file stays small, and a reader of the last
// segment (a catch-up reading the events after its checkpoint reads to
// the end of the file) reads at most maxPrealloc of zeros. Under
// durability none, with no fdatasync after a write, the zeros are not
// written. The zero tail is unused space (parseSegment); a file the
// writer closes or cycles is cut back to its entries, so a closed store's
// files are exactly its entries. The reservation a write the size of the
// last one would make is made when the last one's commit is done
// (zeroAhead), off the path of the next: the same bytes reach the disk,
// and a durable batch of 256 no longer waits for the zeros (a mean
// 60-75 µs of each batch's ~0.7-2 ms on this machine). Nor does it wait
// for their writeback: topUp starts it as soon as they are written
// (startWriteback), where they used to stay dirty until the next write's
// fdatasync wrote them with its own bytes, and an fdatasync here takes
// longer the more it writes (180 KB: ~540 µs, 4 KB: ~260 µs). Measured
// (log's BenchmarkAppendBatch256/group, 9 alternated pairs): 198-211K
// events/s before, 206-220K after, faster in 8 of the 9 pairs, by a
// median 4%; single appends (their zero range is minPrealloc) did not
// change beyond the noise.
const (
	minPrealloc = 64 << 10
	maxPrealloc = 1 << 20
)

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
	s := segs[len(segs)-1]
	name := filepath.Join(dir, s.name)
	f, err := os.OpenFile(name, os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open segment: %w", err)
	}
	end, err := entriesEnd(name, s, head, fi)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.f, w.size, w.alloc = f, int(end), int(fi.Size())
	return w, nil
}

// entriesEnd returns where the entries of segment s (file path, info fi)
// end when head is the log's last seq: where the next write goes. That is
// the file's size unless the file has a preallocated zero tail. Open has
// just parsed the last segment (segtail.go remembers it); otherwise the
// file is parsed again.
func entriesEnd(path string, s segFile, head uint64, fi os.FileInfo) (int64, error) {
	if head < s.first {
		return 0, nil
	}
	k := head - s.first + 1 // entries the file holds
	segTails.Lock()
	so := segTails.m[path]
	if so != nil && os.SameFile(fi, so.fi) && uint64(len(so.offs)) == k {
		end := so.end
		segTails.Unlock()
		return end, nil
	}
	segTails.Unlock()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read segment %s: %w", s.name, err)
	}
	ents, st := parseSegment(b)
	if uint64(len(ents)) != k || st.err != nil || st.torn {
		return 0, &CorruptionError{Seq: s.first + uint64(min(uint64(len(ents)), k)), Segment: s.name, Offset: st.goodEnd,
			Err: fmt.Errorf("%w: the last segment holds %d entries after seq %d, the head is seq %d", ErrChainBroken, len(ents), s.first-1, head)}
	}
	return st.goodEnd, nil
}

// create starts the segment file whose first entry is first.
func (w *tailWriter) create(first uint64) error {
	f, err := os.OpenFile(filepath.Join(w.dir, fmt.Sprintf("%020d", first)), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	w.f, w.size, w.alloc = f, 0, 0
	return nil
}

// reserve makes sure n more bytes fit in the preallocated space. A failed
// preallocation (a file system without fallocate, a full disk) is not an
// error: the write that follows extends the file, or fails, as without it.
// It returns the range it zeroed (n 0: none).
func (w *tailWriter) reserve(n int) (zoff, zn int64) {
	need := w.size + n
	if need <= w.alloc {
		return 0, 0
	}
	step := min(max(2*n, minPrealloc), maxPrealloc)
	to := min(need+step, max(need, w.segSize))
	if preallocate(w.f, int64(w.alloc), int64(to-w.alloc)) != nil {
		return 0, 0
	}
	w.alloc = to
	if w.noSync {
		return 0, 0 // no fdatasync to spare the conversions
	}
	// Zeros past the write at hand only: the write itself fills the rest.
	// Not an error either: without them the space is still reserved, and
	// a failing disk fails the write that follows.
	if err := writeZeros(w.f, int64(need), int64(to-need)); err != nil {
		w.zeroErr = err
		return 0, 0
	}
	return int64(need), int64(to - need)
}

// zeroAhead reports whether a next write the size of the last one would
// not fit in the reserved space: reserving it after the last write's
// fdatasync, before the next write comes, takes the fallocate and the
// zeros off the next commit's path (topUp).
func (w *tailWriter) zeroAhead() bool {
	return w != nil && w.f != nil && !w.noSync && w.lastWrite > 0 && w.size+w.lastWrite > w.alloc
}

// topUp reserves room for a write the size of the last one, as reserve
// would when that write comes: the same ranges, fallocated and zeroed,
// so the disk sees the same writes, one commit earlier in time. Called
// with the Log's commitMu held, by a goroutine of its own (commit).
// Its zeros start on their way to the disk at once, not with the next
// write's fdatasync. (A write's own reservation needs no such start: its
// fdatasync follows.)
func (w *tailWriter) topUp() {
	if off, n := w.reserve(w.lastWrite); n > 0 {
		if err := startWriteback(w.f, off, n); err != nil {
			w.zeroErr = err
		}
	}
}

// zeroChunk is the source of writeZeros.
var zeroChunk [64 << 10]byte

// writeZeros writes n zero bytes into f from off on.
func writeZeros(f *os.File, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeroChunk)))
		if _, err := f.WriteAt(zeroChunk[:k], off); err != nil {
			return fmt.Errorf("write zeros: %w", err)
		}
		off, n = off+k, n-k
	}
	return nil
}

// trim cuts the file back to its entries, dropping the preallocated tail.
func (w *tailWriter) trim() error {
	if w.alloc <= w.size {
		return nil
	}
	if err := w.f.Truncate(int64(w.size)); err != nil {
		return fmt.Errorf("trim segment: %w", err)
	}
	w.alloc = w.size
	return nil
}

// cycle closes the current file (fsynced, as tidwall does whatever the
// durability) and starts the next.
func (w *tailWriter) cycle() error {
	// A sealed segment has no zero tail: cut before the fsync, so the cut
	// is durable before the next file exists.
	if err := w.trim(); err != nil {
		return err
	}
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
	w.reserve(len(b))
	if _, err := w.f.WriteAt(b, int64(w.size)); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	w.size += len(b)
	w.alloc = max(w.alloc, w.size)
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
	written := 0
	for _, p := range ps {
		buf = binary.AppendUvarint(buf, uint64(len(p.data)))
		buf = append(buf, p.data...)
		if w.size+len(buf) >= w.segSize {
			if err := w.flush(buf); err != nil {
				return err
			}
			written += len(buf)
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
		written += len(buf)
		w.last = ps[len(ps)-1].seq
	}
	if written > 0 {
		w.lastWrite = written
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
	// Not fsynced: a crash before the cut reaches the disk leaves the zero
	// tail, which readers take as unused space.
	err := w.trim()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}
