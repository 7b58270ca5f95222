package projstd

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// countingEmbedder is the hash embedder, counting the texts it embeds,
// local (vector.LocalEmbedder) or not.
type countingEmbedder struct {
	*vector.HashEmbedder
	local bool
	texts atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.HashEmbedder.Embed(ctx, texts)
}

func (c *countingEmbedder) Local() bool { return c.local }

// TestVectorsEmbedAhead: with a local embedder, Apply embeds full batches
// on goroutines before Commit is called, and the files and digest are
// those of the same events embedded in Commit by an embedder that is not
// local (so: not a function of when or where the vectors were made),
// with edits and tombstones among the events and commits at several
// points.
func TestVectorsEmbedAhead(t *testing.T) {
	evs := projtest.ConvEvents(11, 4*aheadBatch+40)
	build := func(local bool) (*countingEmbedder, []byte, []byte, [32]byte, int64) {
		h, err := vector.NewHashEmbedder(0)
		if err != nil {
			t.Fatal(err)
		}
		e := &countingEmbedder{HashEmbedder: h, local: local}
		dir := t.TempDir()
		v, err := OpenVectors(dir, VectorOptions{Embedder: e})
		if err != nil {
			t.Fatal(err)
		}
		var beforeCommit int64 = -1
		for i, ev := range evs {
			if err := v.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if i == 3*aheadBatch+20 || i == len(evs)-1 {
				if beforeCommit < 0 {
					for _, j := range v.jobs {
						<-j.done
					}
					beforeCommit = e.texts.Load()
				}
				if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
					t.Fatal(err)
				}
			}
		}
		d, err := v.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		scan, err := os.ReadFile(filepath.Join(dir, scanFileName))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := os.ReadFile(filepath.Join(dir, recsFileName))
		if err != nil {
			t.Fatal(err)
		}
		return e, scan, recs, d, beforeCommit
	}
	ahead, scanA, recsA, dA, early := build(true)
	inCommit, scanC, recsC, dC, lateEarly := build(false)
	if early < 2*aheadBatch {
		t.Fatalf("a local embedder embedded %d texts before the first Commit, want at least %d (batches of %d)", early, 2*aheadBatch, aheadBatch)
	}
	if lateEarly != 0 {
		t.Fatalf("an embedder that is not local embedded %d texts before Commit", lateEarly)
	}
	if ahead.texts.Load() != inCommit.texts.Load() {
		t.Fatalf("embedded %d texts ahead, %d in Commit: some text was embedded twice or not at all", ahead.texts.Load(), inCommit.texts.Load())
	}
	if !bytes.Equal(scanA, scanC) || !bytes.Equal(recsA, recsC) || dA != dC {
		t.Fatal("scan.bin, recs.bin or the digest differ between embedding ahead and in Commit")
	}
}

// badEmbedder embeds one text to a vector holding a NaN, local or not.
type badEmbedder struct {
	*vector.HashEmbedder
	local bool
	bad   string
}

func (b *badEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := b.HashEmbedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	for k, tx := range texts {
		if tx == b.bad {
			vs[k][3] = float32(math.NaN())
		}
	}
	return vs, nil
}

func (b *badEmbedder) Local() bool { return b.local }

// TestVectorsEmbedAheadBadVector: a vector that does not check, embedded
// ahead, fails Commit with the error the same vector gives when embedded
// in Commit, and nothing is written.
func TestVectorsEmbedAheadBadVector(t *testing.T) {
	evs := projtest.Generate(projtest.Config{Seed: 4, N: 2*aheadBatch + 10, StoresOnly: true})
	var errs []string
	for _, local := range []bool{true, false} {
		h, err := vector.NewHashEmbedder(0)
		if err != nil {
			t.Fatal(err)
		}
		bad := evs[aheadBatch+7].Body.(*log.Store).SearchText()
		v, err := OpenVectors(t.TempDir(), VectorOptions{Embedder: &badEmbedder{HashEmbedder: h, local: local, bad: bad}})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := v.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		last := evs[len(evs)-1]
		err = v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash})
		if !errors.Is(err, vector.ErrInvalidVector) {
			t.Fatalf("local %v: commit with a NaN vector: %v", local, err)
		}
		if v.next != 0 || v.live != 0 {
			t.Fatalf("local %v: a failed commit stored %d slots", local, v.next)
		}
		errs = append(errs, err.Error())
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if errs[0] != errs[1] {
		t.Fatalf("embedded ahead: %q\nin Commit: %q", errs[0], errs[1])
	}
}

// TestVectorsAheadKeepNoFloats: the batches embedded ahead keep each
// vector's record and code, not its float copy (4·dim bytes a vector
// waiting for its commit), and the indexes held in memory, which take
// floats, get the values the records decode to: the graph, and a loaded
// exact index, equal those of the same events embedded in Commit.
func TestVectorsAheadKeepNoFloats(t *testing.T) {
	evs := projtest.Events(8, 3*aheadBatch)
	type result struct {
		graph, exact []byte
		dg, dx       [32]byte
	}
	build := func(local bool) result {
		h, err := vector.NewHashEmbedder(0)
		if err != nil {
			t.Fatal(err)
		}
		e := &countingEmbedder{HashEmbedder: h, local: local}
		g, err := OpenVectors(t.TempDir(), VectorOptions{Embedder: e, Graph: true, ExactBelow: 300, GraphEvery: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		x, err := OpenVectors(t.TempDir(), VectorOptions{Embedder: e})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if _, err := x.Index(); err != nil { // loaded: kept current by Commit
			t.Fatal(err)
		}
		floats := 0
		for i, ev := range evs {
			for _, v := range []*VectorProjection{g, x} {
				if err := v.Apply(ev); err != nil {
					t.Fatal(err)
				}
				if (i+1)%(2*aheadBatch+30) != 0 && i != len(evs)-1 {
					continue
				}
				for _, j := range v.jobs {
					<-j.done
					for _, f := range j.vecs {
						if f != nil {
							floats++
						}
					}
				}
				if err := v.Commit(projections.Checkpoint{Seq: ev.Seq, Hash: ev.Hash}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if floats > 0 {
			t.Fatalf("local %v: %d vectors embedded ahead kept their float copy", local, floats)
		}
		var r result
		for _, p := range []struct {
			v *VectorProjection
			b *[]byte
			d *[32]byte
		}{{g, &r.graph, &r.dg}, {x, &r.exact, &r.dx}} {
			idx, err := p.v.Index()
			if err != nil {
				t.Fatal(err)
			}
			if *p.b, err = idx.MarshalBinary(); err != nil {
				t.Fatal(err)
			}
			if *p.d, err = p.v.Digest(); err != nil {
				t.Fatal(err)
			}
		}
		if !g.graphOn {
			t.Fatal("the graph did not start")
		}
		return r
	}
	ahead, inCommit := build(true), build(false)
	if !bytes.Equal(ahead.graph, inCommit.graph) || ahead.dg != inCommit.dg {
		t.Fatal("the graph differs between embedding ahead and in Commit")
	}
	if !bytes.Equal(ahead.exact, inCommit.exact) || ahead.dx != inCommit.dx {
		t.Fatal("the loaded exact index differs between embedding ahead and in Commit")
	}
}
