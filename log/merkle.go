package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"sync"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// ErrTreeSize is returned when a proof or root is asked for a tree size the
// tree does not have (yet), or an index outside it.
var ErrTreeSize = errors.New("log: tree size out of range")

// Tree is the log as an RFC 6962 Merkle tree (see the package doc, "Merkle
// tree"): leaf i is event seq i+1's hash, hashed as an RFC 6962 leaf. It
// keeps every node of its perfect subtrees on disk, so roots and proofs at
// any size read O(log n) nodes and never replay the log. It is derived
// data: CatchUp extends it from the log, and resets it when the log no
// longer matches it. Safe for concurrent use.
type Tree struct {
	dir string

	mu     sync.Mutex
	size   uint64
	levels []*os.File // levels[k] holds nodes of level k, 32 bytes each
}

var (
	treeHasher  = rfc6962.DefaultHasher
	rangeFactor = &compact.RangeFactory{Hash: treeHasher.HashChildren}
)

// LeafHash is the RFC 6962 leaf hash of an event: SHA-256(0x00 ‖ event hash).
func LeafHash(eventHash Hash) []byte { return treeHasher.HashLeaf(eventHash[:]) }

// OpenTree opens (creating if needed) the tree stored in dir. Node files
// left longer than their level's size by a crash are cut back; a tree whose
// files disagree is emptied, to be caught up again.
func OpenTree(dir string) (*Tree, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open tree: %w", err)
	}
	t := &Tree{dir: dir}
	fi, err := os.Stat(t.levelPath(0))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("open tree: %w", err)
	default:
		t.size = uint64(fi.Size()) / HashSize
	}
	for k := 0; t.size>>k > 0 || k == 0; k++ {
		f, err := os.OpenFile(t.levelPath(k), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("open tree: %w", err)
		}
		t.levels = append(t.levels, f)
		want := int64(t.size>>k) * HashSize
		fi, err := f.Stat()
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("open tree: %w", err)
		}
		if fi.Size() < want {
			// A level lost nodes its children have: start over.
			if err := t.resetLocked(); err != nil {
				return nil, err
			}
			return t, nil
		}
		if fi.Size() > want {
			if err := f.Truncate(want); err != nil {
				t.Close()
				return nil, fmt.Errorf("open tree: %w", err)
			}
		}
	}
	return t, nil
}

func (t *Tree) levelPath(k int) string { return filepath.Join(t.dir, fmt.Sprintf("level-%02d", k)) }

// Size returns the number of leaves (events) in the tree.
func (t *Tree) Size() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.size
}

// Close closes the node files.
func (t *Tree) Close() error {
	var first error
	for _, f := range t.levels {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	t.levels = nil
	return first
}

func (t *Tree) resetLocked() error {
	for _, f := range t.levels {
		f.Close()
	}
	t.levels, t.size = nil, 0
	ents, err := os.ReadDir(t.dir)
	if err != nil {
		return fmt.Errorf("reset tree: %w", err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(t.dir, e.Name())); err != nil {
			return fmt.Errorf("reset tree: %w", err)
		}
	}
	f, err := os.OpenFile(t.levelPath(0), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("reset tree: %w", err)
	}
	t.levels = []*os.File{f}
	return nil
}

// node reads the hash of a stored node. Called with mu held.
func (t *Tree) node(id compact.NodeID) ([]byte, error) {
	if int(id.Level) >= len(t.levels) || id.Index >= t.size>>id.Level {
		return nil, fmt.Errorf("%w: node %d/%d of a tree of %d", ErrTreeSize, id.Level, id.Index, t.size)
	}
	b := make([]byte, HashSize)
	if _, err := t.levels[id.Level].ReadAt(b, int64(id.Index)*HashSize); err != nil {
		return nil, fmt.Errorf("read tree node: %w", err)
	}
	return b, nil
}

// rangeAt returns the compact range [0, size): the perfect subtrees of its
// decomposition, left to right. Called with mu held.
func (t *Tree) rangeAt(size uint64) (*compact.Range, error) {
	var hashes [][]byte
	for k := bits.Len64(size); k >= 0; k-- {
		if size&(1<<k) == 0 {
			continue
		}
		h, err := t.node(compact.NewNodeID(uint(k), (size>>k)-1))
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
	}
	return rangeFactor.NewRange(0, size, hashes)
}

// Append adds leaves for the given event hashes (the events after the
// tree's last one, in seq order) and writes the nodes they complete.
func (t *Tree) Append(hashes []Hash) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.appendLocked(hashes)
}

func (t *Tree) appendLocked(hashes []Hash) error {
	if len(hashes) == 0 {
		return nil
	}
	r, err := t.rangeAt(t.size)
	if err != nil {
		return err
	}
	bufs := map[uint][]byte{}
	visit := func(id compact.NodeID, h []byte) { bufs[id.Level] = append(bufs[id.Level], h...) }
	for _, h := range hashes {
		if err := r.Append(LeafHash(h), visit); err != nil {
			return fmt.Errorf("append to tree: %w", err)
		}
	}
	newSize := t.size + uint64(len(hashes))
	// Upper levels first: a crash leaves level 0 (which defines the size)
	// no longer than what the levels above it can back.
	for k := len(bufs) - 1; k >= 0; k-- {
		for len(t.levels) <= k {
			f, err := os.OpenFile(t.levelPath(len(t.levels)), os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				return fmt.Errorf("append to tree: %w", err)
			}
			t.levels = append(t.levels, f)
		}
		off := int64(t.size>>k) * HashSize
		if _, err := t.levels[k].WriteAt(bufs[uint(k)], off); err != nil {
			return fmt.Errorf("append to tree: %w", err)
		}
	}
	t.size = newSize
	return nil
}

// CatchUp extends the tree with the log's events after it, reading them
// with the log's chain verification. If the log no longer holds the tree's
// last leaf (a repaired or replaced log), the tree is rebuilt from seq 1.
func (t *Tree) CatchUp(ctx context.Context, l *Log) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	head, _ := l.Head()
	if t.size > 0 {
		ok := t.size <= head
		if ok {
			h, err := l.HashAt(t.size)
			if err != nil {
				return fmt.Errorf("catch up tree: %w", err)
			}
			leaf, err := t.node(compact.NewNodeID(0, t.size-1))
			if err != nil {
				return fmt.Errorf("catch up tree: %w", err)
			}
			ok = bytes.Equal(leaf, LeafHash(h))
		}
		if !ok {
			if err := t.resetLocked(); err != nil {
				return err
			}
		}
	}
	if t.size >= head {
		return nil
	}
	batch := make([]Hash, 0, 4096)
	err := l.Records(ctx, t.size+1, head, func(r *Record) error {
		batch = append(batch, r.Hash)
		if len(batch) == cap(batch) {
			if err := t.appendLocked(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		return nil
	})
	if err == nil {
		err = t.appendLocked(batch)
	}
	if err != nil {
		return fmt.Errorf("catch up tree: %w", err)
	}
	return nil
}

// Root returns the root hash of the tree of the first size events.
func (t *Tree) Root(size uint64) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if size > t.size {
		return nil, fmt.Errorf("%w: root at %d of a tree of %d", ErrTreeSize, size, t.size)
	}
	if size == 0 {
		return treeHasher.EmptyRoot(), nil
	}
	r, err := t.rangeAt(size)
	if err != nil {
		return nil, err
	}
	return r.GetRootHash(nil)
}

// InclusionProof proves that event seq is leaf seq-1 of the tree of the
// first size events.
func (t *Tree) InclusionProof(seq, size uint64) ([][]byte, error) {
	if seq == 0 || seq > size {
		return nil, fmt.Errorf("%w: seq %d in a tree of %d", ErrTreeSize, seq, size)
	}
	nodes, err := proof.Inclusion(seq-1, size)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof: %w", err)
	}
	return t.fetch(nodes, size)
}

// ConsistencyProof proves that the tree of size1 events is a prefix of the
// tree of size2 events.
func (t *Tree) ConsistencyProof(size1, size2 uint64) ([][]byte, error) {
	if size1 > size2 {
		return nil, fmt.Errorf("%w: consistency from %d to %d", ErrTreeSize, size1, size2)
	}
	nodes, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("consistency proof: %w", err)
	}
	return t.fetch(nodes, size2)
}

func (t *Tree) fetch(nodes proof.Nodes, size uint64) ([][]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if size > t.size {
		return nil, fmt.Errorf("%w: proof at %d of a tree of %d", ErrTreeSize, size, t.size)
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		h, err := t.node(id)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return nodes.Rehash(hashes, treeHasher.HashChildren)
}

// VerifyInclusion checks an inclusion proof of an event hash at seq in a
// tree of size with the given root.
func VerifyInclusion(eventHash Hash, seq, size uint64, root []byte, p [][]byte) error {
	if seq == 0 {
		return fmt.Errorf("%w: seq 0", ErrTreeSize)
	}
	return proof.VerifyInclusion(treeHasher, seq-1, size, LeafHash(eventHash), p, root)
}

// VerifyConsistency checks that root1 (size1) is a prefix of root2 (size2).
func VerifyConsistency(size1, size2 uint64, root1, root2 []byte, p [][]byte) error {
	return proof.VerifyConsistency(treeHasher, size1, size2, p, root1, root2)
}
