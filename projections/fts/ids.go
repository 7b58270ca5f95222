package fts

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
)

// The "ids" bucket (format 9) maps a chunk's key (projections.IDKey) to
// the seq of its live version's record. A hex id's key (tag 0, then the
// 16 bytes of the id) is kept in a group: bbolt key = the key's first
// idsGroupLen bytes, value = the group's entries sorted by the rest of
// the key, each that rest (idsSuffixLen bytes) ‖ seq (8, BE). Any other
// key (tag 1) is a bbolt key of its own whose value is the seq, as in
// format 8.
//
// Why groups: a store's chunk ids are random, so a commit of a bulk
// build puts its ids all over the bucket and bbolt holds a node for
// every page it touches, an element for every key on those pages, until
// the transaction commits: one key per chunk made the fts commit's live
// heap grow with the store (bbolt node.put 93 MB at 1M chunks, the
// largest part of the build's live heap) and rewrite every page of the
// bucket at each commit. Grouped, the bucket holds 65,536 keys at most
// whatever the store's size, and its pages hold about 22 bytes per chunk
// instead of 41 (17-byte key, 8-byte value, 16-byte element header).
// The order of the keys (IDKey order) is kept: a group's key is a prefix
// of its entries' keys, and entries are sorted within it (idsCursor).
const (
	idsGroupLen  = 3 // tag 0 and two random bytes: 65,536 groups
	idsSuffixLen = 1 + log.IDSize - idsGroupLen
	idsEntryLen  = idsSuffixLen + 8
)

// grouped reports whether key's entry lives in a group.
func grouped(key []byte) bool { return len(key) == 1+log.IDSize && key[0] == 0 }

// searchGroup returns the index of the first entry of group g whose
// suffix is not below suffix, and whether it equals it.
func searchGroup(g, suffix []byte) (int, bool) {
	lo, hi := 0, len(g)/idsEntryLen
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(g[m*idsEntryLen:m*idsEntryLen+idsSuffixLen], suffix) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo * idsEntryLen
	return lo, i < len(g) && bytes.Equal(g[i:i+idsSuffixLen], suffix)
}

// groupOf returns the group of key (nil when there is none), checking
// its length.
func groupOf(b *bolt.Bucket, key []byte) ([]byte, error) {
	g := b.Get(key[:idsGroupLen])
	if len(g)%idsEntryLen != 0 || (g != nil && len(g) == 0) {
		return nil, fmt.Errorf("ids group %x: %w: %d bytes", key[:idsGroupLen], ErrCorrupt, len(g))
	}
	return g, nil
}

// idsGet returns chunk key's "ids" value (the 8-byte seq), nil when the
// chunk has no live version. The value is valid while b's transaction is.
func idsGet(b *bolt.Bucket, key []byte) ([]byte, error) {
	if !grouped(key) {
		return b.Get(key), nil
	}
	g, err := groupOf(b, key)
	if err != nil {
		return nil, err
	}
	i, ok := searchGroup(g, key[idsGroupLen:])
	if !ok {
		return nil, nil
	}
	return g[i*idsEntryLen+idsSuffixLen : (i+1)*idsEntryLen], nil
}

// idsPut sets chunk key's "ids" value to seq.
func idsPut(b *bolt.Bucket, key []byte, seq uint64) error {
	if !grouped(key) {
		return b.Put(key, seqKey(seq))
	}
	g, err := groupOf(b, key)
	if err != nil {
		return err
	}
	i, ok := searchGroup(g, key[idsGroupLen:])
	at := i * idsEntryLen
	if ok {
		ng := append(make([]byte, 0, len(g)), g...) // g is the database's memory
		binary.BigEndian.PutUint64(ng[at+idsSuffixLen:], seq)
		return b.Put(key[:idsGroupLen], ng)
	}
	ng := make([]byte, 0, len(g)+idsEntryLen)
	ng = append(ng, g[:at]...)
	ng = append(ng, key[idsGroupLen:]...)
	ng = binary.BigEndian.AppendUint64(ng, seq)
	ng = append(ng, g[at:]...)
	return b.Put(key[:idsGroupLen], ng)
}

// idsDelete removes chunk key's "ids" entry, if any.
func idsDelete(b *bolt.Bucket, key []byte) error {
	if !grouped(key) {
		return b.Delete(key)
	}
	g, err := groupOf(b, key)
	if err != nil {
		return err
	}
	i, ok := searchGroup(g, key[idsGroupLen:])
	if !ok {
		return nil
	}
	if len(g) == idsEntryLen {
		return b.Delete(key[:idsGroupLen])
	}
	at := i * idsEntryLen
	ng := make([]byte, 0, len(g)-idsEntryLen)
	ng = append(ng, g[:at]...)
	ng = append(ng, g[at+idsEntryLen:]...)
	return b.Put(key[:idsGroupLen], ng)
}

// idsCursor walks the "ids" bucket in chunk key order, one entry per
// chunk, groups expanded. The key it returns is valid until the next
// call, the value while the transaction is.
type idsCursor struct {
	c    *bolt.Cursor
	gk   []byte // the current group's bbolt key, nil when not in a group
	g    []byte // the current group's entries
	i    int    // the entry of g returned last
	kbuf [1 + log.IDSize]byte
	err  error
}

func newIDsCursor(b *bolt.Bucket) *idsCursor { return &idsCursor{c: b.Cursor()} }

// First returns the first entry (nil key when there is none).
func (c *idsCursor) First() (key, v []byte) { return c.at(c.c.First()) }

// Next returns the entry after the one returned last.
func (c *idsCursor) Next() (key, v []byte) {
	if c.gk != nil && (c.i+1)*idsEntryLen < len(c.g) {
		c.i++
		return c.entry()
	}
	return c.at(c.c.Next())
}

// Err is the damage that ended the walk early, if any.
func (c *idsCursor) Err() error { return c.err }

func (c *idsCursor) at(k, v []byte) ([]byte, []byte) {
	c.gk, c.g, c.i = nil, nil, 0
	if k == nil || k[0] != 0 {
		return k, v
	}
	if len(k) != idsGroupLen || len(v) == 0 || len(v)%idsEntryLen != 0 {
		c.err = fmt.Errorf("ids group %x: %w: %d bytes", k, ErrCorrupt, len(v))
		return nil, nil
	}
	c.gk, c.g = k, v
	return c.entry()
}

func (c *idsCursor) entry() ([]byte, []byte) {
	e := c.g[c.i*idsEntryLen : (c.i+1)*idsEntryLen]
	n := copy(c.kbuf[:], c.gk)
	copy(c.kbuf[n:], e[:idsSuffixLen])
	return c.kbuf[:], e[idsSuffixLen:]
}
