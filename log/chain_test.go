package log

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func chainTree(t *testing.T, name string, n int, forkAt int) *Tree {
	t.Helper()
	tr, err := OpenTree(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	hs := make([]Hash, n)
	for i := range hs {
		s := fmt.Sprintf("event %d", i+1)
		if forkAt > 0 && i+1 >= forkAt {
			s = "forged " + s
		}
		hs[i] = Hash(sha256.Sum256([]byte(s)))
	}
	if err := tr.Append(hs); err != nil {
		t.Fatal(err)
	}
	return tr
}

// links anchors checkpoints of tr at sizes, each with a consistency proof
// from the one before (as a push does).
func links(t *testing.T, tr *Tree, prefix string, prev uint64, sizes ...uint64) []ChainLink {
	t.Helper()
	var out []ChainLink
	for _, s := range sizes {
		root, err := tr.Root(s)
		if err != nil {
			t.Fatal(err)
		}
		l := ChainLink{ID: fmt.Sprintf("%s%d", prefix, s), Checkpoint: Checkpoint{Origin: "ucl/x", Size: s, Root: root}, Anchor: Anchor{PrevSize: prev}}
		if prev > 0 {
			if l.Anchor.Consistency, err = tr.ConsistencyProof(prev, s); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, l)
		prev = s
	}
	return out
}

func TestVerifyChain(t *testing.T) {
	tr := chainTree(t, "a", 300, 0)
	sizes := []uint64{1, 2, 5, 17, 64, 100, 255, 256, 300}
	all := links(t, tr, "a", 0, sizes...)
	for i := range all {
		if err := VerifyChain(all[i], all[i+1:]); err != nil {
			t.Fatalf("chain from %d: %v", all[i].Checkpoint.Size, err)
		}
	}
	// A duplicate anchoring of the same size and root is fine.
	dup := all[4]
	dup.ID = "dup"
	if err := VerifyChain(all[3], append([]ChainLink{all[4], dup}, all[5:]...)); err != nil {
		t.Fatal(err)
	}

	// A history rewritten at event 80, anchored after checkpoint 100 of
	// the original and claiming to extend it.
	fork := chainTree(t, "b", 300, 80)
	forged := links(t, fork, "f", 100, 255)
	err := VerifyChain(all[2], append(append([]ChainLink{}, all[3:6]...), forged...))
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "checkpoint f255 (255 events") || !strings.Contains(err.Error(), "checkpoint a100 (100 events") {
		t.Fatalf("forged after 100: %v", err)
	}
	// Anchored at a size the original also anchored: same size, other root.
	same := links(t, fork, "f", 64, 100)
	err = VerifyChain(all[5], same)
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "both have 100 events") {
		t.Fatalf("same size: %v", err)
	}
	// A forged checkpoint that starts its own chain (no proof from the last).
	fresh := links(t, fork, "f", 0, 280)
	if err := VerifyChain(all[6], fresh); !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "starts at 0 events") {
		t.Fatalf("fresh chain: %v", err)
	}
	// A chain that stops before the forged checkpoints is unaffected.
	if err := VerifyChain(all[0], all[1:5]); err != nil {
		t.Fatal(err)
	}
	// Every single-byte change of a consistency node breaks the chain.
	for i := range all[6].Anchor.Consistency {
		for j := 0; j < HashSize; j++ {
			l := all[6]
			l.Anchor.Consistency = cloneNodes(l.Anchor.Consistency)
			l.Anchor.Consistency[i][j] ^= 1
			if err := VerifyChain(all[5], []ChainLink{l}); !errors.Is(err, ErrInconsistent) {
				t.Fatalf("node %d byte %d changed: %v", i, j, err)
			}
		}
	}
	// Out of order.
	if err := VerifyChain(all[5], []ChainLink{all[4]}); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("out of order: %v", err)
	}
}

func cloneNodes(n [][]byte) [][]byte {
	out := make([][]byte, len(n))
	for i := range n {
		out[i] = append([]byte{}, n[i]...)
	}
	return out
}
