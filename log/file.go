package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"strconv"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendCRC frames raw for storage: raw ‖ CRC-32C(raw) for the last entry
// of a write batch (final), raw ‖ ^CRC-32C(raw) for the entries before it.
// The complement marks "more of this batch follows": a batch whose final
// entry never reached the disk was never acknowledged, and recovery drops
// all of it, across segment files.
func appendCRC(raw []byte, final bool) []byte {
	c := crc32.Checksum(raw, castagnoli)
	if !final {
		c = ^c
	}
	return binary.LittleEndian.AppendUint32(raw, c)
}

// checkEntry verifies an entry's CRC and returns raw and whether the entry
// ends its write batch.
func checkEntry(data []byte) (raw []byte, final bool, err error) {
	if len(data) < HeaderSize+crcSize {
		return nil, false, fmt.Errorf("%w: entry of %d bytes", ErrMalformed, len(data))
	}
	raw = data[:len(data)-crcSize]
	c, stored := crc32.Checksum(raw, castagnoli), binary.LittleEndian.Uint32(data[len(raw):])
	switch stored {
	case c:
		return raw, true, nil
	case ^c:
		return raw, false, nil
	}
	return nil, false, ErrChecksum
}

// segFile is one tidwall/wal segment file.
type segFile struct {
	name  string
	first uint64 // index (seq) of its first entry
}

// listSegments returns the log's segment files in order. tidwall names them
// by their first index in 20 digits; other names (its temporary .START/.END
// files, our own files) are skipped.
func listSegments(dir string) ([]segFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list segments: %w", err)
	}
	var out []segFile
	for _, e := range ents {
		n := e.Name()
		if len(n) != 20 || e.IsDir() {
			continue
		}
		idx, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, segFile{name: n, first: idx})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

// fileEntry is an entry's position in a segment file.
type fileEntry struct {
	off   int64  // offset of the entry's length prefix
	end   int64  // offset just past the entry
	data  []byte // the entry data (raw ‖ crc)
	final bool   // the entry ends its write batch
}

// tailState says how a segment file's bytes end.
type tailState struct {
	goodEnd int64 // offset just past the last entry that parsed and checked
	torn    bool  // bytes after goodEnd are a torn write (only meaningful for the last file)
	err     error // set when the bytes after goodEnd are damage, not a tear
	// zeros: the bytes after goodEnd are all zero, unused space of a
	// preallocated file (or a write of which nothing reached the disk): the
	// end of the entries, neither torn nor damaged.
	zeros bool
}

// parseSegment splits a segment file into entries. It stops at the first
// entry that does not parse or check, and classifies what follows: the end
// (only zero bytes: preallocated space), a torn write (length past EOF, or
// a final entry with a bad CRC followed by nothing but zeros, where the
// written bytes stop at a sector boundary inside the entry or a zeroed
// 512-byte sector lies in it) or corruption.
func parseSegment(b []byte) ([]fileEntry, tailState) {
	return parseSegmentInto(b, nil)
}

// parseSegmentInto is parseSegment appending the entries to ents (a
// scan's reused slice).
func parseSegmentInto(b []byte, ents []fileEntry) ([]fileEntry, tailState) {
	return parseSegmentFrom(b, 0, ents)
}

// parseSegmentFrom is parseSegmentInto of b whose entries before off are
// in ents already (readParse parsed them as the file was read).
func parseSegmentFrom(b []byte, off int, ents []fileEntry) ([]fileEntry, tailState) {
	z := nonZeroEnd(b)
	for off < len(b) {
		if off >= z {
			return ents, tailState{goodEnd: int64(off), zeros: true}
		}
		n, k := binary.Uvarint(b[off:])
		if k == 0 {
			return ents, tailState{goodEnd: int64(off), torn: true} // varint cut by EOF
		}
		if k < 0 {
			return ents, tailState{goodEnd: int64(off), err: fmt.Errorf("%w: bad entry length", ErrMalformed)}
		}
		end := off + k + int(n)
		if n > uint64(len(b)) || end > len(b) {
			return ents, tailState{goodEnd: int64(off), torn: true}
		}
		data := b[off+k : end]
		_, final, err := checkEntry(data)
		if err != nil {
			// Nothing written after it (a preallocated file's zeros at most),
			// and the write visibly stopped inside it.
			last := end >= z
			if last && (hasZeroSector(b, off, end) || alignUp(z, sector) < end) {
				return ents, tailState{goodEnd: int64(off), torn: true}
			}
			return ents, tailState{goodEnd: int64(off), err: err}
		}
		ents = append(ents, fileEntry{off: int64(off), end: int64(end), data: data, final: final})
		off = end
	}
	return ents, tailState{goodEnd: int64(off)}
}

// nonZeroEnd returns the offset just past the last non-zero byte of b (0
// when b is all zeros).
func nonZeroEnd(b []byte) int {
	i := len(b)
	// Word at a time: a preallocated tail is mostly zeros.
	for i >= 8 && binary.LittleEndian.Uint64(b[i-8:i]) == 0 {
		i -= 8
	}
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return i
}

// sector is the unit a disk writes whole or not at all: a write cut short
// by a crash leaves whole sectors unwritten (zeros in a preallocated or
// extended file).
const sector = 512

func alignUp(n, to int) int { return (n + to - 1) / to * to }

// hasZeroSector reports whether b[from:to] covers a whole 512-byte-aligned
// sector of zeros: the mark of a write the disk never finished (etcd's
// isTornEntry heuristic).
func hasZeroSector(b []byte, from, to int) bool {
	var zero [sector]byte
	start := (from + sector - 1) / sector * sector
	for s := start; s+sector <= to; s += sector {
		if bytes.Equal(b[s:s+sector], zero[:]) {
			return true
		}
	}
	return false
}
