package vector

import (
	"math/rand"
	"reflect"
	"testing"
)

// ScanSearch returns exactly what an Exact index holding the same vectors
// returns (ids, order and score bits), zero vectors included.
func TestScanSearchMatchesExact(t *testing.T) {
	const dim, n = 48, 3000
	r := rand.New(rand.NewSource(3))
	x, _ := NewExact(dim)
	ids := make([]string, n)
	vecs := make([][]float32, n)
	for i := range vecs {
		v := make([]float32, dim)
		if i%97 != 0 { // some zero vectors
			for j := range v {
				v[j] = float32(r.NormFloat64())
			}
		}
		ids[i], vecs[i] = string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), v
		if err := x.Add(ids[i], v); err != nil {
			t.Fatal(err)
		}
	}
	for qi := 0; qi < 20; qi++ {
		q := make([]float32, dim)
		for j := range q {
			q[j] = float32(r.NormFloat64())
		}
		for _, k := range []int{1, 10, 50} {
			want, err := x.Search(q, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
				buf := make([]float32, dim)
				for i, v := range vecs {
					copy(buf, v)
					if err := fn(ids[i], buf, nil); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("query %d k %d: scan %v, exact %v", qi, k, got, want)
			}
		}
	}
}
