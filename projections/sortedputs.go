package projections

import (
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
	b   *bolt.Bucket
	ops map[string]sortedOp
}

type sortedOp struct {
	v   []byte
	del bool
}

// NewSortedWrites buffers writes to b.
func NewSortedWrites(b *bolt.Bucket) *SortedWrites {
	return &SortedWrites{b: b, ops: make(map[string]sortedOp)}
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
