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
// 16 bytes of the id) is kept in a group: bbolt key = a prefix of the
// key (idsGroupLen bytes at first), value = the group's entries sorted
// by the rest of the key, each that rest ‖ seq (8, BE). A group that
// grows past idsMaxGroup entries splits: its key then holds idsSplit and
// its entries move to groups one byte longer (a prefix of any length
// from idsGroupLen to idsMaxPrefix), so ids that share a long prefix
// (time-ordered ids, counters written in hex) never make one group
// that every insert copies. Any other key (tag 1) is a bbolt key of its
// own whose value is the seq, as in format 8.
//
// Why groups: a store's chunk ids are random, so a commit of a bulk
// build puts its ids all over the bucket and bbolt holds a node for
// every page it touches, an element for every key on those pages, until
// the transaction commits: one key per chunk made the fts commit's live
// heap grow with the store (bbolt node.put 93 MB at 1M chunks, the
// largest part of the build's live heap) and rewrite every page of the
// bucket at each commit. Grouped, random ids make 65,536 keys until
// groups pass idsMaxGroup (from about 6M chunks on), and the bucket's
// pages, which a commit of random ids still rewrites, hold about 22
// bytes per chunk instead of 41 (17-byte key, 8-byte value, 16-byte
// element header): 22 MB instead of 39 MB at 1M chunks.
// The order of the keys (IDKey order) is kept: a group's key is a prefix
// of its entries' keys, groups never overlap, and entries are sorted
// within a group (idsCursor).
const (
	idsGroupLen  = 3          // tag 0 and two bytes: 65,536 groups of random ids
	idsMaxPrefix = log.IDSize // the longest group key: one byte of suffix
	idsMaxGroup  = 128        // entries: about 3 KB, within a page
)

// idsSplit is the value of a group key whose group split.
var idsSplit = []byte{0}

// entryLen is the length of an entry of a group whose key is n bytes.
func entryLen(n int) int { return 1 + log.IDSize - n + 8 }

// grouped reports whether key's entry lives in a group.
func grouped(key []byte) bool { return len(key) == 1+log.IDSize && key[0] == 0 }

// searchGroup returns the index of the first entry of group g (entries
// of el bytes) whose suffix is not below suffix, and whether it equals it.
func searchGroup(g, suffix []byte, el int) (int, bool) {
	sl := el - 8
	lo, hi := 0, len(g)/el
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(g[m*el:m*el+sl], suffix) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo * el
	return lo, i < len(g) && bytes.Equal(g[i:i+sl], suffix)
}

// groupOf returns the key of the group key belongs in and the group (nil
// when it does not exist yet), checking its length.
func groupOf(b *bolt.Bucket, key []byte) (gk, g []byte, err error) {
	for n := idsGroupLen; ; n++ {
		g = b.Get(key[:n])
		if bytes.Equal(g, idsSplit) && n < idsMaxPrefix {
			continue
		}
		if len(g)%entryLen(n) != 0 || (g != nil && len(g) == 0) {
			return nil, nil, fmt.Errorf("ids group %x: %w: %d bytes", key[:n], ErrCorrupt, len(g))
		}
		return key[:n], g, nil
	}
}

// idsGet returns chunk key's "ids" value (the 8-byte seq), nil when the
// chunk has no live version. The value is valid while b's transaction is.
func idsGet(b *bolt.Bucket, key []byte) ([]byte, error) {
	if !grouped(key) {
		return b.Get(key), nil
	}
	gk, g, err := groupOf(b, key)
	if err != nil {
		return nil, err
	}
	el := entryLen(len(gk))
	i, ok := searchGroup(g, key[len(gk):], el)
	if !ok {
		return nil, nil
	}
	return g[(i+1)*el-8 : (i+1)*el], nil
}

// idsPut sets chunk key's "ids" value to seq.
func idsPut(b *bolt.Bucket, key []byte, seq uint64) error {
	if !grouped(key) {
		return b.Put(key, seqKey(seq))
	}
	gk, g, err := groupOf(b, key)
	if err != nil {
		return err
	}
	el := entryLen(len(gk))
	i, ok := searchGroup(g, key[len(gk):], el)
	at := i * el
	if ok {
		ng := append(make([]byte, 0, len(g)), g...) // g is the database's memory
		binary.BigEndian.PutUint64(ng[at+el-8:], seq)
		return b.Put(gk, ng)
	}
	ng := make([]byte, 0, len(g)+el)
	ng = append(ng, g[:at]...)
	ng = append(ng, key[len(gk):]...)
	ng = binary.BigEndian.AppendUint64(ng, seq)
	ng = append(ng, g[at:]...)
	if len(ng)/el > idsMaxGroup && len(gk) < idsMaxPrefix {
		return splitGroup(b, gk, ng)
	}
	return b.Put(gk, ng)
}

// splitGroup replaces group g of key gk by the groups one byte longer
// its entries belong in, marking gk split.
func splitGroup(b *bolt.Bucket, gk, g []byte) error {
	el := entryLen(len(gk))
	for i := 0; i < len(g); {
		// The entries that share their first suffix byte go together.
		j := i + el
		for j < len(g) && g[j] == g[i] {
			j += el
		}
		ck := append(append(make([]byte, 0, len(gk)+1), gk...), g[i])
		cg := make([]byte, 0, (j-i)/el*(el-1))
		for e := i; e < j; e += el {
			cg = append(cg, g[e+1:e+el]...)
		}
		if err := b.Put(ck, cg); err != nil {
			return err
		}
		i = j
	}
	return b.Put(gk, idsSplit)
}

// idsDelete removes chunk key's "ids" entry, if any.
func idsDelete(b *bolt.Bucket, key []byte) error {
	if !grouped(key) {
		return b.Delete(key)
	}
	gk, g, err := groupOf(b, key)
	if err != nil {
		return err
	}
	el := entryLen(len(gk))
	i, ok := searchGroup(g, key[len(gk):], el)
	if !ok {
		return nil
	}
	if len(g) == el {
		return b.Delete(gk)
	}
	at := i * el
	ng := make([]byte, 0, len(g)-el)
	ng = append(ng, g[:at]...)
	ng = append(ng, g[at+el:]...)
	return b.Put(gk, ng)
}

// idsCursor walks the "ids" bucket in chunk key order, one entry per
// chunk, groups expanded. The key it returns is valid until the next
// call, the value while the transaction is.
type idsCursor struct {
	c    *bolt.Cursor
	gk   []byte // the current group's bbolt key, nil when not in a group
	g    []byte // the current group's entries
	el   int    // their length
	i    int    // the entry of g returned last
	kbuf [1 + log.IDSize]byte
	err  error
}

func newIDsCursor(b *bolt.Bucket) *idsCursor { return &idsCursor{c: b.Cursor()} }

// First returns the first entry (nil key when there is none).
func (c *idsCursor) First() (key, v []byte) { return c.at(c.c.First()) }

// Next returns the entry after the one returned last.
func (c *idsCursor) Next() (key, v []byte) {
	if c.gk != nil && (c.i+1)*c.el < len(c.g) {
		c.i++
		return c.entry()
	}
	return c.at(c.c.Next())
}

// Err is the damage that ended the walk early, if any.
func (c *idsCursor) Err() error { return c.err }

func (c *idsCursor) at(k, v []byte) ([]byte, []byte) {
	for ; k != nil && k[0] == 0 && bytes.Equal(v, idsSplit) && len(k) < idsMaxPrefix; k, v = c.c.Next() {
	}
	c.gk, c.g, c.i = nil, nil, 0
	if k == nil || k[0] != 0 {
		return k, v
	}
	if len(k) < idsGroupLen || len(k) > idsMaxPrefix || len(v) == 0 || len(v)%entryLen(len(k)) != 0 {
		c.err = fmt.Errorf("ids group %x: %w: %d bytes", k, ErrCorrupt, len(v))
		return nil, nil
	}
	c.gk, c.g, c.el = k, v, entryLen(len(k))
	return c.entry()
}

func (c *idsCursor) entry() ([]byte, []byte) {
	e := c.g[c.i*c.el : (c.i+1)*c.el]
	n := copy(c.kbuf[:], c.gk)
	copy(c.kbuf[n:], e[:c.el-8])
	return c.kbuf[:], e[c.el-8:]
}
