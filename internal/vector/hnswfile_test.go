package vector

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/hnsw-v2.golden")

// goldenGraph is the graph of testdata/hnsw-v1.golden (written by the
// version-1 encoder from these operations): 40 vectors, a zero vector and
// two deletes, so squeezing and the zero level are covered.
func goldenGraph(t *testing.T) *HNSW {
	t.Helper()
	g := mustHNSW(t, 8, HNSWOptions{M: 4, EfConstruction: 16})
	for i := 0; i < 40; i++ {
		v := make([]float32, 8)
		for j := range v {
			v[j] = float32((i*31+j*17)%23) - 11
		}
		if err := g.Add(fmt.Sprintf("c%07d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Add("zero", make([]float32, 8)); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{3, 17} {
		if err := g.Delete(fmt.Sprintf("c%07d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// TestHNSWFileGolden freezes the version-2 bytes, and checks that a
// version-1 file of the same operations decodes to the same graph.
func TestHNSWFileGolden(t *testing.T) {
	g := goldenGraph(t)
	got, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "hnsw-v2.golden")
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("version-2 encoding changed (%d bytes, golden %d); bump the version", len(got), len(want))
	}
	if len(got)%fileAlign != sha256Len%fileAlign {
		t.Fatalf("file of %d bytes: trailer not at a 64-byte boundary", len(got))
	}
	v1, err := os.ReadFile(filepath.Join("testdata", "hnsw-v1.golden"))
	if err != nil {
		t.Fatal(err)
	}
	old := mustHNSW(t, 8, HNSWOptions{})
	if err := old.UnmarshalBinary(v1); err != nil {
		t.Fatal(err)
	}
	conv, err := old.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(conv, want) {
		t.Fatal("a version-1 file re-encodes differently from the same operations' version-2 file")
	}
}

const sha256Len = 32

func writeGraphFile(t *testing.T, g *HNSW) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.WriteTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != n {
		t.Fatalf("WriteTo reported %d bytes, file has %v (%v)", n, fi, err)
	}
	return path
}

// TestOpenHNSWFile: a mapped graph answers exactly as the graph that wrote
// it, keeps building to the same bytes as one that never stopped, and
// never writes to its file.
func TestOpenHNSWFile(t *testing.T) {
	vs := clusteredData(21, 1500, 32, 10, 0.1)
	opts := HNSWOptions{M: 8, EfConstruction: 48, EfSearch: 40}
	a := mustHNSW(t, 32, opts)
	runOps(t, a, vs, 3, 0, 2000)
	path := writeGraphFile(t, a)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenHNSWFile(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if b.file == nil || b.nbase == 0 {
		t.Fatal("graph was decoded, not mapped")
	}
	if err := b.VerifyFile(); err != nil {
		t.Fatal(err)
	}
	if a.Len() != b.Len() || a.Digest() != b.Digest() {
		t.Fatalf("len %d/%d or digest differ", a.Len(), b.Len())
	}
	for i := 0; i < 50; i++ {
		q := vs[(i*37)%len(vs)]
		ha, err := a.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		hb, err := b.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ha) != fmt.Sprint(hb) {
			t.Fatalf("query %d: mapped graph answers %v, built graph %v", i, hb, ha)
		}
	}
	// Continue both (adds, replaces of mapped nodes, deletes): same bytes.
	runOps(t, a, vs, 3, 2000, 4000)
	runOps(t, b, vs, 3, 2000, 4000)
	ab, _ := a.MarshalBinary()
	bb, _ := b.MarshalBinary()
	if !bytes.Equal(ab, bb) {
		t.Fatal("continuing from the mapped file changed the graph")
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("changing the mapped graph wrote to its file")
	}
	if err := b.VerifyFile(); err != nil {
		t.Fatalf("VerifyFile after changes: %v", err)
	}
}

// TestOpenHNSWFileDamage: a flipped byte in any section is caught by
// VerifyFile (and by UnmarshalBinary); a wrong size or header by
// OpenHNSWFile itself.
func TestOpenHNSWFileDamage(t *testing.T) {
	g := mustHNSW(t, 16, HNSWOptions{M: 4, EfConstruction: 16})
	addAll(t, g, clusteredData(5, 300, 16, 5, 0.1))
	good, _ := g.MarshalBinary()
	lay := makeLayout(g.Len(), 16, 4, int(good[32])|int(good[33])<<8, int64(good[40])|int64(good[41])<<8|int64(good[42])<<16)
	for _, at := range []int64{lay.levels + 1, lay.vecs + 40, lay.l0 + 4, lay.uo + 8, lay.idOff + 16, lay.ids + 3, lay.sorted + 4, lay.trailer + 1} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x40
		path := filepath.Join(t.TempDir(), "graph.bin")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := OpenHNSWFile(path, HNSWOptions{})
		if err == nil {
			err = m.VerifyFile()
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", at, err)
		}
		if err := mustHNSW(t, 16, HNSWOptions{}).UnmarshalBinary(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: UnmarshalBinary %v", at, err)
		}
		// Resealed, only the structural checks stand between the flip
		// and the graph.
		if err := mustHNSW(t, 16, HNSWOptions{}).UnmarshalBinary(reseal(bad)); err == nil && at < lay.trailer {
			t.Logf("byte %d flipped and resealed still decodes", at)
		}
	}
	for _, bad := range [][]byte{good[:len(good)-1], append(append([]byte(nil), good...), 0), good[:10]} {
		path := filepath.Join(t.TempDir(), "graph.bin")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenHNSWFile(path, HNSWOptions{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d bytes: %v, want ErrCorrupt", len(bad), err)
		}
	}
}

// TestOpenHNSWFileV1: a version-1 file (an existing store's graph.bin)
// still opens.
func TestOpenHNSWFileV1(t *testing.T) {
	g, err := OpenHNSWFile(filepath.Join("testdata", "hnsw-v1.golden"), HNSWOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := goldenGraph(t)
	if g.Digest() != want.Digest() || g.Len() != want.Len() {
		t.Fatal("version-1 file opened to other content")
	}
}
