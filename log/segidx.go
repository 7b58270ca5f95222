package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
)

// Random reads by seq (Raw) go through a per-segment offset index instead
// of parsing the whole segment file holding the entry (what tidwall's Read
// did, keeping only two segments and serialising readers). An indexed read
// is one pread of the entry, checked like a parsed read is (length prefix,
// CRC) plus the seq in its header, so a stale or wrong index can only send
// the read to the parsing path (readEntry), never return another event.
//
// A sealed segment's offsets are kept beside it in a sidecar file
// (<segment>.idx, format in doc.go): derived, rebuilt from the segment
// whenever it is missing or does not match, so later processes skip the
// whole-file parse too.

// segIdxMagic starts a sidecar; its last byte is the format version.
// Wire constant: do not change.
const segIdxMagic = "UCLSIDX\x01"

const segIdxSuffix = ".idx"

// segIdxFixed is the size of a sidecar without its offsets.
const segIdxFixed = len(segIdxMagic) + 8 + 8 + 4 + crcSize

// segIdxOpenFiles bounds the segment files kept open for reads (1M
// events of 512 bytes are about 90 files of 8 MiB). Offsets stay known
// when a file is closed. A variable for tests.
var segIdxOpenFiles = 256

// encodeSegIndex builds the sidecar of a segment file of size bytes whose
// first entry is seq first; offs are its entries' offsets.
func encodeSegIndex(first uint64, size int64, offs []int64) []byte {
	b := make([]byte, 0, segIdxFixed+4*len(offs))
	b = append(b, segIdxMagic...)
	b = binary.LittleEndian.AppendUint64(b, first)
	b = binary.LittleEndian.AppendUint64(b, uint64(size))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(offs)))
	for _, o := range offs {
		b = binary.LittleEndian.AppendUint32(b, uint32(o))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// checkSegIndex checks a sidecar's magic, checksum and counts and returns
// its offset table undecoded (segIdx.side). The offsets' order is not
// checked here: a read takes two of them and refuses any pair that is not
// increasing and inside the file (then the sidecar is rebuilt), and every
// entry read is checked (length, CRC, seq) whatever sent the read there.
func checkSegIndex(b []byte) (first uint64, size int64, table []byte, err error) {
	if len(b) < segIdxFixed || string(b[:len(segIdxMagic)]) != segIdxMagic {
		return 0, 0, nil, fmt.Errorf("%w: segment index of %d bytes", ErrMalformed, len(b))
	}
	n := len(b) - crcSize
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return 0, 0, nil, fmt.Errorf("segment index: %w", ErrChecksum)
	}
	p := len(segIdxMagic)
	first = binary.LittleEndian.Uint64(b[p:])
	sz := binary.LittleEndian.Uint64(b[p+8:])
	count := binary.LittleEndian.Uint32(b[p+16:])
	p += 20
	if uint64(count) == 0 || uint64(n-p) != 4*uint64(count) || sz > 1<<32 || binary.LittleEndian.Uint32(b[p:]) != 0 {
		return 0, 0, nil, fmt.Errorf("%w: segment index counts %d entries in %d bytes", ErrMalformed, count, n-p)
	}
	return first, int64(sz), b[p:n:n], nil
}

// decodeSegIndex parses a sidecar and checks what it can alone: magic,
// checksum, offsets starting at 0, increasing and inside the file.
func decodeSegIndex(b []byte) (first uint64, size int64, offs []int64, err error) {
	first, size, table, err := checkSegIndex(b)
	if err != nil {
		return 0, 0, nil, err
	}
	offs = make([]int64, len(table)/4)
	for i := range offs {
		offs[i] = int64(binary.LittleEndian.Uint32(table[4*i:]))
		if (i == 0 && offs[i] != 0) || (i > 0 && offs[i] <= offs[i-1]) || offs[i] >= size {
			return 0, 0, nil, fmt.Errorf("%w: segment index offset %d out of order", ErrMalformed, i)
		}
	}
	return first, size, offs, nil
}

// segIndex is a log's read index: its segment files, and for those read
// since, an open file and the offsets of their entries.
type segIndex struct {
	dir string

	mu    sync.Mutex
	gen   uint64 // bumped by reset; offsets learned under an older gen are dropped
	shut  bool   // the log is closed: reads fall back to readEntry, which reports it
	segs  []segFile
	files map[string]*segIdx
	open  int // files in files with f open

	// Counters for tests and benchmarks: segment bytes read by indexed
	// reads (entries and parses), and whole-segment parses.
	bytesRead   atomic.Int64
	wholeParses atomic.Int64
}

// segIdx is one segment file open for reads.
type segIdx struct {
	name   string
	first  uint64
	f      *os.File // nil when closed to bound open files (guarded by segIndex.mu)
	refs   int      // readers using f (guarded by segIndex.mu)
	gone   bool     // dropped from files: close f when refs drops to 0
	sealed bool

	mu   sync.Mutex
	offs []int64 // offs[k] is where entry k starts
	end  int64   // just past the last entry in offs
	// side is a sidecar's offset table (a little-endian u32 per entry),
	// read in place of offs: a read needs two offsets, and decoding every
	// sidecar a query touches cost ~7 ms of a process at 1M events.
	side []byte
}

// count is the number of entries whose offsets are known. Called with
// s.mu held.
func (s *segIdx) count() uint64 {
	if s.side != nil {
		return uint64(len(s.side) / 4)
	}
	return uint64(len(s.offs))
}

// off is where entry k (< count) starts. Called with s.mu held.
func (s *segIdx) off(k uint64) int64 {
	if s.side != nil {
		return int64(binary.LittleEndian.Uint32(s.side[4*k:]))
	}
	return s.offs[k]
}

func newSegIndex(dir string) *segIndex {
	return &segIndex{dir: dir, files: map[string]*segIdx{}}
}

// reset forgets every segment: called when files are cut.
func (x *segIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.gen++
	x.segs = nil
	for name, s := range x.files {
		x.dropLocked(name, s)
	}
}

func (x *segIndex) close() {
	x.reset()
	x.mu.Lock()
	x.shut = true
	x.mu.Unlock()
}

func (x *segIndex) dropLocked(name string, s *segIdx) {
	delete(x.files, name)
	s.gone = true
	if s.refs == 0 {
		x.closeLocked(s)
	}
}

func (x *segIndex) closeLocked(s *segIdx) {
	if s.f != nil {
		s.f.Close()
		s.f = nil
		x.open--
	}
}

func (x *segIndex) release(s *segIdx) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s.refs--
	if s.gone && s.refs == 0 {
		x.closeLocked(s)
	}
}

// read returns the entry data (raw ‖ crc) of seq, checked; ok false means
// the index could not serve it and the caller parses the segment
// (readEntry).
func (x *segIndex) read(seq uint64) (data []byte, ok bool) {
	for attempt := 0; attempt < 2; attempt++ {
		s, gen, last := x.acquire(seq, attempt > 0)
		if s == nil {
			return nil, false
		}
		data, ok, retry := x.readIn(s, gen, seq)
		x.release(s)
		if ok {
			return data, true
		}
		if !retry || !last {
			return nil, false
		}
		// seq is past the end of what was the last segment: the writer may
		// have started a new one since the listing.
	}
	return nil, false
}

// acquire finds and opens the segment holding seq. last says it is the
// newest segment listed, which may still grow.
func (x *segIndex) acquire(seq uint64, relist bool) (*segIdx, uint64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.shut {
		return nil, 0, false
	}
	if x.segs == nil || relist {
		segs, err := listSegments(x.dir)
		if err != nil || len(segs) == 0 {
			return nil, 0, false
		}
		x.segs = segs
		for name, s := range x.files {
			if !s.sealed && name != segs[len(segs)-1].name {
				x.dropLocked(name, s) // sealed since: reopen to use its sidecar
			}
		}
	}
	i := sort.Search(len(x.segs), func(i int) bool { return x.segs[i].first > seq }) - 1
	if i < 0 {
		return nil, 0, false
	}
	sf := x.segs[i]
	last := i == len(x.segs)-1
	s := x.files[sf.name]
	if s == nil {
		s = &segIdx{name: sf.name, first: sf.first, sealed: !last}
		x.files[sf.name] = s
	}
	if s.f == nil {
		if x.open >= segIdxOpenFiles {
			for _, o := range x.files {
				if o.refs == 0 {
					x.closeLocked(o)
				}
				if x.open < segIdxOpenFiles*3/4 {
					break
				}
			}
		}
		f, err := os.Open(filepath.Join(x.dir, sf.name))
		if err != nil {
			return nil, 0, false
		}
		s.f = f
		x.open++
	}
	s.refs++
	return s, x.gen, last
}

// readIn reads seq from s. retry says seq lies past the entries s holds.
func (x *segIndex) readIn(s *segIdx, gen, seq uint64) (data []byte, ok, retry bool) {
	k := seq - s.first
	s.mu.Lock()
	if s.offs == nil && s.side == nil {
		if s.sealed {
			x.bytesRead.Add(s.loadSidecar(x.dir))
		} else {
			s.fromTail(x.dir)
		}
	}
	if k >= s.count() {
		if !x.extend(s, gen) || k >= s.count() {
			s.mu.Unlock()
			return nil, false, true
		}
	}
	from, to, end := s.off(k), s.end, s.end
	if k+1 < s.count() {
		to = s.off(k + 1)
	}
	s.mu.Unlock()
	if to <= from || to > end {
		// A sidecar table out of order (its checksum holds, so written
		// so): the next read rebuilds it from the file.
		x.distrust(s)
		return nil, false, false
	}
	b := make([]byte, to-from)
	x.bytesRead.Add(to - from)
	if _, err := s.f.ReadAt(b, from); err != nil {
		return nil, false, false // closed under us, or an I/O error: readEntry reports it
	}
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) != n {
		x.distrust(s)
		return nil, false, false
	}
	data = b[w:]
	raw, _, err := checkEntry(data)
	if err != nil {
		x.distrust(s)
		return nil, false, false
	}
	if h, err := DecodeHeader(raw); err != nil || h.Seq != seq {
		x.distrust(s)
		return nil, false, false
	}
	return data, true, false
}

// distrust drops what is known of s and its sidecar after an indexed read
// did not check: the next read rebuilds it from the whole file.
func (x *segIndex) distrust(s *segIdx) {
	s.mu.Lock()
	s.offs, s.side, s.end = nil, nil, 0
	s.mu.Unlock()
	if s.sealed {
		os.Remove(filepath.Join(x.dir, s.name+segIdxSuffix))
	}
	x.mu.Lock()
	if x.files[s.name] == s {
		x.dropLocked(s.name, s)
	}
	x.mu.Unlock()
}

// loadSidecar takes s's offsets from its sidecar when it matches the
// file; a sidecar that does not is removed. It returns the bytes read.
// Called with s.mu held.
func (s *segIdx) loadSidecar(dir string) int64 {
	path := filepath.Join(dir, s.name+segIdxSuffix)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	fi, err := s.f.Stat()
	if err != nil {
		return int64(len(b))
	}
	first, size, table, err := checkSegIndex(b)
	if err != nil || first != s.first || size != fi.Size() {
		os.Remove(path)
		return int64(len(b))
	}
	s.side, s.end = table, size
	return int64(len(b))
}

// fromTail takes the growing segment's offsets from what a range read
// remembered of it (segtail.go; Open's tail verification parses the last
// segment), when they are of this file. Called with s.mu held.
func (s *segIdx) fromTail(dir string) {
	path := filepath.Join(dir, s.name)
	segTails.Lock()
	so := segTails.m[path]
	var offs []int64
	var end int64
	if so != nil {
		offs, end = append([]int64(nil), so.offs...), so.end
	}
	segTails.Unlock()
	if so == nil || len(offs) == 0 {
		return
	}
	fi, err := s.f.Stat()
	if err != nil || !os.SameFile(fi, so.fi) || fi.Size() < end {
		return
	}
	s.offs, s.end = offs, end
}

// extend parses s's file from the end of what is known to the end of the
// file, adding the entries that check. For a sealed segment parsed whole
// and clean it writes the sidecar. Called with s.mu held.
func (x *segIndex) extend(s *segIdx, gen uint64) bool {
	fi, err := s.f.Stat()
	if err != nil || fi.Size() <= s.end {
		return false
	}
	b := make([]byte, fi.Size()-s.end)
	x.bytesRead.Add(int64(len(b)))
	if s.end == 0 {
		x.wholeParses.Add(1)
	}
	if _, err := s.f.ReadAt(b, s.end); err != nil && err != io.EOF {
		return false
	}
	ents, st := parseSegment(b)
	if len(ents) == 0 {
		return false
	}
	x.mu.Lock()
	stale := x.gen != gen
	x.mu.Unlock()
	if stale {
		return false
	}
	whole := s.end == 0
	for _, e := range ents {
		s.offs = append(s.offs, s.end+e.off)
	}
	s.end += ents[len(ents)-1].end
	if whole && s.sealed && st.err == nil && !st.torn && s.end == fi.Size() {
		writeSegIndex(x.dir, s.name, s.first, s.end, s.offs)
	}
	return true
}

// writeSegIndex writes a sealed segment's sidecar, atomically (a crash
// leaves the old file or the new, and a torn one fails its checksum). It
// is an optimisation: failures are ignored, and it is not fsynced.
func writeSegIndex(dir, name string, first uint64, size int64, offs []int64) {
	if size >= 1<<32 || len(offs) == 0 {
		return
	}
	path := filepath.Join(dir, name+segIdxSuffix)
	if _, err := os.Stat(path); err == nil {
		return
	}
	tmp, err := os.CreateTemp(dir, name+segIdxSuffix+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(encodeSegIndex(first, size, offs))
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}

// removeSegIndexes deletes the sidecars of segments that are about to be
// cut or removed.
func removeSegIndexes(dir string, segs []segFile) error {
	for _, s := range segs {
		if err := os.Remove(filepath.Join(dir, s.name+segIdxSuffix)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove segment index: %w", err)
		}
	}
	return nil
}
