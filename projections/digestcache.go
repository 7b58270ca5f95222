package projections

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// DigestKeyer is implemented by a projection whose digest depends on more
// than the log and its Version (the vector projection: its embedder).
// DigestKey names that input; it is part of the digest cache's key.
type DigestKeyer interface {
	DigestKey() string
}

// The digest cache (Options.DigestCache) remembers each projection's
// digest with the state it was computed for, so StatusCached costs a
// checkpoint read where a digest costs a pass over the whole state (at
// 400K events 2.2 s and ~1 GB for all five, mostly the vectors). A
// projection's state is a function of the log prefix it was built from
// (the determinism contract), so the key is everything that state depends
// on: name, Version, stored version, checkpoint (seq and hash) and
// DigestKey. Any Commit moves the checkpoint and so retires the entry,
// whichever projector or process made it; a reset by the projector drops
// the entry first, so a rebuild to the same checkpoint is digested afresh.
//
// The file is JSON, {"name": {"key": "...", "digest": "hex"}}, written
// atomically. It is a cache: unreadable or missing means empty, and a write
// that fails leaves status to compute the digest again next time.
//
// What a cached digest does not see: damage to the projection's files
// since it was computed. Verify, Digests and Status always compute.
type digestCache struct {
	path    string
	entries map[string]digestEntry
	dirty   bool
}

type digestEntry struct {
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

func loadDigestCache(path string) *digestCache {
	c := &digestCache{path: path, entries: map[string]digestEntry{}}
	if path == "" {
		return c
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c
	}
	var m map[string]digestEntry
	if json.Unmarshal(b, &m) == nil && m != nil {
		c.entries = m
	}
	return c
}

// digestKey is the cache key of p's current state, whose status st holds
// the version, stored version and checkpoint.
func digestKey(p Projection, st *Status) string {
	k := fmt.Sprintf("v%d/s%d/%d/%s", st.Version, st.StoredVersion, st.Checkpoint.Seq, hex.EncodeToString(st.Checkpoint.Hash[:]))
	if dk, ok := p.(DigestKeyer); ok {
		k += "/" + dk.DigestKey()
	}
	return k
}

func (c *digestCache) get(name, key string) (string, bool) {
	e, ok := c.entries[name]
	if !ok || e.Key != key {
		return "", false
	}
	return e.Digest, true
}

func (c *digestCache) put(name, key, digest string) {
	if e, ok := c.entries[name]; ok && e.Key == key && e.Digest == digest {
		return
	}
	c.entries[name] = digestEntry{Key: key, Digest: digest}
	c.dirty = true
}

// drop forgets name's entry and saves at once (the caller is about to
// reset the projection).
func (c *digestCache) drop(name string) {
	if _, ok := c.entries[name]; !ok {
		return
	}
	delete(c.entries, name)
	c.dirty = true
	c.save()
}

// save writes the cache if it changed. A failure is not an error of the
// caller's operation (the digests it returns are right); the cache is
// simply not kept.
func (c *digestCache) save() {
	if c.path == "" || !c.dirty {
		return
	}
	b, err := json.Marshal(c.entries)
	if err != nil {
		return
	}
	if err := fsutil.WriteAtomic(c.path, 0o600, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}); err == nil {
		c.dirty = false
	}
}
