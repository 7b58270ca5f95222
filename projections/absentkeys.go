package projections

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"

	bolt "go.etcd.io/bbolt"
)

// AbsentKeys remembers, inexactly, the keys put into a bbolt bucket that
// was empty when it began, so that a lookup of a key it never saw can
// skip the bucket: Has is false only for a key never added (a Bloom
// filter; about 2% of the others answer true too). A bulk build of a
// store's first projection asks, for every chunk it stores, whether the
// chunk was stored before, and the answer is almost always no; a bbolt
// Get of a random absent key walks the bucket's tree (at 1M events, 4% of
// a summary build, 6.5% of a timelines build). A filter costs ~1.3 MB per
// million keys and one memory word per layer probed.
//
// It only ever answers for the keys added through it: the caller adds
// every key it puts while the filter is in use, and uses it only on a
// bucket that was empty when it was made. Deleted keys stay in (a false
// positive costs a Get). Not safe for concurrent use.
type AbsentKeys struct {
	seed   maphash.Seed
	layers []absentLayer
	first  int // the first layer's capacity
}

// absentLayer is a blocked Bloom filter: a key sets absentProbes bits of
// one word, ~10 bits of words per key of capacity. A full layer stays
// (its keys are still in it) and a new one four times as large takes the
// next keys, so a lookup probes one word per layer: two up to 5M keys.
type absentLayer struct {
	words []uint64
	n     int // keys added
	limit int // keys it takes before the next layer
}

const (
	absentFirstKeys = 1 << 20 // the first layer's capacity
	absentProbes    = 4       // bits set per key in its word
)

// AbsentKeysFor is a new filter for db's bucket when the bucket holds no
// key (a first build), and nil when it holds one or cannot be read: with
// no filter every key is looked up, which is always right, and an
// unreadable file shows itself again at the lookups and the commit.
// name is the projection's, for Guard.
func AbsentKeysFor(name string, db *bolt.DB, bucket []byte) *AbsentKeys {
	empty := false
	err := Guard(name, func() error {
		return db.View(func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bucket).Cursor().First()
			empty = k == nil
			return nil
		})
	})
	if err != nil || !empty {
		return nil
	}
	return NewAbsentKeys()
}

// NewAbsentKeys returns an empty filter.
func NewAbsentKeys() *AbsentKeys {
	return NewAbsentKeysSized(absentFirstKeys)
}

// NewAbsentKeysSized returns an empty filter whose first layer takes n
// keys (a filter of a known, small set: ~10 bits a key).
func NewAbsentKeysSized(n int) *AbsentKeys {
	return &AbsentKeys{seed: maphash.MakeSeed(), first: max(n, 64)}
}

// hash2 is two 64-bit hashes of key. A hex chunk id's key (IDKey: tag 0
// and 16 random bytes) is its own hash.
func (f *AbsentKeys) hash2(key []byte) (uint64, uint64) {
	if len(key) == 17 && key[0] == 0 {
		return binary.LittleEndian.Uint64(key[1:9]), binary.LittleEndian.Uint64(key[9:17])
	}
	h := maphash.Bytes(f.seed, key)
	return h, bits.RotateLeft64(h*0x9e3779b97f4a7c15, 29) ^ h
}

// at is the word of layer l for hash h1, and the mask of the bits h2
// sets in it.
func (l *absentLayer) at(h1, h2 uint64) (*uint64, uint64) {
	hi, _ := bits.Mul64(h1, uint64(len(l.words)))
	var m uint64
	for i := 0; i < absentProbes; i++ {
		m |= 1 << (h2 & 63)
		h2 >>= 6
	}
	return &l.words[hi], m
}

// Add records key.
func (f *AbsentKeys) Add(key []byte) {
	if len(f.layers) == 0 || f.layers[len(f.layers)-1].n >= f.layers[len(f.layers)-1].limit {
		keys := f.first
		if len(f.layers) > 0 {
			keys = 4 * f.layers[len(f.layers)-1].limit
		}
		f.layers = append(f.layers, absentLayer{words: make([]uint64, keys*10/64), limit: keys})
	}
	l := &f.layers[len(f.layers)-1]
	w, m := l.at(f.hash2(key))
	*w |= m
	l.n++
}

// Has is false when key was certainly never added.
func (f *AbsentKeys) Has(key []byte) bool {
	h1, h2 := f.hash2(key)
	for i := range f.layers {
		w, m := f.layers[i].at(h1, h2)
		if *w&m == m {
			return true
		}
	}
	return false
}
