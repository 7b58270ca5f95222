package projections

import (
	"bytes"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// PendingKeys maps the keys a bulk build defers from a bbolt bucket to
// 8-byte values (a seq, a slot), until they are written in key order
// (Write; Each lists them). Not safe for concurrent use.
//
// A hex chunk id's key (IDKey: tag 0 and 16 bytes), nearly every key, is
// held in one array in key order, 25 bytes an entry, plus a small map
// of the latest keys not yet merged into it; any other key by string.
// Maps of every key held ~50 bytes an entry: a 2M-event first build kept
// three of them (summary, timelines, vectors), 310 MB of a live heap of
// 450-600 MB, near `ucl project`'s 512 MB memory limit, and the collector
// ran back to back (33 s of 299 s of CPU, against 5 s of 120 at 1M).
// The array also hands Each its keys: no sorted copy at the end.
type PendingKeys struct {
	sorted []pendingEntry                    // hex keys in key order, none in tail
	gone   map[[pendingHexSize]byte]struct{} // deleted keys still in sorted
	tail   map[[16]byte]uint64               // hex keys not merged yet
	other  map[string]uint64
	// starts[b] is the index in sorted of the first key whose bytes 1-2
	// (after the tag) are b or more, when sorted is large (starts[65536]
	// = len(sorted)); nil otherwise.
	starts []uint32
}

// pendingHexSize is a hex id's key: tag 0 and 16 bytes.
const pendingHexSize = 17

// pendingEntry is one hex key (tag included, so Each hands out a slice
// of it) and its value; 25 bytes, no padding.
type pendingEntry struct {
	k [pendingHexSize]byte
	v [8]byte
}

// pendingTailMin is the least the tail map holds before it is merged into
// the array; a merge copies the array, so the tail also grows with it
// (1/16 of it), and a build of n keys copies about 16·n entries in all.
const pendingTailMin = 1 << 16

// pendingIndexMin is the array size from which lookups start from
// PendingKeys.starts (256 KB) rather than a search of the whole array.
const pendingIndexMin = 1 << 16

// NewPendingKeys returns an empty set.
func NewPendingKeys() *PendingKeys {
	return &PendingKeys{tail: map[[16]byte]uint64{}, other: map[string]uint64{}, gone: map[[pendingHexSize]byte]struct{}{}}
}

func pendingHex(key []byte) (k [16]byte, ok bool) {
	if len(key) != pendingHexSize || key[0] != 0 {
		return k, false
	}
	copy(k[:], key[1:])
	return k, true
}

// find returns the index in sorted of the hex key k, or -1.
func (p *PendingKeys) find(k *[16]byte) int {
	lo, hi := 0, len(p.sorted)
	if p.starts != nil {
		b := int(k[0])<<8 | int(k[1])
		lo, hi = int(p.starts[b]), int(p.starts[b+1])
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(p.sorted[m].k[1:], k[:]) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(p.sorted) && [16]byte(p.sorted[lo].k[1:]) == *k {
		return lo
	}
	return -1
}

// Get returns key's value and whether it is pending.
func (p *PendingKeys) Get(key []byte) (uint64, bool) {
	k, ok := pendingHex(key)
	if !ok {
		v, ok := p.other[string(key)]
		return v, ok
	}
	if v, ok := p.tail[k]; ok {
		return v, true
	}
	if i := p.find(&k); i >= 0 {
		if _, del := p.gone[p.sorted[i].k]; !del {
			return binary.LittleEndian.Uint64(p.sorted[i].v[:]), true
		}
	}
	return 0, false
}

// Set makes key pending with value v.
func (p *PendingKeys) Set(key []byte, v uint64) {
	k, ok := pendingHex(key)
	if !ok {
		p.other[string(key)] = v
		return
	}
	if _, ok := p.tail[k]; !ok {
		if i := p.find(&k); i >= 0 {
			binary.LittleEndian.PutUint64(p.sorted[i].v[:], v)
			delete(p.gone, p.sorted[i].k)
			return
		}
	}
	p.tail[k] = v
	if len(p.tail) >= max(pendingTailMin, len(p.sorted)/16) {
		p.merge()
	}
}

// Delete drops key.
func (p *PendingKeys) Delete(key []byte) {
	k, ok := pendingHex(key)
	if !ok {
		delete(p.other, string(key))
		return
	}
	if _, ok := p.tail[k]; ok {
		delete(p.tail, k)
		return
	}
	if i := p.find(&k); i >= 0 {
		p.gone[p.sorted[i].k] = struct{}{}
	}
}

// merge moves the tail into sorted (and drops the deleted entries).
func (p *PendingKeys) merge() {
	if len(p.gone) == 0 && len(p.tail) == 0 {
		return
	}
	if len(p.gone) > 0 {
		p.sorted = slices.DeleteFunc(p.sorted, func(e pendingEntry) bool {
			_, del := p.gone[e.k]
			return del
		})
		clear(p.gone)
	}
	if len(p.tail) > 0 {
		t := make([]pendingEntry, 0, len(p.tail))
		for k, v := range p.tail {
			var e pendingEntry
			copy(e.k[1:], k[:])
			binary.LittleEndian.PutUint64(e.v[:], v)
			t = append(t, e)
		}
		clear(p.tail)
		SortByKey(t, func(e *pendingEntry) []byte { return e.k[:] })
		// Merged from the back, in place: no key of the tail is in sorted.
		n := len(p.sorted)
		p.sorted = slices.Grow(p.sorted, len(t))[:n+len(t)]
		i, j := n-1, len(t)-1
		for w := len(p.sorted) - 1; j >= 0; w-- {
			if i >= 0 && bytes.Compare(p.sorted[i].k[1:], t[j].k[1:]) > 0 {
				p.sorted[w] = p.sorted[i]
				i--
			} else {
				p.sorted[w] = t[j]
				j--
			}
		}
	}
	p.index()
}

// index rebuilds starts for sorted.
func (p *PendingKeys) index() {
	p.starts = nil
	if len(p.sorted) >= pendingIndexMin {
		p.starts = make([]uint32, 1<<16+1)
		i := 0
		for b := range 1 << 16 {
			for i < len(p.sorted) && int(p.sorted[i].k[1])<<8|int(p.sorted[i].k[2]) < b {
				i++
			}
			p.starts[b] = uint32(i)
		}
		p.starts[1<<16] = uint32(len(p.sorted))
	}
}

// Len is the number of pending keys.
func (p *PendingKeys) Len() int { return len(p.sorted) - len(p.gone) + len(p.tail) + len(p.other) }

// Clear empties the set and gives its memory back.
func (p *PendingKeys) Clear() {
	p.sorted, p.starts = nil, nil
	clear(p.gone)
	p.tail = map[[16]byte]uint64{}
	clear(p.other)
}

// Each calls fn with every pending key and its value, in key order,
// until fn returns an error, which Each returns. A key is valid until p
// next changes (a bbolt Put may keep it until its transaction ends);
// fn must not change p.
func (p *PendingKeys) Each(fn func(key []byte, v uint64) error) error {
	it := p.iter()
	for {
		k, v, ok := it.next()
		if !ok {
			return nil
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
}

// pendingIter walks a PendingKeys in key order (the array merged with the
// other keys, sorted once).
type pendingIter struct {
	p      *PendingKeys
	others []string
	i, j   int // next entry of p.sorted, of others
}

func (p *PendingKeys) iter() *pendingIter {
	p.merge()
	others := make([]string, 0, len(p.other))
	for k := range p.other {
		others = append(others, k)
	}
	slices.Sort(others)
	return &pendingIter{p: p, others: others}
}

func (it *pendingIter) next() (key []byte, v uint64, ok bool) {
	s := it.p.sorted
	switch {
	case it.j < len(it.others) && (it.i == len(s) || it.others[it.j] < string(s[it.i].k[:])):
		k := it.others[it.j]
		it.j++
		return []byte(k), it.p.other[k], true
	case it.i < len(s):
		it.i++
		return s[it.i-1].k[:], binary.LittleEndian.Uint64(s[it.i-1].v[:]), true
	}
	return nil, 0, false
}

// dropWalked drops the keys it has walked from its set.
func (it *pendingIter) dropWalked() {
	p := it.p
	p.sorted = p.sorted[:copy(p.sorted, p.sorted[it.i:])]
	for _, k := range it.others[:it.j] {
		delete(p.other, k)
	}
	p.index()
	it.p, it.others = nil, nil
}

// PendingWindow is how many keys one transaction of PendingKeys.Write
// puts at most. A variable for the tests.
var PendingWindow = 1 << 17

// Write puts every pending key into a bbolt bucket in key order, in
// transactions of at most PendingWindow keys, each run by update: window
// gets the keys of one, in key order (valid until the transaction ends),
// and end runs in the last one (it deletes the mark that says the bucket
// lacks keys). Once Write returns nil, p is empty. When a transaction
// fails, the keys of those that committed are no longer in p, so p still
// holds exactly the keys the bucket lacks.
//
// Why windows: a transaction holds a node for every key it puts, and its
// new pages, until it commits.
func (p *PendingKeys) Write(update func(func(*bolt.Tx) error) error, window func(tx *bolt.Tx, kvs []KeyValue) error, end func(*bolt.Tx) error) error {
	it := p.iter()
	kvs := make([]KeyValue, 0, min(PendingWindow, p.Len()))
	for done := false; !done; {
		walked := *it
		err := update(func(tx *bolt.Tx) error {
			*it = walked // a retried transaction starts its window again
			kvs = kvs[:0]
			for len(kvs) < PendingWindow {
				k, v, ok := it.next()
				if !ok {
					done = true
					break
				}
				kvs = append(kvs, KeyValue{k, v})
			}
			if len(kvs) > 0 {
				if err := window(tx, kvs); err != nil {
					return err
				}
			}
			if done {
				return end(tx)
			}
			return nil
		})
		if err != nil {
			*it = walked
			it.dropWalked()
			return err
		}
	}
	p.Clear()
	return nil
}

// WriteIndex is Write into bucket name, each key with val(its value),
// for an index the bulk build deferred whole (vectors' and timelines'
// "ids").
func (p *PendingKeys) WriteIndex(update func(func(*bolt.Tx) error) error, name []byte, val func(uint64) []byte, end func(*bolt.Tx) error) error {
	fill := AppendFill()
	return p.Write(update, func(tx *bolt.Tx, kvs []KeyValue) error {
		b := tx.Bucket(name)
		fill(b)
		for _, kv := range kvs {
			if err := b.Put(kv.Key, val(kv.Value)); err != nil {
				return err
			}
		}
		return nil
	}, end)
}

// AppendFill returns what each window of a Write calls on the bucket it
// puts into: when the bucket was empty at the first window (a first
// build), every key is appended after the last, so its pages are filled
// (FillPercent 1) rather than split in half.
func AppendFill() func(*bolt.Bucket) {
	first, fill := true, false
	return func(b *bolt.Bucket) {
		if first {
			k, _ := b.Cursor().First()
			first, fill = false, k == nil
		}
		if fill {
			b.FillPercent = 1
		}
	}
}

// KeyValue is one entry of a deferred index (RewriteBucket).
type KeyValue struct {
	Key   []byte
	Value uint64
}

// RewriteBucket replaces bucket name in tx with es in key order, its
// pages full (a bulk build's deferred index rebuilt from the records it
// inverts, after a process that deferred it stopped). Each es[i].Key
// was appended to arena in order, not kept: keys read from a bucket are
// the database's mapping, which the puts may grow. Two entries with one
// key are refused with dup's error; val encodes a value.
func RewriteBucket(tx *bolt.Tx, name []byte, es []KeyValue, arena []byte, val func(uint64) []byte, dup func(a, b uint64) error) error {
	off := 0
	for i := range es {
		n := len(es[i].Key)
		es[i].Key = arena[off : off+n : off+n]
		off += n
	}
	SortByKey(es, func(e *KeyValue) []byte { return e.Key })
	for i := 1; i < len(es); i++ {
		if bytes.Equal(es[i-1].Key, es[i].Key) {
			return dup(es[i-1].Value, es[i].Value)
		}
	}
	if err := tx.DeleteBucket(name); err != nil {
		return err
	}
	b, err := tx.CreateBucket(name)
	if err != nil {
		return err
	}
	b.FillPercent = 1
	for _, e := range es {
		if err := b.Put(e.Key, val(e.Value)); err != nil {
			return err
		}
	}
	return nil
}
