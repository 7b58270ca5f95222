package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var testLogID = [16]byte{0: 0xAB, 1: 0xCD, 15: 0x01}

func TestSegmentRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from       uint64
		n, size    int
		prevIsZero bool
	}{
		{"one record from 1", 1, 1, 10, true},
		{"many from 1", 1, 37, 100, true},
		{"later range", 1000, 5, 0, false},
		{"empty raws", 7, 3, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := makeRecords(tc.from, tc.n, tc.size)
			var prev Hash
			if !tc.prevIsZero {
				prev = sha256.Sum256([]byte("previous event"))
			}
			data, err := EncodeSegment(testLogID, prev, recs)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) != EncodedSegmentSize(recs) {
				t.Fatalf("size %d, EncodedSegmentSize %d", len(data), EncodedSegmentSize(recs))
			}
			seg, err := DecodeSegment(data)
			if err != nil {
				t.Fatal(err)
			}
			if seg.LogID != testLogID || seg.FirstSeq != tc.from || seg.LastSeq != tc.from+uint64(tc.n)-1 || seg.PrevHash != prev {
				t.Fatalf("header mismatch: %+v", seg)
			}
			if seg.HeadHash != recs[len(recs)-1].Hash() {
				t.Fatal("head hash is not the last record's hash")
			}
			if len(seg.Records) != tc.n {
				t.Fatalf("%d records, want %d", len(seg.Records), tc.n)
			}
			for i, r := range seg.Records {
				if r.Seq != recs[i].Seq || !bytes.Equal(r.Raw, recs[i].Raw) {
					t.Fatalf("record %d differs", i)
				}
			}
		})
	}
}

func TestEncodeSegmentRejects(t *testing.T) {
	recs := makeRecords(1, 3, 8)
	gappy := []Record{recs[0], recs[2]}
	for _, tc := range []struct {
		name string
		prev Hash
		recs []Record
		want error
	}{
		{"empty", Hash{}, nil, ErrEmptySegment},
		{"gap", Hash{}, gappy, ErrNotContiguous},
		{"seq 0", Hash{}, []Record{{Seq: 0, Raw: []byte("x")}}, ErrSegmentRange},
		{"prev on seq 1", Hash{1}, recs, ErrSegmentRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := EncodeSegment(testLogID, tc.prev, tc.recs); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeSegmentCorruption(t *testing.T) {
	recs := makeRecords(5, 4, 20)
	good, err := EncodeSegment(testLogID, Hash{9}, recs)
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrSegmentTruncated},
		{"bad magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), ErrSegmentMagic},
		{"short bad magic", []byte("JUNK"), ErrSegmentMagic},
		{"version 2", mut(func(b []byte) []byte { b[4] = 2; return b }), ErrSegmentVersion},
		{"flags set", mut(func(b []byte) []byte { b[6] = 1; return b }), ErrSegmentVersion},
		{"header only", good[:SegmentHeaderSize], ErrSegmentTruncated},
		{"cut in record", good[:len(good)-3], ErrSegmentTruncated},
		{"trailing byte", append(bytes.Clone(good), 0), ErrSegmentTruncated},
		{"count 0", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[40:], 0); return b }), ErrSegmentRange},
		{"count disagrees", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[40:], 3); return b }), ErrSegmentRange},
		{"huge count", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[40:], 1<<31)
			binary.LittleEndian.PutUint64(b[32:], 5+1<<31-1)
			return b
		}), ErrSegmentTruncated},
		{"first 0", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[24:], 0)
			binary.LittleEndian.PutUint64(b[32:], 3)
			return b
		}), ErrSegmentRange},
		{"huge record length", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[SegmentHeaderSize:], 1<<31); return b }), ErrSegmentTruncated},
		{"flipped byte in first record", mut(func(b []byte) []byte { b[SegmentHeaderSize+6] ^= 1; return b }), ErrMerkleRoot},
		{"flipped byte in last record", mut(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrHeadHash},
		{"flipped head hash", mut(func(b []byte) []byte { b[80] ^= 1; return b }), ErrHeadHash},
		{"flipped root", mut(func(b []byte) []byte { b[120] ^= 1; return b }), ErrMerkleRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSegment(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var se *SegmentError
			if !errors.As(err, &se) {
				t.Fatalf("err %T is not a *SegmentError", err)
			}
		})
	}
	// A segment starting at seq 1 must have a zero prev hash.
	one, _ := EncodeSegment(testLogID, Hash{}, makeRecords(1, 2, 4))
	one[50] = 1
	if _, err := DecodeSegment(one); !errors.Is(err, ErrSegmentRange) {
		t.Fatalf("nonzero prev at seq 1: err = %v", err)
	}
}

// TestMerkleRoot checks the RFC 6962 construction against hashes computed by
// hand from its definition.
func TestMerkleRoot(t *testing.T) {
	h := func(parts ...[]byte) Hash { return sha256.Sum256(bytes.Join(parts, nil)) }
	var l [5]Hash
	for i := range l {
		l[i] = sha256.Sum256([]byte{byte(i)})
	}
	leaf := func(i int) []byte { x := h([]byte{0}, l[i][:]); return x[:] }
	node := func(a, b []byte) []byte { x := h([]byte{1}, a, b); return x[:] }
	n01 := node(leaf(0), leaf(1))
	n23 := node(leaf(2), leaf(3))
	for _, tc := range []struct {
		n    int
		want []byte
	}{
		{1, leaf(0)},
		{2, n01},
		{3, node(n01, leaf(2))},
		{4, node(n01, n23)},
		{5, node(node(n01, n23), leaf(4))},
	} {
		got := MerkleRoot(l[:tc.n])
		if !bytes.Equal(got[:], tc.want) {
			t.Errorf("n=%d: root %x, want %x", tc.n, got, tc.want)
		}
	}
	if MerkleRoot(nil) != sha256.Sum256(nil) {
		t.Error("empty root is not SHA-256 of nothing")
	}
}

func TestSegmentGolden(t *testing.T) {
	recs := []Record{
		{Seq: 1, Raw: []byte("first event")},
		{Seq: 2, Raw: []byte("")},
		{Seq: 3, Raw: []byte("third event, a little longer")},
	}
	data, err := EncodeSegment([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Hash{}, recs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "segment-v1.golden")
	if os.Getenv("UCL_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with UCL_UPDATE_GOLDEN=1 only for a deliberate format change)", err)
	}
	if !bytes.Equal(data, want) {
		t.Fatal("segment encoding changed: the wire format is frozen (see segment.go)")
	}
	seg, err := DecodeSegment(want)
	if err != nil {
		t.Fatal(err)
	}
	if seg.LastSeq != 3 || string(seg.Records[2].Raw) != "third event, a little longer" {
		t.Fatalf("golden decodes to %+v", seg)
	}
}

func TestSegmenter(t *testing.T) {
	recs := makeRecords(1, 200, 100)
	big := Record{Seq: 201, Raw: bytes.Repeat([]byte{7}, 5000)}
	recs = append(recs, big)
	recs = append(recs, makeRecords(202, 10, 100)...)
	const maxBytes = 2000
	s := NewSegmenter(testLogID, Hash{}, maxBytes)
	var segs []*EncodedSegment
	for _, r := range recs {
		seg, err := s.Add(r)
		if err != nil {
			t.Fatal(err)
		}
		if seg != nil {
			segs = append(segs, seg)
		}
	}
	last, err := s.Flush()
	if err != nil || last == nil {
		t.Fatalf("flush: %v %v", last, err)
	}
	segs = append(segs, last)
	next, prev := uint64(1), Hash{}
	for _, es := range segs {
		seg, err := DecodeSegment(es.Data)
		if err != nil {
			t.Fatal(err)
		}
		if seg.FirstSeq != next || seg.PrevHash != prev || es.PrevHash != prev || es.HeadHash != seg.HeadHash {
			t.Fatalf("segment %d..%d does not continue at %d", seg.FirstSeq, seg.LastSeq, next)
		}
		if len(es.Data) > maxBytes && seg.Count() != 1 {
			t.Fatalf("segment of %d bytes with %d records exceeds the cap", len(es.Data), seg.Count())
		}
		if seg.FirstSeq == 201 && seg.Count() != 1 {
			t.Fatalf("oversized record shares a segment")
		}
		next, prev = seg.LastSeq+1, seg.HeadHash
	}
	if next != 212 {
		t.Fatalf("segments end at %d, want 211", next-1)
	}
	if _, err := s.Add(Record{Seq: 999}); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("gap accepted: %v", err)
	}
}

func FuzzDecodeSegment(f *testing.F) {
	good, _ := EncodeSegment(testLogID, Hash{}, makeRecords(1, 3, 10))
	later, _ := EncodeSegment(testLogID, Hash{5}, makeRecords(9, 2, 0))
	f.Add(good)
	f.Add(later)
	f.Add(good[:SegmentHeaderSize+2])
	f.Add([]byte("UCSG"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		seg, err := DecodeSegment(data)
		if err != nil {
			var se *SegmentError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SegmentError", err)
			}
			return
		}
		// Whatever decodes must re-encode to the same bytes.
		again, err := EncodeSegment(seg.LogID, seg.PrevHash, seg.Records)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decode/encode is not the identity")
		}
	})
}
