package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// headMarkFile is the log's record of the newest acknowledged event, kept
// beside the segment files (tidwall ignores names that are not 20 digits).
const headMarkFile = "HEAD"

// headMagic starts the HEAD file. Wire constant: do not change.
const headMagic = "UCLHEAD\x01"

const headMarkSize = len(headMagic) + 8 + HashSize + 1 + crcSize

// headMark is the newest event the log has acknowledged: written after each
// commit's write (and fsync, unless durability is None) returns, so it never
// names an event the disk may not hold, and read by Open to refuse a tail
// repair or a shortened log that would lose an acknowledged event, and to
// verify only the events after it.
type headMark struct {
	Seq     uint64
	Hash    Hash
	Durable bool // written under Sync or Group durability
}

func (m headMark) encode() []byte {
	b := make([]byte, 0, headMarkSize)
	b = append(b, headMagic...)
	b = binary.LittleEndian.AppendUint64(b, m.Seq)
	b = append(b, m.Hash[:]...)
	var flags byte
	if m.Durable {
		flags = 1
	}
	b = append(b, flags)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeHeadMark(b []byte) (headMark, error) {
	if len(b) != headMarkSize || string(b[:len(headMagic)]) != headMagic {
		return headMark{}, fmt.Errorf("%w: head mark of %d bytes", ErrMalformed, len(b))
	}
	n := len(b) - crcSize
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return headMark{}, fmt.Errorf("head mark: %w", ErrChecksum)
	}
	var m headMark
	off := len(headMagic)
	m.Seq = binary.LittleEndian.Uint64(b[off:])
	copy(m.Hash[:], b[off+8:])
	flags := b[off+8+HashSize]
	if flags > 1 {
		return headMark{}, fmt.Errorf("%w: head mark flags %#x", ErrMalformed, flags)
	}
	m.Durable = flags == 1
	return m, nil
}

// readHeadMark returns the log's head mark; ok is false when there is none
// (a log written before head marks existed, or a new one). A damaged mark is
// an error: the caller decides whether to trust the log without it.
func readHeadMark(dir string) (m headMark, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, headMarkFile))
	if errors.Is(err, fs.ErrNotExist) {
		return headMark{}, false, nil
	}
	if err != nil {
		return headMark{}, false, fmt.Errorf("read head mark: %w", err)
	}
	m, err = decodeHeadMark(b)
	if err != nil {
		return headMark{}, false, err
	}
	return m, true, nil
}

// RepairReport says what a repair cut from the log. The cut bytes are kept
// in SavedTo; nothing is deleted without a copy.
type RepairReport struct {
	// Events cut: FromSeq..ToSeq (FromSeq > ToSeq when only the bytes of an
	// unfinished entry were cut).
	FromSeq uint64 `json:"from_seq"`
	ToSeq   uint64 `json:"to_seq"`
	// Head is the log's last seq after the repair.
	Head     uint64   `json:"head"`
	Bytes    int64    `json:"bytes"`
	Segments []string `json:"segments"`
	SavedTo  []string `json:"saved_to"`
	Reason   string   `json:"reason"`
}

// Events returns how many whole events were cut.
func (r *RepairReport) Events() uint64 {
	if r == nil || r.FromSeq > r.ToSeq {
		return 0
	}
	return r.ToSeq - r.FromSeq + 1
}

func (r *RepairReport) String() string {
	if r.Events() == 0 {
		return fmt.Sprintf("log repaired: cut %d bytes of an unfinished write (%s); head is seq %d; bytes kept in %s",
			r.Bytes, r.Reason, r.Head, strings.Join(r.SavedTo, ", "))
	}
	return fmt.Sprintf("log repaired: cut seqs %d..%d, %d bytes (%s); head is seq %d; bytes kept in %s",
		r.FromSeq, r.ToSeq, r.Bytes, r.Reason, r.Head, strings.Join(r.SavedTo, ", "))
}

// cutPlan is a cut of the log: file cutIdx truncated at cutOff, every later
// file removed.
type cutPlan struct {
	segs   []segFile
	cutIdx int
	cutOff int64
	keep   uint64 // last seq kept
	last   uint64 // last whole entry's seq before the cut (keep if none)
	bytes  int64
	reason string
}

// planTailCut finds what Open may cut: the bytes of a torn last write, and
// the entries of a write batch whose final entry never reached the disk
// (they were never acknowledged). Damage that is not a torn write, and a
// tear that valid entries follow, are *CorruptionErrors.
func planTailCut(dir string) (*cutPlan, error) {
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		return nil, err
	}
	b, release, err := readMapped(filepath.Join(dir, segs[len(segs)-1].name))
	if err != nil {
		return nil, fmt.Errorf("read last segment: %w", err)
	}
	p, err := planTailCutFrom(dir, segs, b)
	if rerr := release(); rerr != nil && err == nil {
		return nil, fmt.Errorf("release last segment: %w", rerr)
	}
	return p, err
}

// planTailCutFrom is planTailCut given the bytes b of the last segment.
func planTailCutFrom(dir string, segs []segFile, b []byte) (*cutPlan, error) {
	idx := len(segs) - 1
	lastName := segs[idx].name
	ents, st := parseSegment(b)
	// Open's verification of the tail then reads from the head mark on
	// instead of reading and checking the whole file again.
	rememberEntries(filepath.Join(dir, lastName), ents, st)
	next := segs[idx].first + uint64(len(ents))
	if st.err != nil {
		return nil, &CorruptionError{Seq: next, Segment: lastName, Offset: st.goodEnd, Err: st.err}
	}
	p := &cutPlan{segs: segs, last: next - 1}
	if st.torn {
		if validEntryAfter(b, st.goodEnd, next) {
			return nil, &CorruptionError{Seq: next, Segment: lastName, Offset: st.goodEnd, Err: ErrDamagedTail}
		}
		p.bytes = int64(len(b)) - st.goodEnd
		p.reason = "torn write"
	}
	// Walk back to the last entry that ends a batch.
	for {
		i := len(ents) - 1
		for i >= 0 && !ents[i].final {
			i--
		}
		if i >= 0 || idx == 0 {
			p.cutIdx = idx
			if i >= 0 {
				p.cutOff = ents[i].end
				p.keep = segs[idx].first + uint64(i)
			} else {
				p.cutOff, p.keep = 0, segs[idx].first-1
			}
			if i < len(ents)-1 {
				p.bytes += ents[len(ents)-1].end - p.cutOff
				if p.reason == "" {
					p.reason = "unfinished write batch"
				} else {
					p.reason = "torn write of an unfinished write batch"
				}
			}
			break
		}
		// No entry of this file ends a batch: the whole file belongs to an
		// unfinished batch that started in an earlier file.
		p.bytes += st.goodEnd
		if p.reason == "" {
			p.reason = "unfinished write batch"
		}
		idx--
		prev, err := os.ReadFile(filepath.Join(dir, segs[idx].name))
		if err != nil {
			return nil, fmt.Errorf("read segment %s: %w", segs[idx].name, err)
		}
		b = prev
		ents, st = parseSegment(b)
		if st.err != nil || st.torn {
			e := st.err
			if e == nil {
				e = ErrTorn
			}
			return nil, &CorruptionError{Seq: segs[idx].first + uint64(len(ents)), Segment: segs[idx].name, Offset: st.goodEnd, Err: e}
		}
	}
	return p, nil
}

// validEntryAfter reports whether a valid entry for seq next or one of the
// few after it lies in b after off: then the bytes at off are not a torn
// last write but damage in the middle of acknowledged data (a flipped
// length, say), and cutting them would drop those entries.
func validEntryAfter(b []byte, off int64, next uint64) bool {
	// The entry at off itself, intact but for its length prefix.
	for k := int64(1); k <= binary.MaxVarintLen64 && off+k < int64(len(b)); k++ {
		if raw, _, err := checkEntry(b[off+k:]); err == nil && binary.LittleEndian.Uint64(raw[2:]) == next {
			return true
		}
	}
	for s := next; s < next+4; s++ {
		var pat [8]byte
		binary.LittleEndian.PutUint64(pat[:], s)
		for from := off; from < int64(len(b)); {
			i := bytes.Index(b[from:], pat[:])
			if i < 0 {
				break
			}
			at := from + int64(i) // the header's seq field; the header starts 2 bytes before
			from = at + 1
			h := at - 2
			if h <= off || !knownVersion(b[h]) || !Type(b[h+1]).Valid() {
				continue
			}
			for k := int64(1); k <= binary.MaxVarintLen64 && h-k >= off; k++ {
				n, kk := binary.Uvarint(b[h-k : h])
				if int64(kk) != k || n > uint64(len(b)) || h+int64(n) > int64(len(b)) {
					continue
				}
				if _, _, err := checkEntry(b[h : h+int64(n)]); err == nil {
					return true
				}
			}
		}
	}
	return false
}

// apply cuts the log as planned: the cut bytes are copied into corruptDir
// first, then the file is truncated, later files removed, and everything
// fsynced.
func (p *cutPlan) apply(dir, corruptDir, reason string) (*RepairReport, error) {
	rep := &RepairReport{FromSeq: p.keep + 1, ToSeq: p.last, Head: p.keep, Reason: reason}
	for i := p.cutIdx; i < len(p.segs); i++ {
		name := p.segs[i].name
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read segment %s: %w", name, err)
		}
		off := int64(0)
		if i == p.cutIdx {
			off = p.cutOff
		}
		// A preallocated file's zeros after the last written byte are
		// unused space, not cut bytes worth keeping.
		b = b[:min(len(b), alignUp(nonZeroEnd(b), sector))]
		if off >= int64(len(b)) {
			continue
		}
		aside := fmt.Sprintf("%s.%d.cut", name, off)
		if err := saveAside(corruptDir, aside, b[off:]); err != nil {
			return nil, err
		}
		rep.Bytes += int64(len(b)) - off
		rep.Segments = append(rep.Segments, name)
		rep.SavedTo = append(rep.SavedTo, filepath.Join(corruptDir, aside))
	}
	return rep, cutFiles(dir, p.segs, p.cutIdx, p.cutOff)
}

// cutFiles makes the log end at offset off of segs[idx]: later files are
// removed, that one truncated (removed too when emptied, unless it is the
// first), and everything fsynced.
func cutFiles(dir string, segs []segFile, idx int, off int64) error {
	forgetSegments(dir)
	if err := removeSegIndexes(dir, segs[idx:]); err != nil {
		return err
	}
	for i := len(segs) - 1; i >= idx; i-- {
		path := filepath.Join(dir, segs[i].name)
		if i > idx || (off == 0 && i > 0) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove cut segment: %w", err)
			}
			continue
		}
		if err := truncateSync(path, off); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open segment for repair: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("truncate segment: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync repaired segment: %w", err)
	}
	return nil
}

// tailMinHead is the newest seq Open knows was acknowledged: the head
// mark's (when written under a durable mode) or minHead, whichever is
// newer.
func tailMinHead(mark headMark, haveMark bool, minHead uint64) uint64 {
	if haveMark && mark.Durable && mark.Seq > minHead {
		return mark.Seq
	}
	return minHead
}

// diagnoseTail is what Open would say of the log's tail, changing nothing:
// nil when Open would open it as it is, a *CorruptionError with ErrTorn
// when Open would cut a torn write, or the error Open refuses with
// (ErrDamagedTail, ErrLost, ...). VerifyDir reports a damaged tail
// through it, so the two never disagree about the same bytes.
func diagnoseTail(dir string) error {
	mark, haveMark, err := readHeadMark(dir)
	if err != nil {
		haveMark = false
	}
	_, err = recoverTail(dir, "", true, tailMinHead(mark, haveMark, 0))
	return err
}

// recoverTail applies Open's repair rule: cut what can only be an
// unacknowledged write (see planTailCut), and nothing at or below minHead,
// the newest seq known to have been acknowledged.
func recoverTail(dir, corruptDir string, noRepair bool, minHead uint64) (*RepairReport, error) {
	p, err := planTailCut(dir)
	if err != nil || p == nil || p.bytes == 0 {
		return nil, err
	}
	name := p.segs[p.cutIdx].name
	if p.keep < minHead {
		return nil, &CorruptionError{Seq: p.keep + 1, Segment: name, Offset: p.cutOff,
			Err: fmt.Errorf("%w: a repair would cut seqs %d..%d, and seq %d was acknowledged", ErrLost, p.keep+1, max(p.last, minHead), minHead)}
	}
	if noRepair {
		return nil, &CorruptionError{Seq: p.keep + 1, Segment: name, Offset: p.cutOff, Err: ErrTorn}
	}
	return p.apply(dir, corruptDir, p.reason)
}

// truncateAfter cuts the log files back to end just after event seq (0:
// empty), without saving what it cuts: it undoes a write that failed before
// it was acknowledged.
func truncateAfter(dir string, seq uint64) error {
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		return err
	}
	idx := 0
	for i, s := range segs {
		if s.first <= seq {
			idx = i
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, segs[idx].name))
	if err != nil {
		return fmt.Errorf("read segment %s: %w", segs[idx].name, err)
	}
	ents, _ := parseSegment(b)
	off := int64(0)
	if seq >= segs[idx].first {
		k := int(seq - segs[idx].first)
		if k >= len(ents) {
			return &CorruptionError{Seq: seq, Segment: segs[idx].name, Offset: -1, Err: fmt.Errorf("%w: event to keep is not on disk", ErrLost)}
		}
		off = ents[k].end
	}
	if err := cutFiles(dir, segs, idx, off); err != nil {
		return fmt.Errorf("roll back: %w", err)
	}
	return nil
}

// Repair is the explicit repair of a log that Open refuses: it cuts the log
// at its first damaged entry (a flipped byte, a broken chain, a tear that
// valid entries follow) and drops an unfinished write batch before it,
// keeping every cut byte in corruptDir (default: dir/../corrupt). Events
// after the damage are lost from this log even when their bytes are intact:
// a mirrored copy (a rebuild from Arweave) may still hold them. It takes the
// store lock. The report says exactly what was cut; nil when the log was
// sound.
func Repair(dir, corruptDir string) (*RepairReport, error) {
	if corruptDir == "" {
		corruptDir = filepath.Join(filepath.Dir(filepath.Clean(dir)), "corrupt")
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock(lock)
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		return nil, err
	}
	// The first damage: walk every file, checking CRCs, seqs and the chain.
	var prev Hash
	cutIdx, cutOff, last := -1, int64(0), uint64(0)
	reason := ""
	for i, s := range segs {
		b, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil {
			return nil, fmt.Errorf("read segment %s: %w", s.name, err)
		}
		if s.first != last+1 {
			cutIdx, cutOff, reason = i, 0, fmt.Sprintf("segment %s starts at seq %d, expected %d", s.name, s.first, last+1)
			break
		}
		ents, st := parseSegment(b)
		for k, e := range ents {
			seq := s.first + uint64(k)
			r, err := verifyRaw(seq, e.data[:len(e.data)-crcSize], prev)
			if err != nil {
				cutIdx, cutOff, reason = i, e.off, fmt.Sprintf("damaged entry at seq %d: %v", seq, err)
				break
			}
			prev, last = r.Hash, seq
		}
		if cutIdx >= 0 {
			break
		}
		if st.err != nil || st.torn { // not a zero tail: that is unused space
			cutIdx, cutOff = i, st.goodEnd
			reason = fmt.Sprintf("damaged bytes after seq %d", last)
			break
		}
	}
	var rep *RepairReport
	if cutIdx >= 0 {
		p := &cutPlan{segs: segs, cutIdx: cutIdx, cutOff: cutOff, keep: last}
		// Count the events being given up, for the report: what the head
		// mark acknowledged, or the newest whole entry after the damage.
		p.last = last
		if m, ok, err := readHeadMark(dir); err == nil && ok && m.Seq > p.last {
			p.last = m.Seq
		}
		for i := cutIdx; i < len(segs); i++ {
			if b, err := os.ReadFile(filepath.Join(dir, segs[i].name)); err == nil {
				from := int64(0)
				if i == cutIdx {
					from = cutOff
				}
				if from < int64(len(b)) {
					if ents, _ := parseSegment(b[from:]); len(ents) > 0 {
						if h, err := DecodeHeader(ents[len(ents)-1].data); err == nil && h.Seq > p.last {
							p.last = h.Seq
						}
					}
				}
			}
		}
		if rep, err = p.apply(dir, corruptDir, reason); err != nil {
			return nil, err
		}
	}
	if rep == nil {
		// No damage: only the ordinary rule for an unfinished batch.
		if rep, err = recoverTail(dir, corruptDir, false, 0); err != nil || rep == nil {
			return rep, err
		}
	} else if err := markLastFinal(dir); err != nil {
		// The events before the damage were acknowledged (their batch's end
		// was written, and damaged later): the last one kept ends the log.
		return rep, err
	}
	// The head mark follows the repaired log: the loss was chosen.
	head, hash := uint64(0), Hash{}
	if err := scanFiles(dir, 1, 0, func(seq uint64, raw []byte) error {
		head, hash = seq, HashRaw(raw)
		return nil
	}); err != nil {
		return rep, fmt.Errorf("re-verify repaired log: %w", err)
	}
	rep.Head = head
	m := headMark{Seq: head, Hash: hash, Durable: true}
	if err := writeFileSync(filepath.Join(dir, headMarkFile), m.encode()); err != nil {
		return rep, err
	}
	return rep, syncDir(dir)
}

// markLastFinal gives the log's last entry the plain CRC of a batch end.
func markLastFinal(dir string) error {
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		return err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		path := filepath.Join(dir, segs[i].name)
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read segment %s: %w", segs[i].name, err)
		}
		ents, _ := parseSegment(b)
		if len(ents) == 0 {
			continue
		}
		e := ents[len(ents)-1]
		if e.final {
			return nil
		}
		at := e.end - crcSize
		crc := b[at:e.end]
		binary.LittleEndian.PutUint32(crc, ^binary.LittleEndian.Uint32(crc))
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("mark last entry: %w", err)
		}
		if _, err := f.WriteAt(crc, at); err != nil {
			f.Close()
			return fmt.Errorf("mark last entry: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("mark last entry: %w", err)
		}
		return f.Close()
	}
	return nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}
