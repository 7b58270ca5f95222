package vector

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

type indexFactory func(t *testing.T, dim int) Index

var factories = map[string]indexFactory{
	"exact": func(t *testing.T, dim int) Index { return mustExact(t, dim) },
	"hnsw":  func(t *testing.T, dim int) Index { return mustHNSW(t, dim, HNSWOptions{M: 8, EfConstruction: 64}) },
}

func TestConformance(t *testing.T) {
	for _, name := range []string{"exact", "hnsw"} {
		t.Run(name, func(t *testing.T) { runConformance(t, factories[name]) })
	}
}

// runConformance checks the Index contract against one implementation,
// using a fresh Exact as the oracle where results must match.
func runConformance(t *testing.T, newIndex indexFactory) {
	const dim = 16
	vs := uniformData(7, 300, dim)

	t.Run("empty", func(t *testing.T) {
		idx := newIndex(t, dim)
		hits, err := idx.Search(vs[0], 5)
		if err != nil || len(hits) != 0 {
			t.Fatalf("search empty = %v, %v; want no hits, nil", hits, err)
		}
		if idx.Len() != 0 || idx.Dim() != dim {
			t.Fatalf("Len=%d Dim=%d", idx.Len(), idx.Dim())
		}
		if idx.Digest() != mustExact(t, dim).Digest() {
			t.Fatal("empty digest differs from Exact's")
		}
		if err := idx.Delete("nope"); err != nil {
			t.Fatalf("delete unknown = %v", err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		idx := newIndex(t, dim)
		addAll(t, idx, vs[:10])
		nan := append([]float32(nil), vs[0]...)
		nan[3] = float32(math.NaN())
		inf := append([]float32(nil), vs[0]...)
		inf[0] = float32(math.Inf(-1))
		cases := []struct {
			name string
			err  error
			want error
		}{
			{"add short", idx.Add("x", vs[0][:dim-1]), ErrDimension},
			{"add long", idx.Add("x", append(vs[0], 1)), ErrDimension},
			{"add nil", idx.Add("x", nil), ErrDimension},
			{"add NaN", idx.Add("x", nan), ErrInvalidVector},
			{"add Inf", idx.Add("x", inf), ErrInvalidVector},
			{"add empty id", idx.Add("", vs[0]), ErrInvalidID},
			{"search k=0", second(idx.Search(vs[0], 0)), ErrInvalidK},
			{"search k<0", second(idx.Search(vs[0], -3)), ErrInvalidK},
			{"search dim", second(idx.Search(vs[0][:3], 3)), ErrDimension},
			{"search NaN", second(idx.Search(nan, 3)), ErrInvalidVector},
			{"unmarshal nil", idx.UnmarshalBinary(nil), ErrCorrupt},
			{"unmarshal junk", idx.UnmarshalBinary([]byte("UCLVHNSWxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")), ErrCorrupt},
		}
		for _, c := range cases {
			if !errors.Is(c.err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, c.err, c.want)
			}
		}
		if idx.Len() != 10 {
			t.Fatalf("failed calls changed Len to %d", idx.Len())
		}
	})

	t.Run("add search replace delete", func(t *testing.T) {
		idx, ora := newIndex(t, dim), mustExact(t, dim)
		addAll(t, idx, vs[:100])
		addAll(t, ora, vs[:100])
		for i := 0; i < 100; i += 7 {
			hits, err := idx.Search(vs[i], 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 3 || hits[0].ID != idOf(i) || math.Abs(float64(hits[0].Score)-1) > 1e-5 {
				t.Fatalf("self search %d = %v", i, hits)
			}
			for j := 1; j < len(hits); j++ {
				if better(hits[j].Score, hits[j].ID, hits[j-1].Score, hits[j-1].ID) {
					t.Fatalf("hits out of order: %v", hits)
				}
			}
		}
		// Replace c0000005 with vs[200]: searching vs[200] finds it.
		for _, x := range []Index{idx, ora} {
			if err := x.Add(idOf(5), vs[200]); err != nil {
				t.Fatal(err)
			}
		}
		hits, _ := idx.Search(vs[200], 1)
		if idx.Len() != 100 || len(hits) != 1 || hits[0].ID != idOf(5) {
			t.Fatalf("after replace: Len=%d hits=%v", idx.Len(), hits)
		}
		for _, x := range []Index{idx, ora} {
			for i := 0; i < 100; i += 3 {
				if err := x.Delete(idOf(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if idx.Len() != ora.Len() || idx.Digest() != ora.Digest() {
			t.Fatalf("after deletes: Len %d vs %d, digests differ=%v", idx.Len(), ora.Len(), idx.Digest() != ora.Digest())
		}
		all, err := idx.Search(vs[1], 1000)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ora.Search(vs[1], 1000)
		if len(all) != len(want) {
			t.Fatalf("k>Len returned %d hits, want %d", len(all), len(want))
		}
		for i := range all {
			if all[i] != want[i] {
				t.Fatalf("full search differs from exact at %d: %v vs %v", i, all[i], want[i])
			}
		}
	})

	t.Run("zero vectors and ties", func(t *testing.T) {
		idx := newIndex(t, dim)
		if err := idx.Add("zero", make([]float32, dim)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"b", "c", "a"} {
			if err := idx.Add(id, vs[0]); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Add("far", vs[1]); err != nil {
			t.Fatal(err)
		}
		if idx.Len() != 5 {
			t.Fatalf("Len = %d, want 5 (zero vector counts)", idx.Len())
		}
		hits, err := idx.Search(vs[0], 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		if len(ids) != 4 || ids[0] != "a" || ids[1] != "b" || ids[2] != "c" || ids[3] != "far" {
			t.Fatalf("ids = %v, want [a b c far] (ties by id, zero never a hit)", ids)
		}
		if hits, err := idx.Search(make([]float32, dim), 3); err != nil || len(hits) != 0 {
			t.Fatalf("zero query = %v, %v", hits, err)
		}
	})

	t.Run("marshal round trip", func(t *testing.T) {
		idx := newIndex(t, dim)
		addAll(t, idx, vs[:150])
		for i := 0; i < 150; i += 4 {
			if err := idx.Delete(idOf(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Add("zero", make([]float32, dim)); err != nil {
			t.Fatal(err)
		}
		data, err := idx.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		back := newIndex(t, dim)
		if err := back.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		again, _ := back.MarshalBinary()
		if !bytes.Equal(data, again) || back.Digest() != idx.Digest() || back.Len() != idx.Len() {
			t.Fatal("round trip changed the index")
		}
		for i := 0; i < 150; i += 11 {
			a, _ := idx.Search(vs[i], 5)
			b, _ := back.Search(vs[i], 5)
			if len(a) != len(b) {
				t.Fatalf("search after round trip: %v vs %v", a, b)
			}
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("search after round trip: %v vs %v", a, b)
				}
			}
		}
		// Every single-byte flip is rejected and leaves the index intact.
		r := rand.New(rand.NewPCG(1, 1))
		for n := 0; n < 200; n++ {
			bad := append([]byte(nil), data...)
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			if err := back.UnmarshalBinary(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flipped byte: err = %v", err)
			}
			if err := back.UnmarshalBinary(bad[:r.IntN(len(bad))]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("truncated: err = %v", err)
			}
		}
		if back.Digest() != idx.Digest() {
			t.Fatal("failed unmarshal changed the index")
		}
	})

	t.Run("random ops match exact", func(t *testing.T) {
		idx, ora := newIndex(t, dim), mustExact(t, dim)
		r := rand.New(rand.NewPCG(99, 0))
		for op := 0; op < 2000; op++ {
			id := idOf(r.IntN(200))
			if r.IntN(4) == 0 {
				for _, x := range []Index{idx, ora} {
					if err := x.Delete(id); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			v := vs[r.IntN(len(vs))]
			for _, x := range []Index{idx, ora} {
				if err := x.Add(id, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		if idx.Len() != ora.Len() || idx.Digest() != ora.Digest() {
			t.Fatalf("Len %d vs %d; digest equal=%v", idx.Len(), ora.Len(), idx.Digest() == ora.Digest())
		}
		if rc := recall(t, ora, idx, vs[:100], 10); rc < 0.95 {
			t.Fatalf("recall@10 after random ops = %.3f", rc)
		}
	})
}

func second[T any](_ T, err error) error { return err }

func TestLoad(t *testing.T) {
	vs := uniformData(2, 50, 8)
	for _, name := range []string{"exact", "hnsw"} {
		idx := factories[name](t, 8)
		addAll(t, idx, vs)
		data, _ := idx.MarshalBinary()
		back, err := Load(data, HNSWOptions{EfSearch: 40})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, _ := back.MarshalBinary()
		if !bytes.Equal(data, again) || back.Dim() != 8 || back.Len() != 50 {
			t.Fatalf("%s: Load did not reproduce the index", name)
		}
	}
	if _, err := Load([]byte("nonsense"), HNSWOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load(nonsense) = %v", err)
	}
}
