package projections

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// PendingKeys maps the keys a bulk build defers from a bbolt bucket to
// 8-byte values (a seq, a slot), until they are written in key order
// (Sorted). A hex chunk id's key (IDKey: tag 0 and 16 bytes) is held
// without a pointer, about 40 bytes an entry; any other key by string.
// Not safe for concurrent use.
type PendingKeys struct {
	hex   map[[16]byte]uint64
	other map[string]uint64
}

// NewPendingKeys returns an empty set.
func NewPendingKeys() *PendingKeys {
	return &PendingKeys{hex: map[[16]byte]uint64{}, other: map[string]uint64{}}
}

func pendingHex(key []byte) (k [16]byte, ok bool) {
	if len(key) != 17 || key[0] != 0 {
		return k, false
	}
	copy(k[:], key[1:])
	return k, true
}

// Get returns key's value and whether it is pending.
func (p *PendingKeys) Get(key []byte) (uint64, bool) {
	if k, ok := pendingHex(key); ok {
		v, ok := p.hex[k]
		return v, ok
	}
	v, ok := p.other[string(key)]
	return v, ok
}

// Set makes key pending with value v.
func (p *PendingKeys) Set(key []byte, v uint64) {
	if k, ok := pendingHex(key); ok {
		p.hex[k] = v
		return
	}
	p.other[string(key)] = v
}

// Delete drops key.
func (p *PendingKeys) Delete(key []byte) {
	if k, ok := pendingHex(key); ok {
		delete(p.hex, k)
		return
	}
	delete(p.other, string(key))
}

// Len is the number of pending keys.
func (p *PendingKeys) Len() int { return len(p.hex) + len(p.other) }

// Clear empties the set.
func (p *PendingKeys) Clear() {
	clear(p.hex)
	clear(p.other)
}

// KeyValue is one pending entry.
type KeyValue struct {
	Key   []byte
	Value uint64
}

// Sorted returns the entries in key order (SortByKey: the hex keys'
// first 8 bytes nearly always decide, compared as integers).
func (p *PendingKeys) Sorted() []KeyValue {
	out := make([]KeyValue, 0, p.Len())
	// One arena for the hex keys, sized once: it never moves, so the
	// keys pointing into it stay valid.
	keys := make([]byte, 0, len(p.hex)*17)
	for k, v := range p.hex {
		keys = append(append(keys, 0), k[:]...)
		out = append(out, KeyValue{Key: keys[len(keys)-17 : len(keys) : len(keys)], Value: v})
	}
	for k, v := range p.other {
		out = append(out, KeyValue{Key: []byte(k), Value: v})
	}
	SortByKey(out, func(e *KeyValue) []byte { return e.Key })
	return out
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
