package log

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkTreeProof: inclusion proof production and verification in a
// Merkle tree of 1M leaves (synthetic event hashes: this measures the
// tree, which reads O(log n) stored nodes and never replays the log).
func BenchmarkTreeProof(b *testing.B) {
	const n = 1_000_000
	t, err := OpenTree(filepath.Join(b.TempDir(), "merkle"))
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	hashes := make([]Hash, n)
	for i := range hashes {
		var x [8]byte
		binary.BigEndian.PutUint64(x[:], uint64(i))
		hashes[i] = Hash(sha256.Sum256(x[:]))
	}
	start := time.Now()
	if err := t.Append(hashes); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	root, err := t.Root(n)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("events=1000000/prove", func(b *testing.B) {
		b.ReportMetric(build.Seconds(), "build-s")
		for i := 0; i < b.N; i++ {
			seq := uint64(i*7919)%n + 1
			if _, err := t.InclusionProof(seq, n); err != nil {
				b.Fatal(err)
			}
		}
	})
	p, err := t.InclusionProof(n/3, n)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("events=1000000/verify", func(b *testing.B) {
		b.ReportMetric(float64(len(p)), "nodes")
		for i := 0; i < b.N; i++ {
			if err := VerifyInclusion(hashes[n/3-1], n/3, n, root, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("events=1000000/consistency", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := t.ConsistencyProof(n/2+uint64(i%1000), n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkProofFile: a whole proof file (ProveEvent on a real log: raw
// event, inclusion path, JSON) and Proof.Verify (note signature, header,
// hash, inclusion) at 10K events, and 1M with UCL_BENCH_100K=1.
func BenchmarkProofFile(b *testing.B) {
	sizes := []int{10_000}
	if os.Getenv("UCL_BENCH_100K") != "" {
		sizes = append(sizes, 1_000_000)
	}
	kr := testKeys(b)
	skey, vkey := testNoteKey(b)
	for _, n := range sizes {
		dir := b.TempDir()
		l := openT(b, filepath.Join(dir, "log"), kr, Options{Durability: None})
		content := strings.Repeat("lorem ipsum dolor sit amet ", 11)
		batch := make([]Entry, 0, 4096)
		for i := 0; i < n; i++ {
			batch = append(batch, Entry{Body: &Store{Kind: KindConversation, Session: "s", Role: "user", Content: content}})
			if len(batch) == cap(batch) || i == n-1 {
				if _, err := l.AppendBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		t, err := OpenTree(filepath.Join(dir, "merkle"))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := t.CatchUp(ctx, l); err != nil {
			b.Fatal(err)
		}
		catchUp := time.Since(start)
		root, err := t.Root(uint64(n))
		if err != nil {
			b.Fatal(err)
		}
		note, err := SignCheckpoint(Checkpoint{Origin: CheckpointOrigin("bench"), Size: uint64(n), Root: root}, skey)
		if err != nil {
			b.Fatal(err)
		}
		var last []byte
		b.Run(fmt.Sprintf("events=%d/prove", n), func(b *testing.B) {
			b.ReportMetric(catchUp.Seconds(), "tree-catchup-s")
			for i := 0; i < b.N; i++ {
				seq := uint64(i*7919)%uint64(n) + 1
				p, err := ProveEvent(l, t, seq, uint64(n))
				if err != nil {
					b.Fatal(err)
				}
				p.LogID, p.Checkpoint, p.NoteKey = "bench", string(note), vkey
				if last, err = json.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(last)), "proof-bytes")
		})
		b.Run(fmt.Sprintf("events=%d/verify", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p, err := DecodeProof(last)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Verify(); err != nil {
					b.Fatal(err)
				}
			}
		})
		t.Close()
		l.Close()
	}
}
