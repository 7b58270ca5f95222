package vector

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Cache stores embeddings keyed by (embedder Name, SHA-256 of the text), so
// a projection rebuild does not call the model again. Implementations are
// safe for concurrent use.
type Cache interface {
	// Get returns one entry per key: the cached vector, or nil on a miss.
	Get(name string, keys [][32]byte) ([][]float32, error)
	// Put stores vecs[i] under keys[i].
	Put(name string, keys [][32]byte, vecs [][]float32) error
}

// MemCache is an in-memory Cache.
type MemCache struct {
	mu sync.RWMutex
	m  map[string][]float32
}

// NewMemCache returns an empty in-memory cache.
func NewMemCache() *MemCache { return &MemCache{m: map[string][]float32{}} }

func cacheKey(name string, k [32]byte) []byte {
	b := make([]byte, 0, len(name)+1+32)
	b = append(b, name...)
	b = append(b, 0)
	return append(b, k[:]...)
}

// Get implements Cache.
func (c *MemCache) Get(name string, keys [][32]byte) ([][]float32, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([][]float32, len(keys))
	for i, k := range keys {
		if v, ok := c.m[string(cacheKey(name, k))]; ok {
			out[i] = append([]float32(nil), v...)
		}
	}
	return out, nil
}

// Put implements Cache.
func (c *MemCache) Put(name string, keys [][32]byte, vecs [][]float32) error {
	if len(keys) != len(vecs) {
		return fmt.Errorf("put cache: %d keys, %d vectors: %w", len(keys), len(vecs), ErrInvalidOptions)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		c.m[string(cacheKey(name, k))] = append([]float32(nil), vecs[i]...)
	}
	return nil
}

// Len returns the number of cached vectors.
func (c *MemCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// BoltCache is a Cache in a bbolt file. Layout: bucket "embeddings", key =
// name + 0x00 + sha256(text), value = dim × float32 little-endian.
type BoltCache struct {
	db *bolt.DB
}

var boltBucket = []byte("embeddings")

// OpenBoltCache opens (creating if needed) the cache file at path.
func OpenBoltCache(path string) (*BoltCache, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5e9})
	if err != nil {
		return nil, fmt.Errorf("open embedding cache %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("create embedding cache bucket: %w", err)
	}
	return &BoltCache{db: db}, nil
}

// Close closes the file.
func (c *BoltCache) Close() error { return c.db.Close() }

// Get implements Cache. A stored value of invalid length is treated as a
// miss (it will be overwritten by the next Put).
func (c *BoltCache) Get(name string, keys [][32]byte) ([][]float32, error) {
	out := make([][]float32, len(keys))
	err := c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		for i, k := range keys {
			raw := b.Get(cacheKey(name, k))
			if raw == nil || len(raw)%4 != 0 || len(raw) == 0 {
				continue
			}
			v := make([]float32, len(raw)/4)
			for j := range v {
				v[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			}
			out[i] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedding cache: %w", err)
	}
	return out, nil
}

// Put implements Cache, in one transaction.
func (c *BoltCache) Put(name string, keys [][32]byte, vecs [][]float32) error {
	if len(keys) != len(vecs) {
		return fmt.Errorf("put cache: %d keys, %d vectors: %w", len(keys), len(vecs), ErrInvalidOptions)
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		for i, k := range keys {
			raw := make([]byte, 4*len(vecs[i]))
			for j, x := range vecs[i] {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(x))
			}
			if err := b.Put(cacheKey(name, k), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write embedding cache: %w", err)
	}
	return nil
}

// CachedEmbedder wraps an Embedder with a Cache: only texts whose
// (Name, SHA-256) is missing reach the inner embedder, and identical texts
// within one call are embedded once. It reports the inner Name and Dim.
type CachedEmbedder struct {
	inner Embedder
	cache Cache
}

// NewCachedEmbedder returns inner wrapped with cache.
func NewCachedEmbedder(inner Embedder, cache Cache) *CachedEmbedder {
	return &CachedEmbedder{inner: inner, cache: cache}
}

// Name returns the inner embedder's Name.
func (c *CachedEmbedder) Name() string { return c.inner.Name() }

// Dim returns the inner embedder's Dim.
func (c *CachedEmbedder) Dim() int { return c.inner.Dim() }

// Lexical reports whether the inner embedder is lexical (LexicalEmbedder).
func (c *CachedEmbedder) Lexical() bool { return IsLexical(c.inner) }

// Embed implements Embedder. A cancelled context fails even when every
// text is cached, as the inner embedder would: a caller that cancels
// sees the same error whatever the cache holds.
func (c *CachedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embed texts: %w", err)
	}
	name, dim := c.inner.Name(), c.inner.Dim()
	keys := make([][32]byte, len(texts))
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(t))
	}
	out, err := c.cache.Get(name, keys)
	if err != nil {
		return nil, fmt.Errorf("embed texts: %w", err)
	}
	var missText []string
	var missKey [][32]byte
	first := map[[32]byte]int{} // key -> index in missText
	for i, v := range out {
		if v != nil && len(v) == dim {
			continue
		}
		out[i] = nil
		if _, ok := first[keys[i]]; !ok {
			first[keys[i]] = len(missText)
			missText = append(missText, texts[i])
			missKey = append(missKey, keys[i])
		}
	}
	if len(missText) == 0 {
		return out, nil
	}
	vs, err := c.inner.Embed(ctx, missText)
	if err != nil {
		return nil, fmt.Errorf("embed texts: %w", err)
	}
	if len(vs) != len(missText) {
		return nil, fmt.Errorf("embed texts: %s returned %d vectors for %d texts: %w", name, len(vs), len(missText), ErrEmbedder)
	}
	for i, v := range vs {
		if len(v) != dim {
			return nil, fmt.Errorf("embed texts: %s vector %d has %d values, want %d: %w", name, i, len(v), dim, ErrDimension)
		}
	}
	if err := c.cache.Put(name, missKey, vs); err != nil {
		return nil, fmt.Errorf("embed texts: %w", err)
	}
	for i := range out {
		if out[i] == nil {
			out[i] = append([]float32(nil), vs[first[keys[i]]]...)
		}
	}
	return out, nil
}

var (
	_ Embedder = (*HashEmbedder)(nil)
	_ Embedder = (*HTTPEmbedder)(nil)
	_ Embedder = (*CachedEmbedder)(nil)
	_ Cache    = (*MemCache)(nil)
	_ Cache    = (*BoltCache)(nil)
)
