package vector

import (
	"sync"
	"testing"
)

// TestConcurrentUse runs searches alongside adds and deletes (meant for
// -race): results must stay well-formed and the final content must match a
// sequentially built Exact.
func TestConcurrentUse(t *testing.T) {
	const dim = 16
	vs := uniformData(12, 600, dim)
	for _, name := range []string{"exact", "hnsw"} {
		t.Run(name, func(t *testing.T) {
			idx := factories[name](t, dim)
			addAll(t, idx, vs[:200])
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < 200; i++ {
						hits, err := idx.Search(vs[(i*7+w)%len(vs)], 5)
						if err != nil || len(hits) > 5 {
							errs <- err
							return
						}
						_ = idx.Len()
						_ = idx.Digest()
					}
				}(w)
			}
			for i := 200; i < 600; i++ {
				if err := idx.Add(idOf(i), vs[i]); err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 {
					if err := idx.Delete(idOf(i - 100)); err != nil {
						t.Fatal(err)
					}
				}
				if i%50 == 0 {
					if _, err := idx.MarshalBinary(); err != nil {
						t.Fatal(err)
					}
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("concurrent search: %v", err)
			}
			ora := mustExact(t, dim)
			addAll(t, ora, vs)
			for i := 200; i < 600; i++ {
				if i%3 == 0 {
					_ = ora.Delete(idOf(i - 100))
				}
			}
			if ora.Digest() != idx.Digest() {
				t.Fatal("content after concurrent use differs from sequential build")
			}
		})
	}
}
