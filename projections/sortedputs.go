package projections

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// SortedWrites buffers the puts and deletes of one bbolt bucket within a
// write transaction and applies them in key order (Flush). bbolt keeps a
// transaction's changes to a leaf in one in-memory node that is split only
// at commit, and inserts into it with a copy of every entry after the
// insertion point: a commit of 10,000 chunks whose index keys all land at
// the end of one bucket (times that grow with the log) in the random order
// of their chunk ids moved ~25M entries, a tenth of a catch-up's CPU. In
// key order each insert appends.
//
// The bucket ends up exactly as if the operations had been applied as
// they came: operations on different keys commute, and of those on one
// key only the last counts (put overwrites, delete of a missing key does
// nothing). Get sees the buffered writes. The bucket must not be read
// through other paths (cursors) until Flush.
type SortedWrites struct {
	b    *bolt.Bucket
	ops  map[string]sortedOp
	fill bool // FillAppends
}

type sortedOp struct {
	v   []byte
	del bool
}

// NewSortedWrites buffers writes to b.
func NewSortedWrites(b *bolt.Bucket) *SortedWrites {
	return &SortedWrites{b: b, ops: make(map[string]sortedOp)}
}

// FillAppends makes a Flush that only puts keys after the bucket's last
// key (index keys that grow with the log, in a build) leave the pages it
// fills full, not half full: bbolt splits a node at the bucket's
// FillPercent (half), which suits inserts between keys, and a page it
// appended is never filled again, so a bulk build left these buckets at
// half their pages' room and the compaction after it rewrote them. It
// sets the bucket's FillPercent for the rest of the transaction. It
// returns s.
func (s *SortedWrites) FillAppends() *SortedWrites {
	s.fill = true
	return s
}

// Put buffers a put of k = v. v is kept as given (not copied): the caller
// must not change it before Flush.
func (s *SortedWrites) Put(k, v []byte) error {
	if len(k) == 0 {
		return bolt.ErrKeyRequired
	}
	if len(k) > bolt.MaxKeySize {
		return bolt.ErrKeyTooLarge
	}
	if int64(len(v)) > bolt.MaxValueSize {
		return bolt.ErrValueTooLarge
	}
	s.ops[string(k)] = sortedOp{v: v}
	return nil
}

// Delete buffers a delete of k.
func (s *SortedWrites) Delete(k []byte) error {
	s.ops[string(k)] = sortedOp{del: true}
	return nil
}

// Get returns k's value as of the buffered writes (nil if absent).
func (s *SortedWrites) Get(k []byte) []byte {
	if op, ok := s.ops[string(k)]; ok {
		if op.del {
			return nil
		}
		return op.v
	}
	return s.b.Get(k)
}

// Flush applies the buffered writes in key order and empties the buffer.
func (s *SortedWrites) Flush() error {
	keys := make([]string, 0, len(s.ops))
	for k := range s.ops {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	if s.fill && len(keys) > 0 && s.appends(keys[0]) {
		s.b.FillPercent = 1
	}
	for _, k := range keys {
		op := s.ops[k]
		var err error
		if op.del {
			err = s.b.Delete([]byte(k))
		} else {
			err = s.b.Put([]byte(k), op.v)
		}
		if err != nil {
			return err
		}
	}
	clear(s.ops)
	return nil
}

// appends reports whether the buffered writes are all puts of keys from
// first (the smallest) on, after the bucket's last key.
func (s *SortedWrites) appends(first string) bool {
	for _, op := range s.ops {
		if op.del {
			return false
		}
	}
	last, _ := s.b.Cursor().Last()
	return last == nil || first > string(last)
}

// SortByKey sorts s by key(element), byte-wise, in place. It sorts (first
// 8 bytes, place) pairs and then moves each element once: the keys bulk
// writes sort are hashes and random ids, so their first 8 bytes nearly
// always decide, and comparing two integers instead of two keys, on 16
// bytes instead of an element, took most of a flush's sort (8% of a 400K
// dedup build). Keys are expected distinct; of equal keys the order is
// unspecified.
func SortByKey[T any, K ~string | ~[]byte](s []T, key func(*T) K) {
	type ref struct {
		pfx uint64 // big-endian, zero-padded: ordered as the keys are when it differs
		i   int
	}
	refs := make([]ref, len(s))
	for i := range s {
		refs[i] = ref{keyPrefix8(key(&s[i])), i}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.pfx != b.pfx {
			return cmp.Compare(a.pfx, b.pfx)
		}
		return compareKeys(key(&s[a.i]), key(&s[b.i]))
	})
	// s[j] takes the element at refs[j].i: each cycle of that permutation
	// is followed once (a done entry's place is -1), with no copy of s.
	for j := range refs {
		if refs[j].i < 0 {
			continue
		}
		tmp, k := s[j], j
		for refs[k].i != j {
			next := refs[k].i
			s[k] = s[next]
			refs[k].i = -1
			k = next
		}
		s[k] = tmp
		refs[k].i = -1
	}
}

// keyPrefix8 is k's first 8 bytes as a big-endian integer, zero-padded.
func keyPrefix8[K ~string | ~[]byte](k K) uint64 {
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// compareKeys is strings.Compare or bytes.Compare, whichever K is, with
// no conversion that copies.
func compareKeys[K ~string | ~[]byte](a, b K) int {
	switch x := any(a).(type) {
	case string:
		return strings.Compare(x, any(b).(string))
	case []byte:
		return bytes.Compare(x, any(b).([]byte))
	}
	// A named key type (~string, ~[]byte): its bytes compare the same.
	return bytes.Compare([]byte(a), []byte(b))
}
