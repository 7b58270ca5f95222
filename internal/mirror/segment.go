package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/unlimitedcontext/ucl/log/eventhash"
)

// Wire constants of the segment format. Do not change: they are frozen by
// testdata/segment-v1.golden and by every segment already on Arweave.
const (
	// SegmentMagic opens every segment. Do not change.
	SegmentMagic = "UCSG"
	// SegmentVersion is the segment format version. Do not change; a new
	// layout gets a new number and DecodeSegment keeps reading this one.
	SegmentVersion uint16 = 1
	// SegmentHeaderSize is the fixed header length in bytes. Do not change.
	SegmentHeaderSize = 140
	// recordLenSize is the size of each record's length prefix. Do not change.
	recordLenSize = 4
)

// DefaultSegmentBytes is the default byte cap of a segment.
const DefaultSegmentBytes = 256 << 10

// MaxRecordSize bounds a single record (it must fit the u32 prefix and a
// transaction comfortably).
const MaxRecordSize = 64 << 20

// Hash is a SHA-256 digest.
type Hash = [32]byte

// Record is one encoded log event as the log stores it. Its hash is the
// event hash of Raw (package eventhash: SHA-256(Raw) before format 4);
// the segment does not otherwise interpret Raw.
type Record struct {
	Seq uint64
	Raw []byte
}

// Hash returns the event hash of r.Raw.
func (r Record) Hash() Hash { return eventhash.Sum(r.Raw) }

// Segment is a decoded, verified segment.
type Segment struct {
	LogID      [16]byte
	FirstSeq   uint64
	LastSeq    uint64
	PrevHash   Hash // hash of event FirstSeq-1, zero when FirstSeq == 1
	HeadHash   Hash // hash of event LastSeq
	MerkleRoot Hash
	Records    []Record
}

// Count returns the number of records.
func (s *Segment) Count() int { return len(s.Records) }

var (
	// ErrSegmentMagic is returned when data does not start with SegmentMagic.
	ErrSegmentMagic = errors.New("arweave: not a ucl segment")
	// ErrSegmentVersion is returned when the format version or flags are not
	// ones this package reads.
	ErrSegmentVersion = errors.New("arweave: unsupported segment version")
	// ErrSegmentTruncated is returned when the header or a record is cut
	// short, or when bytes follow the last record.
	ErrSegmentTruncated = errors.New("arweave: segment truncated or has trailing bytes")
	// ErrSegmentRange is returned when first/last/count disagree, a seq is 0
	// or the prev hash of a segment starting at seq 1 is not zero.
	ErrSegmentRange = errors.New("arweave: segment seq range invalid")
	// ErrHeadHash is returned when the hash of the last record differs from
	// the head hash in the header.
	ErrHeadHash = errors.New("arweave: segment head hash mismatch")
	// ErrMerkleRoot is returned when the Merkle root over the records differs
	// from the header.
	ErrMerkleRoot = errors.New("arweave: segment Merkle root mismatch")
	// ErrEmptySegment is returned when encoding zero records.
	ErrEmptySegment = errors.New("arweave: empty segment")
	// ErrNotContiguous is returned when records passed to EncodeSegment or a
	// Segmenter are not dense and increasing by one.
	ErrNotContiguous = errors.New("arweave: records not contiguous")
	// ErrRecordTooLarge is returned when a record exceeds MaxRecordSize.
	ErrRecordTooLarge = errors.New("arweave: record too large")
)

// SegmentError reports a segment that failed to decode or verify. It
// carries the byte offset (and the seq when known) and unwraps to one of the
// sentinel errors above.
type SegmentError struct {
	Offset int    // byte offset in the segment where the problem was found
	Seq    uint64 // record seq, 0 when not about one record
	Err    error
}

func (e *SegmentError) Error() string {
	if e.Seq != 0 {
		return fmt.Sprintf("decode segment: seq %d at offset %d: %v", e.Seq, e.Offset, e.Err)
	}
	return fmt.Sprintf("decode segment: offset %d: %v", e.Offset, e.Err)
}

func (e *SegmentError) Unwrap() error { return e.Err }

// EncodeSegment builds a segment of recs (dense seqs, at least one record)
// belonging to logID. prevHash is the hash of event recs[0].Seq-1 and must be
// zero when recs[0].Seq == 1.
func EncodeSegment(logID [16]byte, prevHash Hash, recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return nil, ErrEmptySegment
	}
	if recs[0].Seq == 0 {
		return nil, fmt.Errorf("encode segment: %w: seq 0", ErrSegmentRange)
	}
	if recs[0].Seq == 1 && prevHash != (Hash{}) {
		return nil, fmt.Errorf("encode segment: %w: prev hash of seq 1 must be zero", ErrSegmentRange)
	}
	if uint64(len(recs)) > uint64(^uint32(0)) {
		return nil, fmt.Errorf("encode segment: %w: too many records", ErrSegmentRange)
	}
	size := SegmentHeaderSize
	hashes := make([]Hash, len(recs))
	for i, r := range recs {
		if i > 0 && r.Seq != recs[i-1].Seq+1 {
			return nil, fmt.Errorf("encode segment: %w: seq %d after %d", ErrNotContiguous, r.Seq, recs[i-1].Seq)
		}
		if len(r.Raw) > MaxRecordSize {
			return nil, fmt.Errorf("encode segment: seq %d: %w", r.Seq, ErrRecordTooLarge)
		}
		hashes[i] = r.Hash()
		size += recordLenSize + len(r.Raw)
	}
	first, last := recs[0].Seq, recs[len(recs)-1].Seq
	root := MerkleRoot(hashes)
	buf := make([]byte, SegmentHeaderSize, size)
	copy(buf[0:4], SegmentMagic)
	binary.LittleEndian.PutUint16(buf[4:6], SegmentVersion)
	binary.LittleEndian.PutUint16(buf[6:8], 0)
	copy(buf[8:24], logID[:])
	binary.LittleEndian.PutUint64(buf[24:32], first)
	binary.LittleEndian.PutUint64(buf[32:40], last)
	binary.LittleEndian.PutUint32(buf[40:44], uint32(len(recs)))
	copy(buf[44:76], prevHash[:])
	copy(buf[76:108], hashes[len(hashes)-1][:])
	copy(buf[108:140], root[:])
	for _, r := range recs {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(r.Raw)))
		buf = append(buf, r.Raw...)
	}
	return buf, nil
}

// SegmentHeader is the fixed header of a segment, readable without decoding
// the records.
type SegmentHeader struct {
	LogID      [16]byte
	FirstSeq   uint64
	LastSeq    uint64
	Count      uint32
	PrevHash   Hash
	HeadHash   Hash
	MerkleRoot Hash
}

// DecodeSegmentHeader parses and checks the fixed header only.
func DecodeSegmentHeader(data []byte) (*SegmentHeader, error) {
	if len(data) < SegmentHeaderSize {
		if len(data) >= 4 && !bytes.Equal(data[:4], []byte(SegmentMagic)) {
			return nil, &SegmentError{Offset: 0, Err: ErrSegmentMagic}
		}
		return nil, &SegmentError{Offset: len(data), Err: ErrSegmentTruncated}
	}
	if !bytes.Equal(data[:4], []byte(SegmentMagic)) {
		return nil, &SegmentError{Offset: 0, Err: ErrSegmentMagic}
	}
	if v := binary.LittleEndian.Uint16(data[4:6]); v != SegmentVersion {
		return nil, &SegmentError{Offset: 4, Err: fmt.Errorf("%w: %d", ErrSegmentVersion, v)}
	}
	if f := binary.LittleEndian.Uint16(data[6:8]); f != 0 {
		return nil, &SegmentError{Offset: 6, Err: fmt.Errorf("%w: flags %#x", ErrSegmentVersion, f)}
	}
	h := &SegmentHeader{
		FirstSeq: binary.LittleEndian.Uint64(data[24:32]),
		LastSeq:  binary.LittleEndian.Uint64(data[32:40]),
		Count:    binary.LittleEndian.Uint32(data[40:44]),
	}
	copy(h.LogID[:], data[8:24])
	copy(h.PrevHash[:], data[44:76])
	copy(h.HeadHash[:], data[76:108])
	copy(h.MerkleRoot[:], data[108:140])
	switch {
	case h.Count == 0:
		return nil, &SegmentError{Offset: 40, Err: fmt.Errorf("%w: count 0", ErrSegmentRange)}
	case h.FirstSeq == 0:
		return nil, &SegmentError{Offset: 24, Err: fmt.Errorf("%w: first seq 0", ErrSegmentRange)}
	case h.LastSeq < h.FirstSeq || h.LastSeq-h.FirstSeq != uint64(h.Count)-1:
		return nil, &SegmentError{Offset: 32, Err: fmt.Errorf("%w: first %d last %d count %d", ErrSegmentRange, h.FirstSeq, h.LastSeq, h.Count)}
	case h.FirstSeq == 1 && h.PrevHash != (Hash{}):
		return nil, &SegmentError{Offset: 44, Err: fmt.Errorf("%w: prev hash of seq 1 not zero", ErrSegmentRange)}
	}
	// Each record needs at least its length prefix: reject absurd counts
	// before allocating.
	if uint64(h.Count)*recordLenSize > uint64(len(data)-SegmentHeaderSize) {
		return nil, &SegmentError{Offset: SegmentHeaderSize, Err: fmt.Errorf("%w: count %d cannot fit %d bytes", ErrSegmentTruncated, h.Count, len(data))}
	}
	return h, nil
}

// DecodeSegment parses data and verifies it (see the package doc). The
// returned records alias data.
func DecodeSegment(data []byte) (*Segment, error) {
	h, err := DecodeSegmentHeader(data)
	if err != nil {
		return nil, err
	}
	seg := &Segment{
		LogID:      h.LogID,
		FirstSeq:   h.FirstSeq,
		LastSeq:    h.LastSeq,
		PrevHash:   h.PrevHash,
		HeadHash:   h.HeadHash,
		MerkleRoot: h.MerkleRoot,
		Records:    make([]Record, 0, h.Count),
	}
	hashes := make([]Hash, 0, h.Count)
	off := SegmentHeaderSize
	for i := uint32(0); i < h.Count; i++ {
		seq := h.FirstSeq + uint64(i)
		if len(data)-off < recordLenSize {
			return nil, &SegmentError{Offset: off, Seq: seq, Err: ErrSegmentTruncated}
		}
		n := binary.LittleEndian.Uint32(data[off:])
		off += recordLenSize
		if uint64(n) > uint64(len(data)-off) {
			return nil, &SegmentError{Offset: off - recordLenSize, Seq: seq, Err: fmt.Errorf("%w: record length %d", ErrSegmentTruncated, n)}
		}
		raw := data[off : off+int(n) : off+int(n)]
		off += int(n)
		seg.Records = append(seg.Records, Record{Seq: seq, Raw: raw})
		hashes = append(hashes, eventhash.Sum(raw))
	}
	if off != len(data) {
		return nil, &SegmentError{Offset: off, Err: fmt.Errorf("%w: %d bytes after last record", ErrSegmentTruncated, len(data)-off)}
	}
	if hashes[len(hashes)-1] != h.HeadHash {
		return nil, &SegmentError{Offset: 76, Seq: h.LastSeq, Err: ErrHeadHash}
	}
	if MerkleRoot(hashes) != h.MerkleRoot {
		return nil, &SegmentError{Offset: 108, Err: ErrMerkleRoot}
	}
	return seg, nil
}

// MerkleRoot returns the RFC 6962 Merkle tree hash over leaf hashes (see the
// package doc). The root of an empty list is SHA-256 of nothing.
func MerkleRoot(leaves []Hash) Hash {
	if len(leaves) == 0 {
		return sha256.Sum256(nil)
	}
	level := make([]Hash, len(leaves))
	for i, l := range leaves {
		level[i] = leafHash(l)
	}
	return merkleLevel(level)
}

// merkleLevel computes MTH over already leaf-hashed nodes using the RFC 6962
// split (largest power of two smaller than n on the left).
func merkleLevel(nodes []Hash) Hash {
	if len(nodes) == 1 {
		return nodes[0]
	}
	k := 1
	for k*2 < len(nodes) {
		k *= 2
	}
	return nodeHash(merkleLevel(nodes[:k]), merkleLevel(nodes[k:]))
}

func leafHash(h Hash) Hash {
	var b [33]byte
	b[0] = 0x00
	copy(b[1:], h[:])
	return sha256.Sum256(b[:])
}

func nodeHash(l, r Hash) Hash {
	var b [65]byte
	b[0] = 0x01
	copy(b[1:33], l[:])
	copy(b[33:], r[:])
	return sha256.Sum256(b[:])
}

// EncodedSegmentSize returns the encoded size of a segment of recs.
func EncodedSegmentSize(recs []Record) int {
	n := SegmentHeaderSize
	for _, r := range recs {
		n += recordLenSize + len(r.Raw)
	}
	return n
}

// Segmenter cuts a seq-ordered stream of records into segments of at most
// MaxBytes encoded bytes. A record too large to share a segment gets one of
// its own. It is not safe for concurrent use.
type Segmenter struct {
	logID    [16]byte
	maxBytes int
	prev     Hash   // hash of the event before the pending segment
	next     uint64 // expected next seq, 0 before the first record
	pending  []Record
	size     int
}

// EncodedSegment is one segment cut by a Segmenter.
type EncodedSegment struct {
	FirstSeq, LastSeq uint64
	PrevHash          Hash
	HeadHash          Hash
	Data              []byte
}

// NewSegmenter returns a Segmenter for logID whose first record follows an
// event with hash prevHash (zero when starting at seq 1). maxBytes <= 0
// selects DefaultSegmentBytes.
func NewSegmenter(logID [16]byte, prevHash Hash, maxBytes int) *Segmenter {
	if maxBytes <= 0 {
		maxBytes = DefaultSegmentBytes
	}
	return &Segmenter{logID: logID, maxBytes: maxBytes, prev: prevHash}
}

// Add appends r and returns the segment completed by it, if any (nil
// otherwise). Records must be dense; the Raw bytes are copied.
func (s *Segmenter) Add(r Record) (*EncodedSegment, error) {
	if s.next != 0 && r.Seq != s.next {
		return nil, fmt.Errorf("segment records: %w: got seq %d, want %d", ErrNotContiguous, r.Seq, s.next)
	}
	if len(r.Raw) > MaxRecordSize {
		return nil, fmt.Errorf("segment records: seq %d: %w", r.Seq, ErrRecordTooLarge)
	}
	var out *EncodedSegment
	add := recordLenSize + len(r.Raw)
	if len(s.pending) > 0 && SegmentHeaderSize+s.size+add > s.maxBytes {
		seg, err := s.Flush()
		if err != nil {
			return nil, err
		}
		out = seg
	}
	s.pending = append(s.pending, Record{Seq: r.Seq, Raw: bytes.Clone(r.Raw)})
	s.size += add
	s.next = r.Seq + 1
	return out, nil
}

// Flush returns the pending records as a segment, or nil if none are pending.
func (s *Segmenter) Flush() (*EncodedSegment, error) {
	if len(s.pending) == 0 {
		return nil, nil
	}
	data, err := EncodeSegment(s.logID, s.prev, s.pending)
	if err != nil {
		return nil, err
	}
	seg := &EncodedSegment{
		FirstSeq: s.pending[0].Seq,
		LastSeq:  s.pending[len(s.pending)-1].Seq,
		PrevHash: s.prev,
		HeadHash: s.pending[len(s.pending)-1].Hash(),
		Data:     data,
	}
	s.prev = seg.HeadHash
	s.pending = s.pending[:0]
	s.size = 0
	return seg, nil
}

// Pending returns the number of records not yet in a segment.
func (s *Segmenter) Pending() int { return len(s.pending) }
