package log

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func leafHashes(n int) []Hash {
	out := make([]Hash, n)
	for i := range out {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		out[i] = sha256.Sum256(b[:])
	}
	return out
}

// Proofs for every index of trees of size 1..300 verify against the root,
// consistency between sizes verifies, and a changed byte anywhere fails.
func TestTreeProofs(t *testing.T) {
	tr, err := OpenTree(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	hs := leafHashes(300)
	// Appended in uneven batches, as catch-up does.
	for i := 0; i < len(hs); {
		n := min(1+i%7, len(hs)-i)
		if err := tr.Append(hs[i : i+n]); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	roots := map[uint64][]byte{}
	for size := uint64(1); size <= 300; size++ {
		root, err := tr.Root(size)
		if err != nil {
			t.Fatal(err)
		}
		roots[size] = root
		for seq := uint64(1); seq <= size; seq++ {
			p, err := tr.InclusionProof(seq, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifyInclusion(hs[seq-1], seq, size, root, p); err != nil {
				t.Fatalf("seq %d size %d: %v", seq, size, err)
			}
			if size%37 == 0 && seq%11 == 0 {
				for i := range p {
					for j := range p[i] {
						p[i][j] ^= 1
						if VerifyInclusion(hs[seq-1], seq, size, root, p) == nil {
							t.Fatalf("a changed proof byte verified (seq %d size %d)", seq, size)
						}
						p[i][j] ^= 1
					}
				}
				bad := hs[seq-1]
				bad[0] ^= 1
				if VerifyInclusion(bad, seq, size, root, p) == nil {
					t.Fatal("a changed leaf verified")
				}
			}
		}
	}
	for _, c := range [][2]uint64{{1, 300}, {7, 8}, {64, 65}, {100, 257}, {299, 300}, {5, 5}} {
		p, err := tr.ConsistencyProof(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyConsistency(c[0], c[1], roots[c[0]], roots[c[1]], p); err != nil {
			t.Fatalf("consistency %v: %v", c, err)
		}
		if len(p) > 0 {
			p[0][3] ^= 1
			if VerifyConsistency(c[0], c[1], roots[c[0]], roots[c[1]], p) == nil {
				t.Fatalf("a changed consistency proof verified %v", c)
			}
		}
	}
	// A reopened tree has the same roots; a crash that left a level file
	// too long is cut back.
	tr.Close()
	f, err := os.OpenFile(filepath.Join(tr.dir, "level-00"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 18)) // a torn leaf write
	f.Close()
	tr2, err := OpenTree(tr.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if tr2.Size() != 300 {
		t.Fatalf("size %d after reopen", tr2.Size())
	}
	if r, _ := tr2.Root(300); string(r) != string(roots[300]) {
		t.Fatal("root changed across reopen")
	}
	if _, err := tr2.InclusionProof(301, 300); err == nil {
		t.Fatal("proof past the size")
	}
}

// The tree of a real log follows it, and starts over when the log was
// replaced under it.
func TestTreeCatchUp(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, filepath.Join(dir, "log"), kr, Options{})
	rs := appendN(t, l, 50)
	tr, err := OpenTree(filepath.Join(dir, "tree"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.CatchUp(ctx, l); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 10)
	if err := tr.CatchUp(ctx, l); err != nil || tr.Size() != 60 {
		t.Fatalf("catch up: %d %v", tr.Size(), err)
	}
	root, _ := tr.Root(60)
	p, err := tr.InclusionProof(17, 60)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyInclusion(rs[16].Hash, 17, 60, root, p); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// Another log in the same place: the tree notices and rebuilds.
	os.RemoveAll(filepath.Join(dir, "log"))
	l = openT(t, filepath.Join(dir, "log"), kr, Options{})
	defer l.Close()
	rs2 := appendN(t, l, 70)
	if err := tr.CatchUp(ctx, l); err != nil || tr.Size() != 70 {
		t.Fatalf("catch up over another log: %d %v", tr.Size(), err)
	}
	root, _ = tr.Root(70)
	p, _ = tr.InclusionProof(17, 70)
	if err := VerifyInclusion(rs2[16].Hash, 17, 70, root, p); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTreeProve1M: inclusion proof production and verification in a
// tree of 1M events (reads O(log n) stored nodes; no log replay), and the
// proof's size.
func BenchmarkTreeProve1M(b *testing.B) {
	tr, err := OpenTree(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	const n = 1 << 20
	hs := leafHashes(4096)
	for i := 0; i < n; i += len(hs) {
		if err := tr.Append(hs); err != nil {
			b.Fatal(err)
		}
	}
	root, err := tr.Root(n)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("prove", func(b *testing.B) {
		var size int
		for i := 0; i < b.N; i++ {
			p, err := tr.InclusionProof(uint64(1+(i*7919)%n), n)
			if err != nil {
				b.Fatal(err)
			}
			size = len(p) * HashSize
		}
		b.ReportMetric(float64(size), "proof-bytes")
	})
	b.Run("verify", func(b *testing.B) {
		p, _ := tr.InclusionProof(12345, n)
		for i := 0; i < b.N; i++ {
			if err := VerifyInclusion(hs[(12345-1)%len(hs)], 12345, n, root, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
