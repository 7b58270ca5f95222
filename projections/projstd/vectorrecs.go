package projstd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// recs.bin (format 7): every stored vector record (quant.go: step float32
// LE ‖ int8 × dim, 4 + dim bytes) at its chunk's slot, the slot scan.bin
// numbers, back to back after a 16-byte header:
//
//	header = "UCLVRECS" ‖ version uint16 LE = 1 ‖ 0 uint16 ‖ dim uint32 LE
//	record s at 16 + s·(4 + dim)
//
// Why a file and not a bbolt bucket keyed by chunk id (format 6): a
// catch-up's records get slots in order, so a Commit appends them at the
// end of this file, while a bucket keyed by random chunk ids had every
// bulk commit insert all over a 725–823 MB database (at a million
// chunks): bbolt's commit grew with it, and each page it touched mapped
// a large folio of the file (up to 2 MB), so the build's mapped memory
// reached ~600 MB during those commits. Only the small id → slot index
// ("ids") takes random inserts now.
//
// The file follows scan.bin's rules (vectorscan.go): written and synced
// before the database commit (never behind it; bytes beyond slotnext are
// not read and are overwritten by the next Commit), a removed chunk's
// record zeroed, dead records dropped by Compact, which moves them to
// recs.1.bin beside scan.1.bin (and back). It is read with pread, never
// mapped: a search reads its candidates' records, a digest or a load
// reads it in slot order.

const (
	recsFileName = "recs.bin"
	recsFileAlt  = "recs.1.bin"
	recsMagic    = "UCLVRECS"
	recsVersion  = 1
)

// recsFileFor is the record file that goes with the slot file name.
func recsFileFor(scanFile string) string {
	if scanFile == scanFileAlt {
		return recsFileAlt
	}
	return recsFileName
}

// recLen is a stored vector record's size (quant.go).
func recLen(dim int) int { return 4 + dim }

func (v *VectorProjection) recsHeaderBytes() []byte {
	h := make([]byte, scanHeader)
	copy(h, recsMagic)
	binary.LittleEndian.PutUint16(h[8:], recsVersion)
	binary.LittleEndian.PutUint32(h[12:], uint32(v.opts.Embedder.Dim()))
	return h
}

// readRec reads slot s's record from the record file into dst (recLen).
func (v *VectorProjection) readRec(s uint64, dst []byte) error {
	if s >= v.next {
		return fmt.Errorf("vector record %d beyond the %d committed: %w", s, v.next, errVectorsCorrupt)
	}
	if _, err := v.rf.ReadAt(dst, scanHeader+int64(s)*int64(len(dst))); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %w", err, errVectorsCorrupt)
		}
		return fmt.Errorf("read vector record %d: %w", s, err)
	}
	return nil
}

// recReader reads records in ascending slot order, a block at a time
// (a walk over every slot reads the file sequentially, in ~100 KB reads).
type recReader struct {
	v      *VectorProjection
	rl     int
	block  uint64
	lo, hi uint64 // records [lo, hi) are in buf
	buf    []byte
}

// newRecReader returns a reader of blocks of block records (1: one read
// per record, for a walk that keeps few).
func (v *VectorProjection) newRecReader(block int) *recReader {
	rl := recLen(v.opts.Embedder.Dim())
	return &recReader{v: v, rl: rl, block: uint64(block), buf: make([]byte, block*rl)}
}

// rec returns slot s's record, valid until the next call.
func (r *recReader) rec(s uint64) ([]byte, error) {
	if s < r.lo || s >= r.hi {
		n := r.v.next
		if s >= n {
			return nil, fmt.Errorf("vector record %d beyond the %d committed: %w", s, n, errVectorsCorrupt)
		}
		r.lo, r.hi = s, min(s+r.block, n)
		if _, err := r.v.rf.ReadAt(r.buf[:int(r.hi-r.lo)*r.rl], scanHeader+int64(r.lo)*int64(r.rl)); err != nil {
			r.lo, r.hi = 0, 0
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: %w", err, errVectorsCorrupt)
			}
			return nil, fmt.Errorf("read vector records %d..: %w", s, err)
		}
	}
	o := int(s-r.lo) * r.rl
	return r.buf[o : o+r.rl], nil
}

// openSlotFiles opens scan.bin and recs.bin (or scan.1.bin and
// recs.1.bin), creating each with its header when no slot is committed,
// and checks their headers and sizes against slotnext; files of the other
// names are what a compaction left behind (vectorcompact.go) and are
// removed.
func (v *VectorProjection) openSlotFiles() error {
	if v.scanFile == "" {
		v.scanFile = scanFileName
	}
	for _, f := range []string{otherScanFile(v.scanFile), recsFileFor(otherScanFile(v.scanFile))} {
		if err := os.Remove(filepath.Join(v.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("open vector slot files: %w", err)
		}
	}
	dim := v.opts.Embedder.Dim()
	sf, err := v.openSlotFile(v.scanFile, v.scanHeaderBytes(), int64(vector.SlotLen(dim)))
	if err != nil {
		return err
	}
	rf, err := v.openSlotFile(recsFileFor(v.scanFile), v.recsHeaderBytes(), int64(recLen(dim)))
	if err != nil {
		sf.Close()
		return err
	}
	v.sf, v.rf = sf, rf
	return nil
}

// openSlotFile opens one file of fixed-size slots after a header.
func (v *VectorProjection) openSlotFile(name string, header []byte, sl int64) (*os.File, error) {
	path := filepath.Join(v.dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open vector file %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < int64(len(header)) && v.next == 0 {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(header, 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			fi, err = f.Stat()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open vector file %s: %w", name, err)
	}
	h := make([]byte, len(header))
	if _, err := f.ReadAt(h, 0); err != nil || string(h) != string(header) {
		f.Close()
		return nil, fmt.Errorf("open vector file %s: header %x: %w", name, h, errVectorsCorrupt)
	}
	if want := int64(len(header)) + int64(v.next)*sl; fi.Size() < want {
		f.Close()
		return nil, fmt.Errorf("open vector file %s: %d bytes, %d slots need %d: %w", name, fi.Size(), v.next, want, errVectorsCorrupt)
	}
	return f, nil
}

// closeSlotFiles closes scan.bin and recs.bin.
func (v *VectorProjection) closeSlotFiles() error {
	var err error
	for _, f := range []**os.File{&v.sf, &v.rf} {
		if *f != nil {
			err = errors.Join(err, (*f).Close())
			*f = nil
		}
	}
	return err
}

// The "slots" bucket's value, a chunk's record (format 7):
//
//	uvarint len(key) ‖ key ‖ varint time ‖ uvarint seq ‖ session (to the end)
//
// key is the chunk's projections.IDKey; the varints are minimal, so a
// record has one encoding. The "ids" bucket maps that key to the slot
// (uvarint, minimal).

// appendChunk returns the "slots" value of the chunk key with m.
func appendChunk(key []byte, m chunkMeta) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(key)+binary.MaxVarintLen64+len(m.session))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return appendMeta(b, m)
}

// appendMeta appends varint time ‖ uvarint seq ‖ session.
func appendMeta(b []byte, m chunkMeta) []byte {
	b = binary.AppendVarint(b, m.time)
	b = binary.AppendUvarint(b, m.seq)
	return append(b, m.session...)
}

// errChunkRecord is made once: the record of every stored chunk is
// parsed when the index or the metadata loads, and by every record a
// session scan filters.
var errChunkRecord = fmt.Errorf("decode chunk record: %w", errVectorsCorrupt)

// splitChunk cuts a "slots" value into the chunk key and its metadata
// (what appendMeta wrote).
func splitChunk(b []byte) (key, meta []byte, err error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, l)) || l == 0 || uint64(len(b)-n) < l {
		return nil, nil, errChunkRecord
	}
	return b[n : n+int(l)], b[n+int(l):], nil
}

// decodeMeta parses a chunk's metadata (appendMeta).
func decodeMeta(b []byte) (chunkMeta, error) {
	t, seq, session, err := splitMeta(b)
	if err != nil {
		return chunkMeta{}, err
	}
	return chunkMeta{time: t, seq: seq, session: string(session)}, nil
}

// splitMeta parses a chunk's metadata without copying its session (the
// session filter of a scan tests every record's).
func splitMeta(b []byte) (t int64, seq uint64, session []byte, err error) {
	t, n := binary.Varint(b)
	if n <= 0 || n != len(binary.AppendVarint(nil, t)) {
		return 0, 0, nil, errChunkRecord
	}
	seq, m := binary.Uvarint(b[n:])
	if m <= 0 || m != len(binary.AppendUvarint(nil, seq)) {
		return 0, 0, nil, errChunkRecord
	}
	return t, seq, b[n+m:], nil
}

// slotRef is an "ids" value: the slot, uvarint.
func slotRef(s uint64) []byte { return binary.AppendUvarint(nil, s) }

// decodeSlotRef parses an "ids" value.
func decodeSlotRef(b []byte) (uint64, error) {
	s, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) || n != len(binary.AppendUvarint(nil, s)) {
		return 0, fmt.Errorf("decode chunk slot %x: %w", b, errVectorsCorrupt)
	}
	return s, nil
}
